DEFAULT_PLUGINS_GROUP = "vllm.general_plugins"
STAT_LOGGER_PLUGINS_GROUP = "vllm.stat_logger_plugins"

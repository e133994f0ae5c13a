DEFAULT_PLUGINS_GROUP = 'vllm.general_plugins'

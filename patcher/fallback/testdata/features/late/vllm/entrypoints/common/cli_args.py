@config
class FrontendArgs(BaseFrontendArgs):
    enable_prompt_tokens_details: bool = False
    """If set to True, enable prompt_tokens_details in usage."""
    enable_per_request_metrics: bool = False
    enable_force_include_usage: bool = False
    middleware: list[str] = field(default_factory=lambda: [])

@config
@dataclass
class FrontendArgs:
    """Arguments for the OpenAI-compatible frontend server."""
    middleware: list[str] = field(default_factory=lambda: [])
    enable_prompt_tokens_details: bool = False
    enable_force_include_usage: bool = False

"""The environment variables each provider's official SDK reads its API key from.

A plain table that imports nothing, so code that only needs the variable names (the CLI scrubbing
its output of key values) does not load the configuration model; config.py resolves keys with it.
"""

STANDARD_KEY_ENV: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "openai_responses": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "ollama": ("OLLAMA_API_KEY",),
    "openai_compatible": ("OPENAI_COMPATIBLE_API_KEY",),
    "bedrock": ("AWS_BEARER_TOKEN_BEDROCK",),
    "azure": ("AZURE_OPENAI_API_KEY",),
    "azure_responses": ("AZURE_OPENAI_API_KEY",),
    "vertex": (),
    "vertex_anthropic": (),
}

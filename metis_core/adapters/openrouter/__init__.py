"""OpenRouter (`https://openrouter.ai/api/v1`): OpenAI-compatible chat plus reasoning and routing.

Built on adapters/openai_chat by subclassing; only what OpenRouter adds lives here: reasoning and
reasoning_details, in-stream errors, provider routing options and the cost fields it reports.
"""

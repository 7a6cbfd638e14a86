"""Any OpenAI-compatible chat server (vLLM, llama.cpp, LM Studio, Groq, Mistral, DeepSeek) by base URL.

Reuses adapters/openai_chat; the servers' differences are capability quirk flags from the model
registry or the user's config (docs/adapters/openai_compatible.md), not code paths per vendor.
"""

"""OpenAI Chat Completions (`POST /chat/completions`): canonical messages ⇄ the chat wire format.

The modules here are also the base of every OpenAI-compatible dialect (openrouter/,
openai_compatible/), which subclass the builder, reader, translator and adapter instead of copying.
"""

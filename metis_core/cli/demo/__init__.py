"""`metis demo`: the real stack driven offline by a scripted model on a local HTTP server.

The server speaks Anthropic Messages SSE and OpenAI Chat Completions SSE exactly as those APIs
frame them, and checks every request it receives (400 otherwise). Only the model is scripted:
adapters, routing, tools, storage, trace and pricing are the ones `metis chat` uses.
"""

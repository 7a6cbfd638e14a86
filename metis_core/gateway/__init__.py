"""The gateway: OpenAI- and Anthropic-compatible endpoints in front of every provider metis knows.

An edge beside `cli/`: it reads inbound bodies with the adapters' request readers, routes, calls
upstream through ModelClient, writes the answer back in the inbound shape, and keeps keys, quotas
and the record. Nothing below it imports it. Needs the `gateway` extra (Starlette, uvicorn).
"""

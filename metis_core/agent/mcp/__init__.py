"""MCP servers as tool sources: each configured server's tools join the session's tools.

The SDK is imported only when a server is configured (`pip install 'metis-core[mcp]'`).
"""

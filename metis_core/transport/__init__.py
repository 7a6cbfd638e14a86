"""HTTP transport and stream framing (SSE, NDJSON). Knows bytes and HTTP, never canonical messages."""

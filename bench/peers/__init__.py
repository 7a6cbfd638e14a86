"""One module per implementation under test: metis-core, the raw-httpx floor and each peer library."""

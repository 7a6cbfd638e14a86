"""The benchmark cases, one family of rows per module; each exposes `run(ctx) -> list[Figure]`."""

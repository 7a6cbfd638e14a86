"""Test support shipped with metis-core for users' own test suites (the pytest cassette plugin)."""

"""The `metis` command line: chat, one-shot runs, sessions, trace, admin, models, costs, demo.

This package is the edge of metis-core: it imports the agent layer, the stores and the trace,
and nothing imports it. It renders with rich and parses with typer; the loop itself runs
without a terminal, so everything here is presentation, prompting and exit codes.
"""

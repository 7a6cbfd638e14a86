"""The metis-core benchmark suite: our code and the libraries a user would pick instead, side by side.

Run it with `make bench` (or `.venv/bin/python -m bench [--quick] [--only stream,translate]`). It
builds its own environment in bench/.venv, starts a local server that answers in each provider's
wire format, and never calls a real provider. See docs/performance.md for the method and figures.
"""

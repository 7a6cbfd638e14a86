"""`metis serve`: live event streams, a JSON API, chat over HTTP and a web view, in one ASGI app.

An edge beside `cli/`: it reads the stores and the bus and runs turns through the agent; nothing
below imports it. `build_app(runtime)` is the entry point; `docs/serve.md` explains the design.
"""

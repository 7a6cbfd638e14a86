"""The demo tour: a session on Anthropic that reads a file, a swap to OpenAI, the trace, the costs.

It starts the scripted server, builds a Runtime whose configuration points both providers at it
(with placeholder keys), and drives the same turn machinery `metis chat` uses, printing each step
and saying plainly that the model is scripted. Its METIS_HOME and workspace are temporary and
removed afterwards, unless `keep` is set: then the session is stored in the real METIS_HOME.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from metis_core.agent.runtime import Runtime
from metis_core.agent.session import Session
from metis_core.cli.demo.scripted_model import DEMO_FILE
from metis_core.cli.demo.server import DemoServer
from metis_core.cli.output import Terminal
from metis_core.cli.render import StreamPrinter, shown_tools, turn_summary
from metis_core.cli.runtime_setup import CLI_ASYNC_HTTP
from metis_core.cli.spend import Answer, model_calls, spend_by, total
from metis_core.cli.tables import spend_table
from metis_core.cli.trace_view import trace_tree
from metis_core.cli.turn_execution import execute_turn
from metis_core.config import load_config, metis_home
from metis_core.errors import InvalidRequestError

START_MODEL = "anthropic:claude-sonnet-4-6"
SWAP_MODEL = "openai:gpt-4o"
PLACEHOLDER_KEY = "demo-placeholder-key"
FIRST_QUESTION = f"What does {DEMO_FILE} in this workspace say?"
SECOND_QUESTION = "Recap this conversation so far, please."
README_TEXT = """# Metis demo workspace

This file was written by `metis demo` so the scripted model has something real to read.
The read_file tool opened it from a temporary workspace, and could not have left it.
After the swap, the OpenAI-format model sees the whole history, tool call included.
"""


class Tour:
    def __init__(self, terminal: Terminal, server: DemoServer, home: Path, workspace: Path) -> None:
        self.terminal = terminal
        self.server = server
        self.workspace = workspace
        environ = {
            "METIS_ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
            "METIS_OPENAI_BASE_URL": f"{server.base_url}/v1", "OPENAI_API_KEY": PLACEHOLDER_KEY,
        }  # fmt: skip
        config = load_config(home, environ=environ)
        self.runtime = Runtime(home=home, config=config, approve_everything=True, async_http=CLI_ASYNC_HTTP)
        self.printer = StreamPrinter(terminal.out)
        self.runtime.tools = shown_tools(self.runtime.tools, self.printer)

    def step(self, number: int, title: str) -> None:
        self.terminal.out.print(f"\n[{number}/4] {title}", style="bold cyan", markup=False)

    def say(self, runner: asyncio.Runner, session: Session, text: str) -> None:
        self.terminal.out.print(f"you> {text}", style="bold", markup=False)
        started = time.perf_counter()
        result, _ = execute_turn(runner, self.runtime, session, text, on_stream=self.printer)
        self.printer.finish()
        if result is None or result.cancelled:
            raise KeyboardInterrupt
        if result.error:
            raise InvalidRequestError(f"the demo turn failed: {result.error}", provider="demo")
        self.terminal.out.print(turn_summary(result, time.perf_counter() - started), style="dim", markup=False)

    def run(self) -> str:
        out, runtime = self.terminal.out, self.runtime
        out.print("metis demo: a tour of the real stack, offline", style="bold", markup=False)
        out.print(f"The model is SCRIPTED: a local server on {self.server.base_url} answers in Anthropic's and "
                  "OpenAI's exact wire formats and rejects any malformed request with HTTP 400. Adapters, "
                  "routing, tools, storage, trace and pricing are the real ones.", markup=False)
        out.print(f"workspace {self.workspace} (README.md written there) · METIS_HOME {runtime.home}",
                  style="dim", markup=False)
        session = runtime.sessions.create(self.workspace, model=START_MODEL, title="metis demo")
        with asyncio.Runner() as runner:
            self.step(1, f"a session on {START_MODEL}; tool calls are auto-approved in the demo")
            self.say(runner, session, FIRST_QUESTION)
            self.step(2, f"/model {SWAP_MODEL}: same session, history carried over")
            runtime.sessions.swap_model(session, SWAP_MODEL)
            out.print(f"model: {SWAP_MODEL} · {len(session.history)} messages carried over", markup=False)
            self.say(runner, session, SECOND_QUESTION)
        runtime.sessions.end(session, "completed")
        runtime.bus.flush()
        runtime.trace.flush()
        self.step(3, "the trace: every step, linked to what caused it")
        out.print(trace_tree(session.id, runtime.trace.replay(session.id)), soft_wrap=False)
        self.step(4, "the costs, priced from the real price table")
        calls = model_calls(runtime.store.load_messages(session.id))
        rows = spend_by([Answer.of(m) for m in calls], lambda a: a.model or "?")
        out.print(spend_table("cost per model", "model", rows, total(rows)), soft_wrap=False)
        versions = sorted({m.metadata.usage.pricing_version for m in calls
                           if m.metadata.usage and m.metadata.usage.pricing_version})
        out.print(f"pricing version {', '.join(v for v in versions if v) or '-'} · no money was spent: the "
                  "model was scripted", style="dim", markup=False)
        served = self.server.served
        rejected = [s for s in served if s.status != 200]
        out.print(f"The scripted server checked {len(served)} requests: "
                  f"{'all well-formed' if not rejected else f'{len(rejected)} rejected'}.", markup=False)
        if rejected:
            raise InvalidRequestError("; ".join(p for s in rejected for p in s.problems), provider="demo")
        return session.id


def run_demo(terminal: Terminal, *, keep: bool = False) -> str:
    """Run the tour; returns the demo session's id."""
    scratch = Path(tempfile.mkdtemp(prefix="metis-demo-"))
    home = metis_home() if keep else scratch / "home"
    workspace = scratch / "workspace"
    workspace.mkdir()
    (workspace / DEMO_FILE).write_text(README_TEXT, encoding="utf-8")
    try:
        with DemoServer() as server:
            tour = Tour(terminal, server, home, workspace)
            try:
                session_id = tour.run()
            finally:
                tour.runtime.close()
        if keep:
            terminal.out.print(f"\nkept: session {session_id} in {home} (metis sessions show {session_id}); "
                               f"workspace {workspace}", markup=False)
        return session_id
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)

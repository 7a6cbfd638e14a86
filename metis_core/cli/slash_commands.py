"""The chat's slash commands: /model /cost /tools /trace /sessions /resume /attach /save /compact /pin /help /exit.

Each command reads or changes the chat's session through the library (swap_model, the stores,
the trace) and prints the outcome; a refusal is one red line and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from metis_core.agent.recording import TurnRecorder
from metis_core.agent.turn import dismiss_suggestion
from metis_core.cli.memory_command import memory_command
from metis_core.cli.render import cost_text, format_usd
from metis_core.cli.route_prompt import describe
from metis_core.cli.tables import sessions_table, tools_table
from metis_core.cli.trace_view import trace_tree
from metis_core.cli.turn_execution import image_attachment
from metis_core.errors import MetisError
from metis_core.messages import Role

if TYPE_CHECKING:
    from metis_core.cli.chat import ChatLoop

HELP = [
    ("/model [MODEL]", "show the session's model, or switch to MODEL (id, alias or chain); history carries over"),
    ("@MODEL message", "send one message to MODEL without switching"),
    ("/cost", "what this session has cost so far"),
    ("/tools", "the tools the model may call, and which ask first"),
    ("/trace", "this session's causal trace as a tree"),
    ("/sessions", "recent sessions"),
    ("/resume ID", "continue another session (this one is saved)"),
    ("/attach PATH", "attach an image to your next message"),
    ("/memory", "MEMORY.md and USER.md; /memory add [user] TEXT, /memory remove [user] N"),
    ("/good, /bad [TEXT]", "rate the last answer (add --session to rate the whole session)"),
    ("/route override|ignore", "about a pattern suggestion a rule outranked: use it, or dismiss it"),
    ("/save [PATH]", "write the last answer to PATH (default answer-<time>.md in the workspace)"),
    ("/compact", "summarise the older turns now (the stored messages stay; see docs/context.md)"),
    ("/pin", "keep your last message verbatim through every compaction of this chat"),
    ("!multi … !end", "a message of several lines (a pasted block, or a line ending in \\, also works)"),
    ("!edit", "write the message in $EDITOR"),
    ("/help", "this list"),
    ("/exit", "save the session and leave (Ctrl-D does the same)"),
]


class SlashCommands:
    def __init__(self, chat: ChatLoop) -> None:
        self.chat = chat
        self.table: dict[str, Callable[[str], bool]] = {
            "/model": self.model, "/cost": self.cost, "/tools": self.tools, "/trace": self.trace,
            "/sessions": self.sessions, "/resume": self.resume, "/attach": self.attach, "/save": self.save,
            "/help": self.help, "/exit": self.exit, "/quit": self.exit, "/good": self.good, "/bad": self.bad,
            "/route": self.route, "/compact": self.compact, "/pin": self.pin,
            "/memory": lambda argument: memory_command(self.chat, argument),
        }  # fmt: skip

    def handle(self, line: str) -> bool:
        """Run one command line; False means leave the chat."""
        name, _, argument = line.partition(" ")
        command = self.table.get(name.lower())
        if command is None:
            self.chat.terminal.fail(f"unknown command {name}; /help lists the commands")
            return True
        try:
            return command(argument.strip())
        except MetisError as error:
            self.chat.terminal.fail(str(error))
            return True

    @property
    def out(self) -> Console:
        return self.chat.terminal.out

    def model(self, argument: str) -> bool:
        chat = self.chat
        if not argument:
            self.out.print(f"model: {chat.model_label()}", markup=False)
            return True
        before = chat.model_label()
        try:
            chat.runtime.sessions.swap_model(chat.session, argument)
        except MetisError as error:
            chat.terminal.fail(f"refused: {error}")
            self.out.print(f"model unchanged: {before}", markup=False)
            return True
        self.out.print(f"model: {argument} · {len(chat.session.history)} messages carried over", markup=False)
        return True

    def cost(self, argument: str) -> bool:
        chat = self.chat
        totals = chat.runtime.store.session_totals(chat.session.id)
        self.out.print(
            f"this session: {cost_text(totals.cost_usd, totals.unpriced_message_count)} · "
            f"{totals.model_calls} model "
            f"calls · {totals.input_tokens} in / {totals.output_tokens} out tokens · models: "
            f"{', '.join(totals.models) or '-'}", markup=False)
        workers = chat.runtime.store.worker_sessions(chat.session.id)
        if workers:
            spent = sum((w.total_cost_usd for w in workers), Decimal(0))
            self.out.print(f"delegated: {format_usd(spent)} in {len(workers)} worker session(s) · with workers: "
                           f"{format_usd(totals.cost_usd + spent)}", markup=False)
        return True

    def tools(self, argument: str) -> bool:
        registry = self.chat.session.tools or self.chat.runtime.tools
        self.out.print(tools_table(registry, self.chat.session.confirmation), soft_wrap=False)
        return True

    def trace(self, argument: str) -> bool:
        runtime = self.chat.runtime
        runtime.bus.flush()
        runtime.trace.flush()
        self.out.print(trace_tree(self.chat.session.id, runtime.trace.replay(self.chat.session.id),
                                  runtime.trace.replay), soft_wrap=False)
        return True

    def sessions(self, argument: str) -> bool:
        store = self.chat.runtime.store
        records = store.list_sessions(20)
        self.out.print(sessions_table(records, store.answering_models([r.id for r in records])), soft_wrap=False)
        return True

    def resume(self, argument: str) -> bool:
        if not argument:
            self.chat.terminal.fail("which session? /resume ID (/sessions lists them)")
            return True
        self.chat.switch_to(argument)
        session = self.chat.session
        self.out.print(f"resumed session {session.id}: {len(session.history)} messages · model "
                       f"{self.chat.model_label()}", markup=False)
        return True

    def attach(self, argument: str) -> bool:
        if not argument:
            self.chat.terminal.fail("which file? /attach PATH")
            return True
        path = Path(argument).expanduser()
        if not path.is_absolute():
            path = self.chat.session.workspace / path
        self.chat.pending_attachments.append(image_attachment(path, self.chat.session.workspace))
        self.out.print(f"attached {argument} to your next message", markup=False)
        return True

    def good(self, argument: str) -> bool:
        return self._rate("thumbs_up", argument)

    def bad(self, argument: str) -> bool:
        return self._rate("thumbs_down", argument)

    def _rate(self, rating: str, argument: str) -> bool:
        learning = self.chat.runtime.learning
        if learning is None:
            self.chat.terminal.fail("learning is off (config.yaml learning.enabled); feedback is not recorded")
            return True
        words = argument.split()
        whole = "--session" in words
        comment = " ".join(w for w in words if w != "--session") or None
        learning.feedback.rate(self.chat.session.id, rating, scope="session" if whole else "turn", comment=comment)
        what = "this session" if whole else "the last answer"
        self.out.print(f"noted: {'👍' if rating == 'thumbs_up' else '👎'} for {what}", markup=False)
        return True

    def route(self, argument: str) -> bool:
        result = self.chat.last_result
        suggestion = result.suggestion if result is not None else None
        action = argument.strip().lower()
        if suggestion is None or result is None:
            self.out.print("no pattern suggestion is waiting (one is offered when a rule outranks the pattern "
                           "store, before the answer)", markup=False)
            return True
        if action == "ignore":
            runtime = self.chat.runtime
            recorder = TurnRecorder(runtime.bus, self.chat.session.id, suggestion.turn_id)
            dismiss_suggestion(recorder, suggestion, result.route_decided_id)
            result.suggestion = None
            self.out.print("suggestion dismissed", markup=False)
        elif action == "override":
            self.chat.terminal.fail("that turn has finished; /route override applies when the suggestion is offered "
                                    "before the answer (at the route> question)")
        else:
            self.out.print(describe(suggestion), markup=False)
        return True

    def save(self, argument: str) -> bool:
        session = self.chat.session
        answer = next((m.text() for m in reversed(session.history) if m.role is Role.ASSISTANT and m.text()), "")
        if not answer:
            self.chat.terminal.fail("no answer to save yet")
            return True
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        path = Path(argument).expanduser() if argument else Path(f"answer-{stamp}.md")
        if not path.is_absolute():
            path = session.workspace / path
        if path.exists():
            self.chat.terminal.fail(f"{path} exists; /save another name")
            return True
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(answer if answer.endswith("\n") else answer + "\n", encoding="utf-8")
        self.out.print(f"saved the last answer ({len(answer)} characters) to {path}", markup=False)
        return True

    def compact(self, argument: str) -> bool:
        chat = self.chat
        prepared = chat.runner.run(chat.runtime.compactor.compact_now(chat.session))
        event = prepared.compacted
        if event is None:
            self.out.print("nothing to compact: the conversation is no longer than the turns kept verbatim",
                           markup=False)
            return True
        payload = event.payload
        self.out.print(f"compacted: ~{payload['tokens_before']:,} -> ~{payload['tokens_after']:,} tokens · "
                       f"{payload['messages_summarised']} messages summarised by {payload['model']} · "
                       f"{format_usd(Decimal(str(payload['cost_usd'])))}", markup=False)
        return True

    def pin(self, argument: str) -> bool:
        session = self.chat.session
        last = next((m for m in reversed(session.history) if m.role is Role.USER), None)
        if last is None:
            self.chat.terminal.fail("nothing to pin yet: send a message first")
            return True
        session.pin(last.id)
        self.out.print(f"pinned: {last.text()[:60]!r} stays verbatim through compaction", markup=False)
        return True

    def help(self, argument: str) -> bool:
        for usage, what in HELP:
            self.out.print(f"  {usage:<18} {what}", markup=False)
        return True

    def exit(self, argument: str) -> bool:
        return False

"""Spend figures summed from stored assistant messages: per session, per model, per day.

Messages are the source (they are never pruned, unlike the trace), and each carries its own
priced usage and the model calls it stands for (messages/call_spend.py: a structured run's attempts
are summed on its one message). An unpriced call counts its tokens and is flagged, never priced as zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from metis_core.messages import Message, Role
from metis_core.messages.call_spend import calls_of
from metis_core.store.sessions import SessionStore


@dataclass
class SpendRow:
    key: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = field(default_factory=lambda: Decimal(0))
    unpriced_calls: int = 0

    def add(self, message: Message) -> None:
        usage = message.metadata.usage
        calls, unpriced = calls_of(message)
        self.calls += calls
        self.unpriced_calls += unpriced
        if usage is None:
            return
        self.input_tokens += usage.total_input_tokens
        self.output_tokens += usage.output_tokens
        if usage.cost_usd is not None:
            self.cost_usd += usage.cost_usd

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "calls": self.calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_usd": format(self.cost_usd, "f"),
                "unpriced_calls": self.unpriced_calls}


def model_calls(messages: Iterable[Message]) -> list[Message]:
    """Assistant messages that came from a completed model call: the ones that carry usage, as each
    llm.call_completed does. A partial answer cut short (a cancel, a broken stream) has no usage: its
    call is on the turn's record (turn.cancelled, llm.call_failed) but nothing was charged for it.

    Copies made by `sessions import --as-new` (metadata `copied_from`) are left out: their calls
    were paid for once, by the original. So are assistant messages a gateway client sent as its
    history (`from_client`): they were no call of ours.
    """
    return [m for m in messages if m.role is Role.ASSISTANT and m.metadata.usage is not None
            and not is_copy(m) and not (m.metadata.model_extra or {}).get("from_client")]


def is_copy(message: Message) -> bool:
    return bool((message.metadata.model_extra or {}).get("copied_from"))


def extra_field(message: Message, name: str) -> str:
    """A metadata field newer writers add (e.g. the gateway's `gateway_key_id`), or "-"."""
    value = (message.metadata.model_extra or {}).get(name)
    return str(value) if value else "-"


def spend_by(messages: Iterable[Message], key: Callable[[Message], str]) -> list[SpendRow]:
    rows: dict[str, SpendRow] = {}
    for message in messages:
        name = key(message)
        rows.setdefault(name, SpendRow(name)).add(message)
    return sorted(rows.values(), key=lambda r: r.key)


def total(rows: Iterable[SpendRow]) -> SpendRow:
    whole = SpendRow("total")
    for row in rows:
        whole.calls += row.calls
        whole.input_tokens += row.input_tokens
        whole.output_tokens += row.output_tokens
        whole.cost_usd += row.cost_usd
        whole.unpriced_calls += row.unpriced_calls
    return whole


def stored_calls(store: SessionStore, *, session_id: str | None = None, since: datetime | None = None) -> list[Message]:
    """Model calls of one session, or of every session, made at or after `since`."""
    return model_calls(store.answers(session_id=session_id, since=since))

"""Spend figures summed from stored assistant messages: per session, per model, per day.

Messages are the source (they are never pruned, unlike the trace), and each carries its own
priced usage and the model calls it stands for (messages/call_spend.py: a structured run's attempts
are summed on its one message). An unpriced call counts its tokens and is flagged, never priced as zero.
Sums are made from each message's metadata in its JSON form (`Answer`): `metis cost` reads it from
the stored rows without building a `Message`; a loaded `Message` gives the same form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from metis_core.messages.call_spend import AnswerSpend

if TYPE_CHECKING:  # the message model (pydantic) loads where messages are; `metis cost` reads rows
    from metis_core.messages import Message
    from metis_core.store.sessions import SessionStore


@dataclass(frozen=True)
class Answer:
    """A stored assistant message as spend is grouped and summed: its session, when it was made, its
    metadata in the JSON form it is stored in (declared fields and extra ones such as `gateway_key_id`)
    and what it adds to a total (read from that metadata once, whatever the groupings)."""

    session_id: str
    created_at: datetime
    metadata: Mapping[str, Any]
    spend: AnswerSpend

    @classmethod
    def read(cls, session_id: str, created_at: datetime, metadata: Mapping[str, Any]) -> Answer:
        return cls(session_id, created_at, metadata, AnswerSpend.of_metadata(metadata))

    @classmethod
    def of(cls, message: Message) -> Answer:
        return cls.read(message.session_id, message.created_at, message.metadata.model_dump(mode="json"))

    @property
    def model(self) -> str | None:
        return self.metadata.get("model")

    def field(self, name: str) -> str:
        """A metadata field as text (`user_id`, or a newer writer's `gateway_key_id`), or "-"."""
        value = self.metadata.get(name)
        return str(value) if value else "-"


@dataclass
class SpendRow:
    key: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = field(default_factory=lambda: Decimal(0))
    unpriced_calls: int = 0

    def add(self, answer: Answer) -> None:
        spend = answer.spend
        self.calls += spend.calls
        self.unpriced_calls += spend.unpriced_calls
        self.input_tokens += spend.input_tokens
        self.output_tokens += spend.output_tokens
        self.cost_usd += spend.cost_usd

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "calls": self.calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_usd": format(self.cost_usd, "f"),
                "unpriced_calls": self.unpriced_calls}


def is_model_call(metadata: Mapping[str, Any]) -> bool:
    """Whether an assistant message (by its metadata in JSON form) came from a completed model call: it
    carries usage, as each llm.call_completed does. A partial answer cut short (a cancel, a broken
    stream) has no usage: its call is on the turn's record (turn.cancelled, llm.call_failed) but
    nothing was charged for it.

    Copies made by `sessions import --as-new` (metadata `copied_from`) are left out: their calls
    were paid for once, by the original. So are assistant messages a gateway client sent as its
    history (`from_client`): they were no call of ours.
    """
    return metadata.get("usage") is not None and not metadata.get("copied_from") and not metadata.get("from_client")


def model_calls(messages: Iterable[Message]) -> list[Message]:
    """The messages among `messages` that are model calls (`is_model_call`), as loaded messages."""
    from metis_core.messages import Role

    return [m for m in messages if m.role is Role.ASSISTANT and is_model_call(m.metadata.model_dump(mode="json"))]


def spend_by(answers: Iterable[Answer], key: Callable[[Answer], str]) -> list[SpendRow]:
    rows: dict[str, SpendRow] = {}
    for answer in answers:
        name = key(answer)
        rows.setdefault(name, SpendRow(name)).add(answer)
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


def stored_answers(store: SessionStore, *, session_id: str | None = None,
                   since: datetime | None = None) -> list[Answer]:
    """Model calls of one session, or of every session, made at or after `since`, read from the rows."""
    rows = store.answer_metadata(session_id=session_id, since=since)
    return [Answer.read(*row) for row in rows if is_model_call(row[2])]


def stored_calls(store: SessionStore, *, session_id: str | None = None, since: datetime | None = None) -> list[Message]:
    """The same model calls as loaded messages (to price them again: `metis cost --reprice`)."""
    return model_calls(store.answers(session_id=session_id, since=since))

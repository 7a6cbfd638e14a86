"""The record of one gateway call: a session turn with its events, messages and charge.

turn.started -> llm.call_started (-> llm.call_failed per failed member) -> llm.call_completed
(carrying gateway_key_id, inbound_shape, user_id, team_id) -> turn.completed, or turn.cancelled
when the client went away. Emitting the events and staging the session, its messages and the
answer happen in order on the gateway's one record writer (record_writer.py, many calls per
transaction), so none of it is on the answer's path (an event's id and time are those of its
emission there, up to ~25 ms after the fact).
"""

from __future__ import annotations

import logging
import time
import types
import typing
from collections import deque
from collections.abc import Callable
from decimal import Decimal
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from metis_core.agent.recording import TurnRecorder
from metis_core.agent.redaction import redact
from metis_core.agent.request_options import PLAIN_FIELDS, request_options_record
from metis_core.agent.structured_turn import output_step_event
from metis_core.agent.turn import completed_payload
from metis_core.errors import MetisError
from metis_core.events.envelope import Actor, Event
from metis_core.events.payloads.llm import RequestOptions
from metis_core.events.trusted_event import trusted_dump
from metis_core.hashing import sha256_hex
from metis_core.ids import new_ulid
from metis_core.messages import (
    ImageBlock,
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    TextBlock,
    ToolUseBlock,
    Usage,
)
from metis_core.store.records import now_us
from metis_core.store.sessions import StoredConversation

if TYPE_CHECKING:
    from metis_core.adapters.base import AdapterOptions
    from metis_core.agent.runtime import Runtime
    from metis_core.gateway.record_writer import RecordWriter
    from metis_core.gateway.shapes.base import InboundRequest, StreamWriter
    from metis_core.store.gateway_keys import GatewayKeyRecord
    from metis_core.structured.steps import OutputStep

log = logging.getLogger("metis_core.gateway")
FROM_CLIENT = "from_client"
"""Metadata flag on assistant messages that came in a request's history (`metis cost` skips them)."""
_TURN_STOPS = {"end_turn", "max_tokens", "stop_sequence", "tool_use", "error"}
_STAMPED = ("user_id", "team_id", "gateway_key_id", "inbound_shape")


class CallRecord:
    """Events and persistence of one call; also the fallback chain's observer."""

    def __init__(
        self, runtime: Runtime, writer: RecordWriter, key: GatewayKeyRecord, shape: str, session_id: str,
        request: InboundRequest, asked_model: str,
    ) -> None:
        self.rt = runtime
        self.writer = writer
        self.key = key
        self.shape = shape
        self.session_id = session_id
        self.request = request
        self._asked: dict[str, Any] | None = None
        """This call's request_options as dumped (`asked_options_dump`; shared with alike calls: never mutate)."""
        self.asked_model = asked_model
        self.recorder = TurnRecorder(runtime.bus, session_id, new_ulid())
        self.clock = time.perf_counter()
        self.turn: Event | None = None
        self.started: Event | None = None
        self.attempt_clock = self.clock
        self.model = ""
        self.attempts = 0
        self.started_any = False
        self.estimated_tokens = 0
        self.stream_writer: StreamWriter | None = None
        self.last_call: Event | None = None
        """The latest llm.call_completed (set on the writer thread); parent of llm.output_* steps."""
        self.produced: list[Message] = []
        """The answers of a paused call's earlier upstream calls (continued_call.py), each stored as it came."""
        self.spent: Message | None = None
        """A run that ended without an answer after priced calls: the one message carrying their usage."""
        self._pieces: deque[Callable[[], object]] = deque()
        """This call's record work not yet run by the writer, in order (`_run_pieces` runs it)."""
        self._queued = False
        """Whether a `_run_pieces` job of this call waits in the writer's queue, not yet started."""

    def _later(self, work: Callable[[], object]) -> None:
        """Run `work` on the writer thread after this call's earlier work. What a call queues before the
        writer reaches it goes as one job: a call answered within the writer's linger is one job, not one
        per event (its start, its attempt, its ending)."""
        self._pieces.append(work)
        if not self._queued:
            self._queued = True
            self.writer.submit(self._run_pieces)

    def _run_pieces(self) -> None:
        """On the writer thread: every piece queued so far, in order, each guarded on its own (a failed
        piece is logged and loses only itself: the answer has left, a failed record is never raised)."""
        self._queued = False  # before taking pieces: one queued from now on goes in a job of its own
        pieces = self._pieces
        while pieces:
            work = pieces.popleft()
            try:
                work()
            except Exception:
                log.exception("gateway call %s: recording failed", self.session_id)

    def begin(self, estimated_tokens: int) -> None:
        self.estimated_tokens = estimated_tokens

        def emit() -> None:
            last_user_text, has_images, has_tool_calls = history_survey(self.request.messages)
            self.turn = self.recorder.emit_trusted("turn.started", {
                "user_message_hash": sha256_hex(last_user_text), "user_message_text_redacted": None,
                "estimated_input_tokens": estimated_tokens, "has_images": has_images,
                "has_tool_calls_in_history": has_tool_calls,
            }, None, actor=Actor.USER)  # fmt: skip

        self._later(emit)

    # --- ChainObserver ------------------------------------------------------------------------

    def attempt_started(self, model: str, attempt: int) -> None:
        self.model = model
        self.attempts += 1
        self.attempt_clock = time.perf_counter()
        if self.stream_writer is not None:
            self.stream_writer.upstream_provider = model.partition(":")[0]
            self.stream_writer.upstream_model = model
        self.started_any = True
        payload = {"model": model, "provider": model.partition(":")[0],
                   "estimated_input_tokens": self.estimated_tokens, "request_id": new_ulid(), "is_worker": False}

        def emit() -> None:  # the options are read on the writer thread: the loop only queues the job
            payload["request_options"] = self.asked_options()
            self.started = self.recorder.emit_trusted("llm.call_started", payload, self.turn, actor=Actor.AGENT)

        self._later(emit)

    def asked_options(self) -> dict[str, Any]:
        """The request's options and tool names as `metis replay` reads them (agent/request_options.py),
        made once per call: every attempt was asked the same. As the catalog model dumps them (every
        field, defaults included), since llm.call_started is built without validation (emit_trusted)."""
        if self._asked is None:
            self._asked = asked_options_dump(self.request.options, [t.name for t in self.request.tools])
        return own_copy(self._asked)

    def attempt_failed(self, model: str, error: BaseException) -> str | None:
        self.failed(model, str(getattr(error, "error_class", "other")), str(error), getattr(error, "retry_count", 0))
        return None  # emitted on the writer thread: health events go without a parent

    def failed(self, model: str, error_class: str, message: str, retry_count: int = 0) -> None:
        payload = {
            "model": model, "provider": model.partition(":")[0], "error_class": error_class,
            "error_message_redacted": redact(message), "retry_count": retry_count,
            "latency_ms": int((time.perf_counter() - self.attempt_clock) * 1000),
        }  # fmt: skip
        self._later(lambda: self.recorder.emit("llm.call_failed", payload, self.started, actor=Actor.AGENT))

    # --- endings ------------------------------------------------------------------------------

    def _stamp(self, answer: Message) -> None:
        """The gateway identity on an answer's metadata (`metis cost --by key|user|team` reads it).

        Written into the model's own dicts, as pydantic's `__setattr__` writes them for a model without
        `validate_assignment` (two declared fields into `__dict__`, two extra ones into
        `__pydantic_extra__`, all four marked set), without its per-name handler lookup, which for an
        extra field is not memoized and costs a class walk on every call (tests/gateway/
        test_call_record_stamp.py compares the result with setattr's)."""
        meta = answer.metadata
        key = self.key
        fields, extra = meta.__dict__, meta.__pydantic_extra__
        if extra is None or "gateway_key_id" in fields or "inbound_shape" in fields:  # not the usual model
            meta.user_id, meta.team_id = key.user_id, key.team_id
            setattr(meta, "gateway_key_id", key.id)  # noqa: B010 - an extra metadata field (§10.3)
            setattr(meta, "inbound_shape", self.shape)  # noqa: B010
            return
        fields["user_id"], fields["team_id"] = key.user_id, key.team_id  # str | None: valid as they are
        extra["gateway_key_id"], extra["inbound_shape"] = key.id, self.shape
        meta.__pydantic_fields_set__.update(_STAMPED)

    def completed(self, final: Message, alerts: list[dict[str, Any]] | None = None) -> None:
        """A full answer: llm.call_completed with the gateway identity, its quota alerts, turn.completed."""
        self._stamp(final)
        self.call_completed(final, alerts)
        self._turn_completed(final, None)
        self._persist(final)

    def call_completed(self, final: Message, alerts: list[dict[str, Any]] | None = None) -> None:
        """One upstream answer: llm.call_completed with the gateway identity and its quota alerts. An
        answer that ended incomplete but was billed (usage: a tool call cut by max_tokens) is a completed
        call too, as the store counts it; one without usage is a failed call."""
        meta = final.metadata
        if meta.usage is not None and meta.model and meta.provider:
            payload = completed_payload(final)  # then the gateway identity, in the record's key order
            key = self.key
            payload["gateway_key_id"], payload["inbound_shape"] = key.id, self.shape
            payload["user_id"], payload["team_id"] = key.user_id, key.team_id

            def emit() -> None:
                event = self.recorder.emit_trusted("llm.call_completed", payload, self.started, actor=Actor.AGENT)
                self.last_call = event
                for alert in alerts or ():
                    self.recorder.emit("quota.alert", alert, event, actor=Actor.SYSTEM)

            self._later(emit)
        else:
            self.failed(self.model, "other", "the answer ended incomplete")

    def keep(self, answer: Message) -> None:
        """One upstream answer of several (a paused answer, its continuation), stored as its own message."""
        self._stamp(answer)
        self.produced.append(answer)

    def keep_spent(self, kept: Message) -> None:
        """A structured run ended without an answer after priced calls: `kept` (status error or
        cancelled, carrying every call's usage) is stored and closes the turn with their spend."""
        self._stamp(kept)
        self.spent = kept

    def output_step(self, step: OutputStep) -> None:
        """A structured-output step (an OutputObserver): its llm.output_* event, after the call it follows."""
        event_type, payload = output_step_event(step)
        self._later(lambda: self.recorder.emit(event_type, payload, self.last_call or self.started,
                                               actor=Actor.AGENT))

    def answered(self, answer: Message, error: str | None = None) -> None:
        """The end of a call of several upstream calls (a structured ask's attempts, a paused answer's
        continuations): every call's llm.call_completed is already out; the answer written back (its
        usage the sum of the calls') closes the turn, as an "error" stop when `error` says why it was
        cut short. Stored: that answer, or the calls' own answers when they were kept (`produced`)."""
        self._stamp(answer)
        self._turn_completed(answer, error)
        self._persist(None if self.produced else answer)

    def errored(self, error: BaseException) -> None:
        """No answer (every member failed, or the request could not be sent)."""
        self._turn_completed(self.spent, redact(str(error)) if isinstance(error, MetisError)
                             else type(error).__name__)
        self._persist(self.spent)

    def cancelled(self, partial: Message | None, why: str, used: Usage | None = None) -> None:
        """The client disconnected: the upstream request was cancelled; keep what arrived. With `used`
        (call_budget.cut_usage: what the cut call used, as charged), the call is a completed one on the
        record, its partial answer (or an empty one) carrying that usage; without, a failed one."""
        payload = {"reason": "client_disconnect", "partial_llm_calls": 1 if partial is not None else 0,
                   "partial_tool_calls": 0}  # a partial answer had arrived, or nothing had
        if used is not None and self.started_any:
            if partial is None:  # the input was sent, nothing came back: an empty cancelled answer carries it
                partial = Message(role=Role.ASSISTANT, session_id=self.session_id, content=[], metadata=MessageMetadata(
                    model=self.model, provider=self.model.partition(":")[0], status=MessageStatus.CANCELLED))
            partial.metadata.usage = used
            partial.metadata.stop_reason = "cancelled"
            self._stamp(partial)
            self.call_completed(partial)
        elif self.started_any:
            self.failed(self.model, "cancelled", why)
        if partial is not None:
            partial.metadata.status = MessageStatus.CANCELLED
        # a client that leaves is a disconnect the system records, not a cancel the user asked for
        self._later(lambda: self.recorder.emit("turn.cancelled", payload, self.turn, actor=Actor.SYSTEM))
        if self.spent is not None:
            self.produced.append(self.spent)
        self._persist(partial)

    def _turn_completed(self, final: Message | None, error: str | None) -> None:
        usage = final.metadata.usage if final is not None else None
        stop = final.metadata.stop_reason if final is not None else None
        if final is not None and error is not None:
            stop = "error"  # an answer cut short by a limit: the turn did not end as the model meant
        payload = {
            "stop_reason": stop if stop in _TURN_STOPS else "end_turn", "llm_call_count": self.attempts,
            "tool_call_count": 0, "total_input_tokens": usage.total_input_tokens if usage else 0,
            "total_output_tokens": usage.output_tokens if usage else 0,
            "total_cost_usd": float(usage.cost_usd or Decimal(0)) if usage else 0.0,
            "wall_time_seconds": round(time.perf_counter() - self.clock, 3),
            "signals_extra": {"error": error} if error else None,
            "user_id": self.key.user_id, "team_id": self.key.team_id,
        }  # fmt: skip
        self._later(lambda: self.recorder.emit_trusted("turn.completed", payload, self.turn, actor=Actor.AGENT))

    # --- the store ----------------------------------------------------------------------------

    def _persist(self, final: Message | None) -> None:
        self._later(lambda: self._write(final))

    def _write(self, final: Message | None) -> None:
        """On the writer thread: stage the session row, the inbound history and the answer for the batch."""
        for message in self.request.messages:
            fields = message.__dict__
            usage: Usage | None = fields["metadata"].__dict__["usage"]
            if fields["role"] is Role.ASSISTANT and usage is not None:
                # The client's own history: a record of what it sent, not a call metis made or charged.
                setattr(message.metadata, FROM_CLIENT, True)
                usage.cost_usd, usage.pricing_version = Decimal(0), "client_history"
        messages = [*self.request.messages, *self.produced, *([final] if final is not None else [])]
        self.writer.stage(StoredConversation(
            f"gateway:{self.key.id}", self.session_id, messages, active_model=self.model or None,
            title=f"gateway {self.shape} {self.asked_model}", tool_id_map=self.request.tool_ids.to_dict() or None,
            stamp_us=now_us(),
        ))  # fmt: skip


def history_survey(messages: list[Message]) -> tuple[str, bool, bool]:
    """turn.started's facts about a request's history, in one pass over its blocks: the last user
    message's `text()`, whether any block is an image, whether any is a tool use. The text is joined
    here rather than by `Message.text()` (the same join, without an interpreted method and generator
    per call: bench/results/gateway-history.md; tests/gateway/test_call_record_jobs.py holds it to `text()`)."""
    last_user: Message | None = None
    has_images = has_tool_calls = False
    for message in messages:  # one pass over the history's blocks
        fields = message.__dict__  # the model's storage: no trip through BaseModel's __getattr__ hook
        if fields["role"] is Role.USER:
            last_user = message
        if has_images and has_tool_calls:
            continue
        for block in fields["content"]:
            if isinstance(block, ImageBlock):
                has_images = True
            elif isinstance(block, ToolUseBlock):
                has_tool_calls = True
    if last_user is None:
        return "", has_images, has_tool_calls
    text = "".join([block.__dict__["text"] for block in last_user.__dict__["content"] if isinstance(block, TextBlock)])
    return text, has_images, has_tool_calls


_ASKED_DUMPS: dict[tuple[Any, ...], dict[str, Any]] = {}
"""`asked_options_dump`'s answers by what they were made from (a gateway's calls ask a few alike)."""
_ASKED_DUMPS_MAX = 256
_SCALARS = frozenset({type(None), bool, int, float, str})
_PLAIN_VALUES = attrgetter(*PLAIN_FIELDS)


def _may_hold_list(annotation: Any) -> bool:
    """Whether a field of this annotation can hold a list at its top level (through unions, Annotated, Any)."""
    if annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is list:
        return True
    if origin is typing.Annotated:
        return _may_hold_list(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return any(_may_hold_list(arg) for arg in typing.get_args(annotation))
    return False


_LIST_OPTIONS = tuple(name for name, info in RequestOptions.model_fields.items() if _may_hold_list(info.annotation))
"""The `request_options` fields whose dumped value may be a list (stop, tools, omitted)."""


def own_copy(asked: dict[str, Any]) -> dict[str, Any]:
    """A dict of its own for each attempt's event, its lists too (the dump is shared with alike calls):
    `{name: list(value) if type(value) is list else value for name, value in asked.items()}`, copied in C
    with only the fields that can hold a list looked at (tests/gateway/test_asked_options_dump.py)."""
    copied = dict(asked)
    for name in _LIST_OPTIONS:
        value = copied.get(name)
        if type(value) is list:
            copied[name] = list(value)
    return copied


def asked_options_dump(options: AdapterOptions | None, tools: list[str]) -> dict[str, Any]:
    """`trusted_dump(RequestOptions, request_options_record(options, tools=tools))`, remembered when
    every value it reads is a scalar (None, bool, int, float, str: the value's type is in the key, so 1,
    1.0 and True stay apart) and no hosted tool is set; anything else is made afresh. The record is a
    function of those values alone (scrubbing a string gives the same text each time). The caller
    copies the dict and its lists, so events never share them. ~35,000 -> ~4,000 instructions a call."""
    key: tuple[Any, ...] | None = None
    if options is not None and not options.hosted_tools:
        values = _PLAIN_VALUES(options)
        kinds = tuple(map(type, values))
        if _SCALARS.issuperset(kinds):
            key = (values, kinds, bool(options.extra), bool(options.provider_tools), *tools)
            remembered = _ASKED_DUMPS.get(key)
            if remembered is not None:
                return remembered
    # request_options_record keeps only values the model accepts as they are, and never the nested
    # `output` (no output spec here): the dump is the record with the defaults filled in.
    dump = trusted_dump(RequestOptions, request_options_record(options, tools=tools))
    if key is not None:
        if len(_ASKED_DUMPS) >= _ASKED_DUMPS_MAX:
            _ASKED_DUMPS.clear()
        _ASKED_DUMPS[key] = dump
    return dump

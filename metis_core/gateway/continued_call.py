"""A paused answer continued by the gateway, so every client gets one whole answer.

Anthropic ends a long run of server tools (web search, code execution) with `pause_turn`
(adapters/continuation.py). Streams and OpenAI shapes carry no server-tool blocks back, so most
clients could not resume it; the gateway does, for every shape, as the agent's turn does: the same
request with the paused answers appended, on the model that paused, at most MAX_CONTINUATIONS times.
Each upstream call is charged and recorded as it ends; the client gets one answer (content joined,
usage summed, the last call's stop), marked CONTINUATION_LIMIT when it was still paused at the cap.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from metis_core.adapters.continuation import MAX_CONTINUATIONS, paused
from metis_core.agent.stream_tracker import StreamTracker
from metis_core.errors import GatewayBudgetError
from metis_core.gateway.continued_stream import continued_events
from metis_core.gateway.shapes.base import CONTINUATION_LIMIT
from metis_core.gateway.usage_total import add_usage
from metis_core.messages import Message, MessageStatus, StreamEvent
from metis_core.routing.fallback import FallbackChain

if TYPE_CHECKING:
    from metis_core.gateway.call_budget import CallBudget
    from metis_core.gateway.call_record import CallRecord
    from metis_core.gateway.service import GatewayService

def continuable(answer: Message) -> bool:
    """A whole paused answer with no client tool call in it: the gateway sends it back to resume."""
    return paused(answer) and answer.status is MessageStatus.COMPLETE and not answer.tool_uses()


def joined(answers: list[Message], *, at_limit: bool) -> Message:
    """One answer of several upstream answers: their content in order, their usage added, the last one's
    metadata (model, stop reason) otherwise."""
    last = answers[-1]
    usage = None
    for answer in answers:
        usage = add_usage(usage, answer.metadata.usage)
    metadata = last.metadata.model_copy(update={"usage": usage})
    if at_limit:
        setattr(metadata, CONTINUATION_LIMIT, True)
    content = [block for answer in answers for block in answer.content]
    return last.model_copy(update={"content": content, "metadata": metadata})


class ContinuedCall:
    """The upstream events of one gateway call, with paused answers continued.

    `events()` yields the first upstream call's events as they come; when its answer is paused, the
    continuations' events follow, their block indexes shifted past the earlier answers' blocks, and
    only the joined answer's `MessageComplete` ends the stream. A call that never pauses passes
    through unchanged (its caller charges and records it as before)."""

    def __init__(self, service: GatewayService, record: CallRecord, members: list[str],
                 budget: CallBudget) -> None:
        self.service = service
        self.record = record
        self.members = members
        self.budget = budget
        """The call's reservation: each continuation holds its worst case again before it is sent."""
        self.continued = False
        """True once a pause was continued: then every upstream call was charged and recorded here,
        and the caller closes the turn with `record.answered(answer, limit_error)`."""
        self.limit_error: str | None = None
        """Why the answer is cut short, when it was still paused after MAX_CONTINUATIONS continuations."""
        self.tracker = StreamTracker()
        """What the upstream call in flight has streamed (its own indexes): the partial kept on a cancel."""

    def events(self, *, stream: bool) -> AsyncGenerator[StreamEvent, None]:
        """An async generator (gateway/continued_stream.py)."""
        return continued_events(self, stream=stream)

    async def answer(self) -> Message:
        """The non-streamed answer: what `events(stream=False)`'s last `MessageComplete` carries, with the
        same calls, charges and records, made directly (no stream events exist for a non-streamed call)."""
        record = self.record
        answers: list[Message] = []
        final = await self.service.answer(record, self.members)
        while True:
            more = self._continues(final, answers)
            if not answers and not more:
                return final  # no pause: the caller charges and records this answer as for any call
            self._keep_paused(final, answers)
            if not more or not self._reserve_next():
                return self.joined(answers)
            final = await self._resumed_chain().acomplete(
                [*record.request.messages, *answers], **self._call_args())

    def joined(self, answers: list[Message]) -> Message:
        """The one answer of the continued calls `answers`, cut short when the cap was reached."""
        return joined(answers, at_limit=self.limit_error is not None)

    def _continues(self, final: Message, answers: list[Message]) -> bool:
        """Whether `final` is paused and gets another call (`answers` held so far); at the cap, no, and why."""
        if not continuable(final):
            return False
        if len(answers) == MAX_CONTINUATIONS:
            self.limit_error = (f"the model paused its hosted tools {len(answers) + 1} times in a row; the "
                                "gateway stopped continuing it (the answer so far was sent, cut short)")
            return False
        return True

    def _reserve_next(self) -> bool:
        """Hold the next continuation's worst case (after the paused answer was charged); when it does not
        fit the budget, no continuation, and the answer is cut short saying why."""
        try:
            self.budget.top_up(shape=self.record.shape, model=self.record.asked_model)
        except GatewayBudgetError as refused:
            self.limit_error = f"the answer was cut short: {refused}"
            return False
        return True

    def _keep_paused(self, final: Message, answers: list[Message]) -> None:
        """One answer of a continued call: kept for the record, charged and recorded as its own call."""
        self.continued = True
        self.record.keep(final)
        self.record.call_completed(final, self.service.charge(self.budget, final, more=True))
        answers.append(final)

    def _resumed_chain(self) -> FallbackChain:
        """The model that paused, alone: its server-tool state lives there (no fallback)."""
        return FallbackChain(self.service.rt.client, [self.record.model], health=self.service.rt.health)

    def _call_args(self) -> dict[str, Any]:
        request = self.record.request
        return {"tools": request.tools, "options": request.options, "tool_ids": request.tool_ids,
                "session_id": self.record.session_id, "observer": self.record}

    def _resume(self, answers: list[Message], *, stream: bool) -> AsyncIterator[StreamEvent]:
        """The request again with the paused answers last, on the model that paused."""
        return self._resumed_chain().astream([*self.record.request.messages, *answers], stream=stream,
                                             **self._call_args())

"""A continued call's events, the async generator beside gateway/continued_call.py. `ContinuedCall.events`
calls `continued_events`, which behaves as that method's own body did (nothing runs before the first `anext`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from metis_core.agent.stream_tracker import StreamTracker
from metis_core.messages import BLOCK_EVENTS, MessageComplete

if TYPE_CHECKING:
    from metis_core.gateway.continued_call import ContinuedCall
    from metis_core.messages import Message, StreamEvent


async def continued_events(run: ContinuedCall, *, stream: bool) -> AsyncGenerator[StreamEvent, None]:
    """The first upstream call's events as they come; each continuation's after it, block indexes
    shifted past what came before; one `MessageComplete` last (the joined answer when continued)."""
    record = run.record
    answers: list[Message] = []
    upstream = run.service.events(record, run.members, stream=stream)
    offset = 0
    while True:
        run.tracker = StreamTracker()
        ending: MessageComplete | None = None
        try:
            async for event in upstream:
                if isinstance(event, MessageComplete):
                    ending = event
                    continue
                run.tracker.observe(event)
                yield dataclasses.replace(event, index=event.index + offset) \
                    if offset and isinstance(event, BLOCK_EVENTS) else event
        finally:
            close = getattr(upstream, "aclose", None)
            if close is not None:  # a cancel mid-call closes that call's response at once
                await close()
        if ending is None:
            return
        final: Message = ending.message
        more = run._continues(final, answers)
        if not answers and not more:
            yield ending  # no pause: the caller charges and records this answer as for any call
            return
        run._keep_paused(final, answers)
        if not more or not run._reserve_next():
            answer = run.joined(answers)
            yield MessageComplete(message=answer, stop_reason=answer.metadata.stop_reason)
            return
        offset += len(final.content)
        upstream = run._resume(answers, stream=stream)

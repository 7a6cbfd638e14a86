"""`Adapter.stream_response`'s async generator, beside adapters/base.py: the method hands over to this one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from metis_core.messages import StreamEvent
from metis_core.transport.framing import WireChunk

if TYPE_CHECKING:
    from metis_core.adapters.base import StreamTranslator


async def translated_stream(translator: StreamTranslator,
                            chunks: AsyncIterator[WireChunk]) -> AsyncIterator[StreamEvent]:
    """Every canonical event of `chunks`, fed through `translator`, then what its `finish()` gives."""
    async for chunk in chunks:
        for event in translator.feed(chunk):
            yield event
    for event in translator.finish():
        yield event

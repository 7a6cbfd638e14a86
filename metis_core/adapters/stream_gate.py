"""Holds back a stream's first events until it has produced content, so early failures can be raised.

A stream that breaks before any text, thinking or tool call is raised as a ProviderError — the
caller can retry it or fall back to another model as if the request had failed outright. Once
content has been yielded, failures stay in the stream: an `error` event and a PARTIAL message.
It does no I/O and knows no provider.
"""

from __future__ import annotations

from metis_core.errors import ERROR_CLASS_TYPES, ErrorClass, ProviderError
from metis_core.messages import BLOCK_EVENTS, MessageComplete, StreamError, StreamEvent


def error_from_event(event: StreamError, provider: str) -> ProviderError:
    """The exception a stream error event stands for (unknown classes become OtherProviderError)."""
    try:
        error_class = ErrorClass(event.error_class)
    except ValueError:
        error_class = ErrorClass.OTHER
    return ERROR_CLASS_TYPES[error_class](event.message, provider=provider)


class FirstContentGate:
    """Buffers events until the first content event; `open` tells whether anything was released."""

    __slots__ = ("_buffer", "_provider", "open")

    def __init__(self, provider: str) -> None:
        self._buffer: list[StreamEvent] = []
        self.open = False
        self._provider = provider

    def push(self, events: list[StreamEvent]) -> list[StreamEvent]:
        """Events ready to yield now. Raises if the stream ends in an error before any content."""
        if self.open:
            return events
        for position, event in enumerate(events):
            if isinstance(event, BLOCK_EVENTS):  # a hosted call or result counts: the provider did that work
                self.open = True
                released = [*self._buffer, *events[position:]]
                self._buffer.clear()
                return released
            self._buffer.append(event)
            if isinstance(event, MessageComplete):
                return self._release_final()
        return []

    def _release_final(self) -> list[StreamEvent]:
        for event in self._buffer:
            if isinstance(event, StreamError):
                raise error_from_event(event, self._provider)
        self.open = True
        released = list(self._buffer)
        self._buffer.clear()
        return released

    def close(self) -> list[StreamEvent]:
        """Whatever is still held when the translator has finished (it always ends with a completion)."""
        if self.open:
            return []
        return self._release_final()


def annotate_failure(events: list[StreamEvent], error: ProviderError) -> list[StreamEvent]:
    """Make the translator's end-of-stream error event describe the transport failure that caused it.

    A translator that had already seen its terminal event emits nothing more; that stands.
    """
    out: list[StreamEvent] = []
    replaced = False
    for event in events:
        if isinstance(event, StreamError) and not replaced:
            event = StreamError(error_class=error.error_class.value, message=error.detail, retryable=error.retryable)
            replaced = True
        out.append(event)
    return out

"""Builds the final canonical Message from a stream, for every provider's translator.

Translators call `text`, `thinking`, `tool_start`, `tool_input`, ... with the provider's own block
key; the assembler assigns canonical content positions, issues canonical tool ids, emits the
canonical StreamEvents and, at the end, builds the Message. A stream that ends early or with tool
JSON that does not parse yields an `error` event and a PARTIAL/ERROR message, never a corrupt
COMPLETE one. What translators hand it is checked here, once for every provider: a fragment that
is not a string raises MalformedResponseError, and tool arguments that cannot be canonically
hashed (numbers past 2^53, nesting past the interpreter's depth) count as broken arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import orjson

from metis_core.adapters._common.json_hashable import hashable_json
from metis_core.adapters._common.response_message import assistant_message
from metis_core.errors import ErrorClass, MalformedResponseError
from metis_core.messages import (
    BlockOrigin,
    Citation,
    CitationDelta,
    Message,
    MessageComplete,
    MessageStatus,
    RedactedThinkingBlock,
    StreamError,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    ToolUseEnd,
    ToolUseInputDelta,
    ToolUseStart,
    Usage,
    UsageUpdate,
    WholeBlock,
    prechecked,
)
from metis_core.secret_scrub import scrub_secrets

if TYPE_CHECKING:
    from metis_core.adapters.base import RequestContext

log = logging.getLogger("metis_core.adapters.assembler")
_COMPLETE = MessageStatus.COMPLETE  # bound once: a `MessageStatus.X` lookup is slow on Python 3.11

HostedBuilder = Callable[[dict[str, Any], str, BlockOrigin], Any]
"""Builds a hosted block at the end: (the provider's payload, streamed JSON fragments, origin)."""


class _Slot:
    """One content block being assembled: its kind and the parts received so far."""

    __slots__ = ("closed", "extra", "index", "kind", "parts", "signature", "tool_id", "tool_input", "tool_name")

    def __init__(self, kind: str, index: int) -> None:
        self.kind = kind
        self.index = index
        """Its position in the final message's content."""
        self.parts: list[str] = []
        self.signature: str | None = None
        self.tool_id = ""
        self.tool_name = ""
        self.tool_input: dict[str, Any] | None = None
        self.closed = False
        self.extra: dict[str, Any] = {}


class MessageAssembler:
    def __init__(self, context: RequestContext, *, api: str, unsigned_thinking_origin: bool = False) -> None:
        self.context = context
        self.api = api
        self._origin: BlockOrigin | None = None
        # Providers without signatures (Ollama) still bind thinking to its origin for replay rules.
        self.unsigned_thinking_origin = unsigned_thinking_origin
        self._slots: list[_Slot] = []
        self._by_key: dict[Hashable, _Slot] = {}
        self.usage: Usage | None = None
        """Set when the provider reports usage; a message without a report gets zero counts."""
        self.provider_raw: dict[str, Any] = {}
        self.finished = False

    @property
    def origin(self) -> BlockOrigin:
        """Who issued this message's thinking tokens; built only for messages that carry thinking."""
        if self._origin is None:
            ctx = self.context
            self._origin = BlockOrigin(provider=ctx.provider, api=self.api, model=ctx.model_name)
        return self._origin

    # --- blocks ------------------------------------------------------------------------------

    def _text(self, value: object, what: str) -> str:
        if not isinstance(value, str):
            raise MalformedResponseError(
                f"{what} is {type(value).__name__}, not a string", provider=self.context.provider
            )
        return value

    def _slot(self, key: Hashable, kind: str) -> _Slot:
        """The block at `key` if it is of `kind`, else a new one there (a key reused for another kind)."""
        slot = self._by_key.get(key)
        if slot is None or slot.kind != kind:
            slot = self._by_key[key] = _Slot(kind, len(self._slots))
            self._slots.append(slot)
        return slot

    # text, thinking and tool_input run once per delta: each looks its block up itself (no `_slot` call)

    def text(self, key: Hashable, text: str) -> TextDelta:
        if type(text) is not str:
            text = self._text(text, "text")
        slot = self._by_key.get(key)
        if slot is None or slot.kind != "text":
            slot = self._slot(key, "text")
        slot.parts.append(text)
        return TextDelta(slot.index, text)  # positional: this runs for every delta

    def text_ordinal(self, key: Hashable) -> int | None:
        """Which text block of the built message `key`'s text becomes (None: it makes none)."""
        slot = self._by_key.get(key)
        if slot is None or not _makes_text_block(slot):
            return None
        return sum(1 for other in self._slots[: slot.index] if _makes_text_block(other))

    def thinking(self, key: Hashable, text: str) -> ThinkingDelta:
        if type(text) is not str:
            text = self._text(text, "thinking text")
        slot = self._by_key.get(key)
        if slot is None or slot.kind != "thinking":
            slot = self._slot(key, "thinking")
        slot.parts.append(text)
        return ThinkingDelta(slot.index, text)

    def thinking_signature(self, key: Hashable, signature: str) -> None:
        signature = self._text(signature, "thinking signature")
        slot = self._slot(key, "thinking")
        slot.signature = (slot.signature or "") + signature

    def redacted_thinking(self, key: Hashable, data: str) -> None:
        data = self._text(data, "redacted thinking data")
        slot = self._slot(key, "redacted_thinking")
        slot.parts.append(data)

    def tool_start(self, key: Hashable, provider_id: str | None, name: str) -> ToolUseStart:
        if type(name) is not str:
            name = self._text(name, "tool name")
        if provider_id is not None and type(provider_id) is not str:
            provider_id = self._text(provider_id, "tool call id")
        slot = self._slot(key, "tool_use")
        slot.tool_id = self.context.tool_ids.issue(self.context.provider, provider_id)
        slot.tool_name = name
        return ToolUseStart(index=slot.index, id=slot.tool_id, name=name)

    def has_text(self, key: Hashable) -> bool:
        slot = self._by_key.get(key)
        return slot is not None and slot.kind == "text"

    def has_tool(self, key: Hashable) -> bool:
        slot = self._by_key.get(key)
        return slot is not None and slot.kind == "tool_use"

    def tool_input(self, key: Hashable, fragment: str) -> ToolUseInputDelta:
        if type(fragment) is not str:
            fragment = self._text(fragment, "tool arguments fragment")
        slot = self._by_key.get(key)
        if slot is None or slot.kind != "tool_use":
            slot = self._slot(key, "tool_use")
        slot.parts.append(fragment)
        return ToolUseInputDelta(slot.index, slot.tool_id, fragment)

    def tool_input_object(self, key: Hashable, value: dict[str, Any]) -> None:
        """For providers that send arguments as a whole object (Gemini, Ollama)."""
        if not isinstance(value, dict):
            raise MalformedResponseError(
                f"tool arguments are {type(value).__name__}, not an object", provider=self.context.provider
            )
        slot = self._slot(key, "tool_use")
        slot.tool_input = value if hashable_json(value) else None
        if slot.tool_input is None:
            slot.parts = ["<arguments with numbers or nesting no JSON hash can hold>"]

    def tool_end(self, key: Hashable) -> StreamEvent:
        """Close a tool block: its whole parsed input, or an error event if the JSON is broken."""
        slot = self._slot(key, "tool_use")
        slot.closed = True
        parsed = self._parse_tool_input(slot)
        if parsed is None:
            return StreamError(
                error_class="invalid_request",
                message=f"tool {slot.tool_name!r} arguments are not a JSON object: {''.join(slot.parts)[:200]!r}",
            )
        slot.tool_input = parsed
        return ToolUseEnd(index=slot.index, id=slot.tool_id, name=slot.tool_name, input=parsed)

    def citation(self, key: Hashable, citation: Citation) -> CitationDelta:
        """A source for the text block at `key` (Anthropic citations, Responses annotations)."""
        slot = self._slot(key, "text")
        slot.extra.setdefault("citations", []).append(citation)
        return CitationDelta(index=slot.index, citation=citation)

    def whole_block(self, key: Hashable) -> WholeBlock | None:
        """The event of a hosted or redacted-thinking block that is complete (its provider closed it):
        the block as the final message will hold it (built once here and kept for `build`); for a signed
        thinking block, whose text streamed as deltas, the block with its signature (None when unsigned)."""
        slot = self._by_key.get(key)
        if slot is None:
            return None
        index = slot.index
        if slot.kind == "thinking":  # its text streamed; signed, it is now complete (a writer can close it)
            if slot.signature is None:
                return None
            return WholeBlock(index=index, block=ThinkingBlock(text="".join(slot.parts), signature=slot.signature,
                                                               origin=self.origin))
        if slot.kind == "redacted_thinking":
            block: Any = RedactedThinkingBlock(data="".join(slot.parts), origin=self.origin)
        elif slot.kind == "hosted" and slot.extra.get("build") is not None:
            block = slot.extra["build"](slot.extra["payload"], "".join(slot.parts), self.origin)
        else:
            return None
        slot.closed = True
        slot.extra["built"] = block
        return WholeBlock(index=index, block=block)

    def hosted(self, key: Hashable, payload: dict[str, Any], build: HostedBuilder) -> None:
        """A block of the provider's own work (hosted tool call or result, compaction).

        Never a client tool call: nothing of it reaches `tool_start`, so no agent dispatches it.
        `build` makes the canonical block when the message is built, from the payload and any
        fragments streamed in with `hosted_fragment`.
        """
        slot = self._slot(key, "hosted")
        slot.extra["payload"] = payload
        slot.extra["build"] = build

    def has_hosted(self, key: Hashable) -> bool:
        slot = self._by_key.get(key)
        return slot is not None and slot.kind == "hosted"

    def hosted_fragment(self, key: Hashable, fragment: str) -> None:
        self._slot(key, "hosted").parts.append(fragment)

    def set_block_extra(self, key: Hashable, kind: str, **values: Any) -> None:
        slot = self._slot(key, kind)
        slot.extra.update(values)

    @staticmethod
    def _parse_tool_input(slot: _Slot) -> dict[str, Any] | None:
        if slot.tool_input is not None:
            return slot.tool_input
        raw = "".join(slot.parts).strip()
        if not raw:
            return {}
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) and hashable_json(value) else None

    def set_usage(self, usage: Usage) -> UsageUpdate:
        if not isinstance(usage, Usage):
            raise MalformedResponseError("usage could not be read", provider=self.context.provider)
        self.usage = usage
        return UsageUpdate(usage=usage)

    # --- endings -----------------------------------------------------------------------------

    def complete(self, stop_reason: str | None) -> list[StreamEvent]:
        """Normal end. Open tool blocks are closed; any that do not parse make the message PARTIAL."""
        events: list[StreamEvent] = []
        broken = False
        for key, slot in list(self._by_key.items()):
            if slot.kind == "tool_use" and not slot.closed:
                event = self.tool_end(key)
                events.append(event)
                broken = broken or isinstance(event, StreamError)
            elif slot.kind == "tool_use" and slot.tool_input is None:
                broken = True
        if broken:
            reason = "max_tokens" if stop_reason == "max_tokens" else "invalid tool arguments"
            events.extend(self._end(MessageStatus.PARTIAL, stop_reason, note=reason))
            return events
        events.extend(self._end(_COMPLETE, stop_reason))
        return events

    def fail(self, error_class: str, message: str, *, retryable: bool = False) -> list[StreamEvent]:
        """The stream broke: an error event, then the partial message (PARTIAL if it holds content)."""
        status = MessageStatus.PARTIAL if self._slots else MessageStatus.ERROR
        message = scrub_secrets(message)  # a provider's error event may echo the key
        error = StreamError(error_class=error_class, message=message, retryable=retryable)
        return [error, *self._end(status, "error", note=message)]

    def abandon(self, message: str) -> list[StreamEvent]:
        """End a stream whose translator broke: `fail`, and if even the partial message cannot be
        built, an ERROR message without content. Returns [] if the message was already ended."""
        if self.finished:
            return []
        try:
            return self.fail(ErrorClass.OTHER.value, message)
        except (ValueError, TypeError, LookupError, RecursionError):
            self.finished = False
            self._slots.clear()
            self._by_key.clear()
            return self.fail(ErrorClass.OTHER.value, message)

    def _end(self, status: MessageStatus, stop_reason: str | None, note: str | None = None) -> list[StreamEvent]:
        if self.finished:
            return []
        message = self.build(status, stop_reason)
        self.finished = True  # only once built: if building raised, `fail` can still end the stream
        if note and status is not MessageStatus.COMPLETE:
            message.metadata.provider_raw = {**(message.metadata.provider_raw or {}), "incomplete": note}
        return [MessageComplete(message=message, stop_reason=stop_reason)]

    def build(self, status: MessageStatus, stop_reason: str | None) -> Message:
        content: list[Any] = []
        dropped = 0
        nameless = 0
        for slot in self._slots:
            if slot.kind == "text":
                text = "".join(slot.parts)
                citations = slot.extra.get("citations")
                if text or citations:
                    content.append(TextBlock(text=text, citations=citations) if citations
                                   else prechecked.cited_text_block(text, citations))
            elif slot.kind == "hosted":
                build = slot.extra.get("build")
                if slot.closed and "built" in slot.extra:  # the same block its whole_block event carried
                    content.append(slot.extra["built"])
                elif build is not None:
                    content.append(build(slot.extra["payload"], "".join(slot.parts), self.origin))
            elif slot.kind == "thinking":
                content.append(
                    ThinkingBlock(
                        text="".join(slot.parts),
                        signature=slot.signature,
                        origin=self.origin if slot.signature is not None or self.unsigned_thinking_origin else None,
                    )
                )
            elif slot.kind == "redacted_thinking":
                content.append(slot.extra.get("built") or RedactedThinkingBlock(data="".join(slot.parts),
                                                                                origin=self.origin))
            elif slot.kind == "tool_use":
                if slot.tool_input is None:  # arguments that were unusable
                    dropped += 1
                    continue
                if not slot.tool_name:  # nothing could run it and every provider refuses it as history
                    nameless += 1
                    continue
                tool_id, name, tool_input = slot.tool_id, slot.tool_name, slot.tool_input
                if type(tool_id) is str and type(name) is str and type(tool_input) is dict:
                    content.append(prechecked.tool_use_block(tool_id, name, tool_input))
                else:
                    content.append(ToolUseBlock(id=tool_id, name=name, input=tool_input))
        if dropped and status is _COMPLETE:  # a tool call whose arguments were unusable
            status = MessageStatus.PARTIAL
            self.provider_raw.setdefault("incomplete", "invalid tool arguments")
        ctx = self.context
        if nameless:
            log.warning("dropped %d tool call(s) without a name from %s", nameless, ctx.model,
                        extra={"session_id": ctx.session_id, "model": ctx.model})
            self.provider_raw["nameless_tool_calls"] = nameless
        return assistant_message(ctx, content, status, stop_reason, self.usage, self.provider_raw)


def _makes_text_block(slot: _Slot) -> bool:
    return slot.kind == "text" and bool("".join(slot.parts) or slot.extra.get("citations"))

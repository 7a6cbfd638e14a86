"""`streamGenerateContent?alt=sse` -> canonical StreamEvents, through the shared MessageAssembler.

Each SSE event (CRLF-framed, no `event:` line) is a partial GenerateContentResponse. Consecutive
text parts form one text block, consecutive `thought` parts one thinking block; a functionCall
arriving whole becomes start + one input delta + end, one streamed in `partialArgs` pieces is
assembled (partial_args.py) and ends at the bare `functionCall: {}` that closes it. Thought
signatures are kept with their part (see signatures.py). Usage is cumulative per chunk, so the
last one wins. The non-streaming parser feeds a whole response through the same machine, so
both paths build the same Message. It does not frame bytes nor classify HTTP errors.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.base import RequestContext, StreamTranslator
from metis_core.adapters.gemini.errors import error_class_for
from metis_core.adapters.gemini.hosted import GROUNDING_KEY, URL_CONTEXT_KEY, grounding_citations
from metis_core.adapters.gemini.hosted_parts import HostedPartReader, is_hosted_part
from metis_core.adapters.gemini.partial_args import PartialArgsError, apply_partial
from metis_core.adapters.gemini.signatures import API, RAW_KEY, SignatureTable, to_standard_base64
from metis_core.adapters.gemini.usage import FAILED_CALL_REASONS, stop_reason_for, usage_from_gemini
from metis_core.errors import RETRYABLE_CLASSES, ErrorClass
from metis_core.messages import StreamEvent
from metis_core.transport.framing import WireChunk

log = logging.getLogger("metis_core.adapters.gemini")

_UNSUPPORTED_PARTS = ("fileData", "functionResponse")
USAGE_LABELS = {"serviceTier": "service_tier", "trafficType": "traffic_type"}
"""usageMetadata labels -> provider_raw keys (Gemini API and Vertex name the tier differently)."""


class GeminiStreamTranslator(StreamTranslator):
    def __init__(self, context: RequestContext) -> None:
        self.assembler = MessageAssembler(context, api=API)
        self._signatures = SignatureTable(model=context.model_name)
        self._open: str | None = None  # kind of the block the next part may extend
        self._open_signed = False
        self._key = 0
        """The assembler key of the newest block (each block gets the next number, whatever its kind)."""
        self._text_ordinal = -1
        self._has_calls = False
        self._finish_reason: str | None = None
        self._block_reason: str | None = None
        self._usage: dict[str, Any] | None = None
        self._skipped: list[str] = []
        self._streaming_call: tuple[Any, dict[str, Any]] | None = None
        """(assembler key, arguments so far) of a call whose arguments arrive as partialArgs."""
        self._last_text_key: int | None = None
        self._hosted_parts = HostedPartReader()
        self._grounding: dict[str, Any] | None = None

    # --- input ---------------------------------------------------------------------------------

    def feed(self, chunk: WireChunk) -> list[StreamEvent]:
        if self.assembler.finished:
            return []
        try:
            body = orjson.loads(chunk.data)  # surrounding whitespace is fine
        except orjson.JSONDecodeError:
            data = chunk.data.strip()
            if not data or data == "[DONE]":
                return []
            return self.assembler.fail(ErrorClass.OTHER.value,
                                       f"Gemini sent a stream chunk that is not JSON: {data[:200]!r}")
        return self.consume(body)

    def consume(self, body: Any) -> list[StreamEvent]:
        """One GenerateContentResponse (a stream chunk, or a whole non-streaming body)."""
        if isinstance(body, list) and len(body) == 1:
            body = body[0]
        if not isinstance(body, dict):
            return self.assembler.fail(ErrorClass.OTHER.value,
                                       f"Gemini sent a chunk that is not a JSON object: {str(body)[:200]!r}")
        # Keys most chunks lack are tested with `in` before they are read: cheaper than .get per chunk.
        if "error" in body and isinstance(body["error"], dict):
            return self._stream_error(body["error"])
        events: list[StreamEvent] = []
        candidates = body.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            candidate = candidates[0]
            content = candidate.get("content")
            parts = content.get("parts") if isinstance(content, dict) else None
            if isinstance(parts, list):
                for part in parts:
                    if isinstance(part, dict):
                        self._part(part, events)
            if "finishReason" in candidate and isinstance(finish := candidate["finishReason"], str):
                self._finish_reason = finish
                self.assembler.provider_raw["finish_reason"] = finish
                if isinstance(candidate.get("finishMessage"), str):
                    self.assembler.provider_raw["finish_message"] = candidate["finishMessage"]
            if "groundingMetadata" in candidate:  # sent whole on one chunk: the last one seen wins
                grounding = candidate["groundingMetadata"]
                if grounding and isinstance(grounding, dict):
                    self._grounding = grounding
                    self.assembler.provider_raw[GROUNDING_KEY] = grounding
            if "urlContextMetadata" in candidate:
                url_context = candidate["urlContextMetadata"]
                if url_context and isinstance(url_context, dict):
                    self.assembler.provider_raw[URL_CONTEXT_KEY] = url_context
        if "promptFeedback" in body:
            feedback = body["promptFeedback"]
            if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
                self._block_reason = feedback["blockReason"]
                self.assembler.provider_raw["block_reason"] = self._block_reason
        if "usageMetadata" in body and isinstance(usage := body["usageMetadata"], dict):
            self._usage = usage
            for field, key in USAGE_LABELS.items():  # which tier served the call (billing), not counts
                if isinstance(usage.get(field), str):
                    self.assembler.provider_raw[key] = usage[field]
        raw = self.assembler.provider_raw
        if "response_id" not in raw and isinstance(body.get("responseId"), str):
            raw["response_id"] = body["responseId"]
        if "model_version" not in raw and isinstance(body.get("modelVersion"), str):
            raw["model_version"] = body["modelVersion"]
        return events

    # --- parts ---------------------------------------------------------------------------------

    def _new_block(self, kind: str, signed: bool) -> int:
        self._key += 1
        self._open = kind
        self._open_signed = signed
        return self._key

    def _part(self, part: dict[str, Any], events: list[StreamEvent]) -> None:
        """Appends the part's events to `events`."""
        signature: str | None = None
        if "thoughtSignature" in part:  # rare keys are tested with `in` before they are read (see consume)
            value = part["thoughtSignature"]
            signature = to_standard_base64(value) if value and isinstance(value, str) else None
        if "functionCall" in part and isinstance(call := part["functionCall"], dict):
            events.extend(self._function_call(call, signature))
            return
        text = part.get("text")
        if isinstance(text, str):
            if "thought" in part and part["thought"] is True:
                events.extend(self._thought(text, signature))
            elif not text:
                if signature is not None:
                    self._signatures.trailing = signature
            else:
                if self._open != "text" or (signature is not None and self._open_signed):
                    self._new_block("text", False)
                    self._text_ordinal += 1
                if signature is not None:
                    self._signatures.text[self._text_ordinal] = signature
                    self._open_signed = True
                self._last_text_key = self._key
                events.append(self.assembler.text(self._key, text))
            return
        if is_hosted_part(part):
            self._hosted_part(part)
            return
        kind = next((k for k in _UNSUPPORTED_PARTS if k in part), "unknown")
        if kind not in self._skipped:
            self._skipped.append(kind)
            self.assembler.provider_raw["skipped_parts"] = list(self._skipped)
            log.warning("Gemini response part %r has no canonical form and was skipped", kind,
                        extra={"adapter": "gemini", "part": kind, "session_id": self.assembler.context.session_id})

    def _hosted_part(self, part: dict[str, Any]) -> None:
        """Code Gemini ran, a tool Google ran (Gemini 3), or their output: a hosted block holding the part as sent."""
        build = self._hosted_parts.builder(part)
        key = self._new_block("hosted", False)
        self._open = None  # text after it starts a new block
        self.assembler.hosted(key, dict(part), build)

    def _function_call(self, call: dict[str, Any], signature: str | None) -> list[StreamEvent]:
        name = call.get("name")
        if self._streaming_call is not None and not name:
            return self._continue_call(call)  # a continuation: never a call of its own
        events: list[StreamEvent] = []
        if self._streaming_call is not None:
            events.extend(self._close_streaming_call())  # a new named call ends the open one
        if call.get("willContinue") is True and isinstance(name, str) and name and "args" not in call:
            return [*events, *self._open_streaming_call(call, name, signature)]
        if not name:
            if call:  # arguments with no name and no open call: nothing could ever run them
                log.warning("Gemini sent a functionCall without a name and no call was open; skipped",
                            extra={"adapter": "gemini", "session_id": self.assembler.context.session_id})
                self.assembler.provider_raw["nameless_function_calls"] = (
                    int(self.assembler.provider_raw.get("nameless_function_calls", 0)) + 1
                )
            return events
        return [*events, *self._whole_call(call, signature)]

    def _open_streaming_call(self, call: dict[str, Any], name: str, signature: str | None) -> list[StreamEvent]:
        key = self._new_block("call", False)
        self._open = None
        provider_id = call.get("id") if isinstance(call.get("id"), str) else None
        start = self.assembler.tool_start(key, provider_id, name)
        self._has_calls = True
        if signature is not None:
            self._signatures.tool_use[start.id] = signature
        self._streaming_call = (key, {})
        return [start, *self._continue_call(call)]

    def _continue_call(self, call: dict[str, Any]) -> list[StreamEvent]:
        assert self._streaming_call is not None
        _, args = self._streaming_call
        for partial in call.get("partialArgs") or ():
            if isinstance(partial, dict):
                try:
                    apply_partial(args, partial)
                except PartialArgsError as exc:
                    key = self._streaming_call[0]
                    self._streaming_call = None
                    self.assembler.tool_input(key, f"<unreadable partialArgs: {exc}>")
                    return [self.assembler.tool_end(key)]  # an error event: the arguments are not whole
        if call.get("willContinue") is True:
            return []
        return self._close_streaming_call()

    def _close_streaming_call(self) -> list[StreamEvent]:
        assert self._streaming_call is not None
        key, args = self._streaming_call
        self._streaming_call = None
        self.assembler.tool_input_object(key, args)
        delta = self.assembler.tool_input(key, orjson.dumps(args).decode())
        return [delta, self.assembler.tool_end(key)]

    def _whole_call(self, call: dict[str, Any], signature: str | None) -> list[StreamEvent]:
        key = self._new_block("call", False)
        self._open = None  # a call never extends
        provider_id = call.get("id") if isinstance(call.get("id"), str) else None
        name = str(call.get("name"))
        args = call.get("args")
        start = self.assembler.tool_start(key, provider_id, name)
        self._has_calls = True
        if args is None:
            args = {}
        if not isinstance(args, dict):
            delta = self.assembler.tool_input(key, orjson.dumps(args).decode())
            return [start, delta, self.assembler.tool_end(key)]  # an error event: not an object
        self.assembler.tool_input_object(key, args)
        delta = self.assembler.tool_input(key, orjson.dumps(args).decode())
        if signature is not None:
            self._signatures.tool_use[start.id] = signature
        return [start, delta, self.assembler.tool_end(key)]

    def _thought(self, text: str, signature: str | None) -> list[StreamEvent]:
        if self._open != "thinking" or (signature is not None and self._open_signed):
            self._new_block("thinking", False)
        key = self._key
        events: list[StreamEvent] = []
        delta = self.assembler.thinking(key, text)
        if text:
            events.append(delta)
        if signature is not None:
            self.assembler.thinking_signature(key, signature)
            self._open_signed = True
        return events

    # --- endings -------------------------------------------------------------------------------

    def _stream_error(self, error: dict[str, Any]) -> list[StreamEvent]:
        message = str(error.get("message") or "error inside the stream")
        code = error.get("code") if isinstance(error.get("code"), int) else None
        status = error.get("status") if isinstance(error.get("status"), str) else None
        klass = error_class_for(code, status, message)
        self._store_signatures()
        return self.assembler.fail(klass.value, f"Gemini: {message}", retryable=klass in RETRYABLE_CLASSES)

    def _store_signatures(self) -> None:
        if self._signatures:
            self.assembler.provider_raw[RAW_KEY] = self._signatures.to_raw()

    def finish(self) -> list[StreamEvent]:
        return self.end(body_complete=False)

    def end(self, *, body_complete: bool) -> list[StreamEvent]:
        """Close the message. `body_complete` is True for a non-streaming body, where a missing
        finishReason is tolerated; a stream without one was cut off."""
        assembler = self.assembler
        if assembler.finished:
            return []
        events: list[StreamEvent] = []
        if self._streaming_call is not None and (self._finish_reason is not None or body_complete):
            events.extend(self._close_streaming_call())  # finished without its closing part
        if self._usage is not None:
            events.append(assembler.set_usage(usage_from_gemini(self._usage)))
        if self._grounding is not None and self._last_text_key is not None:
            for citation in grounding_citations(self._grounding, assembler.origin):
                assembler.citation(self._last_text_key, citation)  # the answer's text is what it grounds
        self._store_signatures()
        if self._finish_reason is None and self._block_reason is None and not body_complete:
            events.extend(assembler.fail(
                ErrorClass.NETWORK.value,
                "Gemini stream ended before any chunk carried a finishReason (connection dropped or "
                "body cut off); the partial answer is kept — retry to get a complete one",
                retryable=True,
            ))
            return events
        if self._finish_reason in FAILED_CALL_REASONS:
            detail = assembler.provider_raw.get("finish_message") or self._finish_reason
            events.extend(assembler.fail(ErrorClass.OTHER.value,
                                         f"Gemini could not produce a valid tool call ({detail}); retry the turn",
                                         retryable=False))
            return events
        stop = "refusal" if self._block_reason else stop_reason_for(self._finish_reason,
                                                                     has_tool_calls=self._has_calls)
        events.extend(assembler.complete(stop))
        return events

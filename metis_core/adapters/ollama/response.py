"""A non-streaming Ollama `/api/chat` body -> one canonical Message.

The body has the shape of a final stream line, so it goes through the stream translator's line
reader: both paths build the Message with the same assembler and cannot drift apart. A body that is
an NDJSON stream after all (a server that ignored `stream: false`) is folded line by line. An
`{"error"}` body is raised as the matching ProviderError; a body without `message` is malformed.
"""

from __future__ import annotations

from typing import Any

import orjson

from metis_core.adapters.base import RequestContext
from metis_core.adapters.ollama.errors import PROVIDER, error_class_for_text
from metis_core.adapters.ollama.stream import OllamaStreamTranslator
from metis_core.errors import ERROR_CLASS_TYPES, ErrorClass, MalformedResponseError
from metis_core.messages import Message, MessageComplete, StreamEvent
from metis_core.transport.framing import decode_all
from metis_core.transport.wire import WireResponse, request_id_from_headers


def _malformed(response: WireResponse, problem: str) -> MalformedResponseError:
    return MalformedResponseError(
        problem, provider=PROVIDER, status=response.status, request_id=request_id_from_headers(response.headers)
    )


def _final_message(events: list[StreamEvent]) -> Message | None:
    for event in reversed(events):
        if isinstance(event, MessageComplete):
            message: Message = event.message
            return message
    return None


def _fold_ndjson(response: WireResponse, context: RequestContext) -> Message:
    translator = OllamaStreamTranslator(context)
    events: list[StreamEvent] = []
    for chunk in decode_all(response.body, "ndjson"):
        events.extend(translator.feed(chunk))
    events.extend(translator.finish())
    message = _final_message(events)
    if message is None:  # pragma: no cover - finish() always ends the message
        raise _malformed(response, "the NDJSON body produced no message")
    return message


def parse_chat_response(response: WireResponse, context: RequestContext) -> Message:
    try:
        body: Any = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        stripped = response.body.strip()
        if stripped.startswith(b"{") and b"\n" in stripped:
            return _fold_ndjson(response, context)
        body = response.json(PROVIDER)  # raises MalformedResponseError with an excerpt
    if not isinstance(body, dict):
        raise _malformed(response, f"expected a JSON object, got {type(body).__name__}")
    error = body.get("error")
    if error is not None:
        text = error if isinstance(error, str) else orjson.dumps(error).decode()
        error_class: ErrorClass = error_class_for_text(text)
        raise ERROR_CLASS_TYPES[error_class](
            text, provider=PROVIDER, status=response.status, request_id=request_id_from_headers(response.headers)
        )
    if not isinstance(body.get("message"), dict):
        raise _malformed(response, f"the body has no `message` object (keys: {sorted(body)[:10]})")
    translator = OllamaStreamTranslator(context)
    events = translator.apply(body)
    if body.get("done") is not True:
        events.extend(translator.abort(ErrorClass.OTHER, "Ollama answered with done: false; the reply is incomplete"))
    message = _final_message(events)
    if message is None:  # pragma: no cover - apply/abort always end the message
        raise _malformed(response, "the body produced no message")
    return message

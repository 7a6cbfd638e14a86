"""A non-streaming `generateContent` body -> one canonical assistant Message.

The body is checked for the shape every answer has (an object with `candidates` or a
`promptFeedback` block), then fed through the stream translator as a single chunk so streaming and
non-streaming produce the same Message. Only `candidates[0]` is read (we never ask for more).
It does not classify error bodies (errors.py).
"""

from __future__ import annotations

from metis_core.adapters.base import RequestContext
from metis_core.adapters.gemini.stream import GeminiStreamTranslator
from metis_core.errors import MalformedResponseError
from metis_core.messages import Message, MessageComplete
from metis_core.transport.wire import WireResponse

PROVIDER = "gemini"


def parse_response(response: WireResponse, context: RequestContext) -> Message:
    body = response.json(PROVIDER)

    def malformed(problem: str) -> MalformedResponseError:
        return response.malformed(PROVIDER, f"Gemini response {problem}")

    if not isinstance(body, dict):
        raise malformed("is not a JSON object")
    candidates = body.get("candidates")
    if candidates is None and not isinstance(body.get("promptFeedback"), dict):
        raise malformed("has neither candidates nor promptFeedback")
    if candidates is not None and (not isinstance(candidates, list) or not candidates
                                   or not isinstance(candidates[0], dict)):
        raise malformed("has a candidates field that is not a non-empty list of objects")
    translator = GeminiStreamTranslator(context)
    events = translator.consume(body)
    events.extend(translator.end(body_complete=True))
    for event in reversed(events):
        if isinstance(event, MessageComplete):
            message: Message = event.message
            return message
    raise malformed("could not be turned into a message")  # pragma: no cover - end() always completes

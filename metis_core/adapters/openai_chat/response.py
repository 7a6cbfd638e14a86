"""A non-streaming Chat Completions body -> one canonical assistant Message.

The body's `choices[0].message` is applied as a single delta through the same translator the
stream uses, so a response and its stream produce the same Message. Keeps choice 0 when n>1 (the
others are counted in provider_raw). Leading keep-alive whitespace is fine; a body that is not
JSON, lacks `choices[0].message`, or carries an `error` object raises the matching ProviderError.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters.openai_chat.stream import ChatStreamTranslator
from metis_core.errors import MalformedResponseError
from metis_core.messages import Message
from metis_core.transport.wire import WireResponse


def _malformed(response: WireResponse, provider: str, problem: str) -> MalformedResponseError:
    return response.malformed(provider, f"chat completion body {problem}")


def first_choice(body: Any, response: WireResponse, provider: str) -> dict[str, Any]:
    """choices[0] (the one with index 0), or the error the body stands for."""
    if not isinstance(body, dict):
        raise _malformed(response, provider, "is not a JSON object")
    if isinstance(body.get("error"), dict):
        from metis_core.adapters.openai_chat.errors import provider_error  # error bodies only

        raise provider_error(body["error"], provider=provider, status=None, headers=response.headers)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _malformed(response, provider, "has no choices")
    choice = choices[0]
    if len(choices) > 1 or not isinstance(choice, dict) or choice.get("index", 0) != 0:  # n > 1, or out of order
        choice = next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), choice)
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise _malformed(response, provider, "has no choices[0].message object")
    return choice


def parse_chat_response(response: WireResponse, translator: ChatStreamTranslator) -> Message:
    provider = translator.context.provider
    body = response.json(provider)
    choice = first_choice(body, response, provider)
    if "id" in body:
        translator.note_response(body)
    if len(body["choices"]) > 1:  # the choices beyond the one kept are counted in provider_raw
        translator.ignored_choices.update(
            c.get("index", i) for i, c in enumerate(body["choices"]) if c is not choice and isinstance(c, dict)
        )
    translator.apply_message(choice["message"])
    translator.apply_finish_reason(choice.get("finish_reason") or "stop")
    if isinstance(body.get("usage"), dict):
        translator.apply_usage(body["usage"])
    return translator.final_message()

"""A non-streaming Chat Completions body -> one canonical assistant Message.

`read_chat_response` reads the body straight into canonical blocks: a body is one wire format, the
chunk sequence of a stream another (stream.py reads those). Both build blocks, map finish reasons,
read usage and parse tool arguments with the same helpers, and the tests hold them to the same
Message for the same answer. A dialect whose additions live in its stream translator (reasoning,
think tags, content filters) has its body applied through it as one delta (`parse_chat_response`).
Keeps choice 0 when n>1 (the others are counted in provider_raw). A body that is not JSON, lacks
`choices[0].message`, or carries an `error` object raises the matching ProviderError.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import orjson

from metis_core.adapters._common.json_hashable import hashable_json
from metis_core.adapters._common.response_message import assistant_message
from metis_core.adapters.openai_chat.request import CUSTOM_CALLS_KEY, RAW_ARGUMENTS_KEY, REFUSAL_KEY, compact_json
from metis_core.adapters.openai_chat.usage import usage_from_chat
from metis_core.errors import MalformedResponseError
from metis_core.messages import BlockOrigin, Citation, Message, MessageStatus, TextBlock, ToolUseBlock, prechecked
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.adapters.base import RequestContext
    from metis_core.adapters.openai_chat.stream import ChatStreamTranslator

log = logging.getLogger("metis_core.adapters.openai_chat")
_COMPLETE = MessageStatus.COMPLETE  # bound once: a `MessageStatus.X` lookup is slow on Python 3.11
API = "chat_completions"

FINISH_REASONS: dict[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
    "error": "error",
}


def chat_stop_reason(finish_reason: str | None, refused: bool) -> str:
    """The canonical stop reason of a Chat answer: `refusal` when it refused, else its finish_reason's."""
    if refused:
        return "refusal"
    return FINISH_REASONS.get(finish_reason or "stop", "end_turn")


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, bool]:
    """A call's whole `arguments` text (not blank) as the object it holds (None: not JSON, or not an object),
    and whether the text must be kept verbatim: it is not the object's compact JSON, and replayed as sent,
    this provider's prompt cache sees the same bytes."""
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None, False
    if not isinstance(parsed, dict):
        return None, False
    return parsed, compact_json(parsed) != raw


def url_citation(annotation: dict[str, Any], origin: BlockOrigin) -> Citation:
    """A Chat `url_citation` annotation as a canonical citation; its payload is the annotation as sent
    (`{type, url_citation: {start_index, end_index, url, title}}`, spans into the message's content)."""
    inner = annotation.get("url_citation")
    fields = inner if isinstance(inner, dict) else {}
    url, title = fields.get("url"), fields.get("title")
    return Citation(url=url if isinstance(url, str) else None, title=title if isinstance(title, str) else None,
                    payload=annotation, origin=origin)


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


def _string(value: object, what: str, provider: str) -> str:
    """`value` when it is a string, else the error the stream's assembler names for the same value."""
    if not isinstance(value, str):
        raise MalformedResponseError(f"{what} is {type(value).__name__}, not a string", provider=provider)
    return value


class _Call:
    """One tool call of the answer: its canonical id, name and `arguments` (or custom `input`) parts."""

    __slots__ = ("custom", "name", "parts", "provider_id", "tool_id")

    def __init__(self, provider_id: str | None, custom: bool, name: str, tool_id: str) -> None:
        self.provider_id = provider_id
        self.custom = custom
        self.name = name
        self.tool_id = tool_id
        self.parts: list[str] = []


def _tool_calls(tool_calls: Any, context: RequestContext) -> list[_Call]:
    """The message's calls, grouped as the stream groups its fragments: by `index` AND `id` (a new id at a used
    index is a new call); each new call's canonical id issued in order."""
    provider = context.provider
    by_index: dict[Hashable, _Call] = {}
    calls: list[_Call] = []
    for position, call in enumerate(tool_calls):
        index = call.get("index", position)
        provider_id = call.get("id") or None
        kind = call.get("type")  # Snowflake sends an empty `custom` beside every `function`
        custom = kind == "custom" if kind else "custom" in call and "function" not in call
        body = call.get("custom" if custom else "function") or {}
        current = by_index.get(index)
        if current is None or (provider_id is not None and current.provider_id not in (None, provider_id)):
            name = body.get("name") or ""
            name = _string(name, "tool name", provider)
            if provider_id is not None:
                provider_id = _string(provider_id, "tool call id", provider)
            current = _Call(provider_id, custom, name, context.tool_ids.issue(provider, provider_id))
            by_index[index] = current
            calls.append(current)
        elif provider_id is not None and current.provider_id is None:
            current.provider_id = provider_id
        fragment = body.get("input" if custom else "arguments")
        if fragment:
            current.parts.append(fragment if custom else _string(fragment, "tool arguments fragment", provider))
    return calls


def _text_blocks(message: dict[str, Any], raw: dict[str, Any], context: RequestContext) -> tuple[list[Any], bool]:
    """The message's text, refusal and cited text as blocks, in the order the stream's assembler places them;
    and whether the model refused."""
    provider = context.provider
    text = message.get("content")
    if text:
        if isinstance(text, list):  # some servers send content parts
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        if text:
            text = _string(text, "text", provider)
    refusal = message.get("refusal")
    if refusal:
        raw[REFUSAL_KEY] = "" + refusal  # as the stream joins its refusal deltas (a non-string fails alike)
        refusal = _string(refusal, "text", provider)
    citations: list[Citation] | None = None
    if "annotations" in message and (annotations := message["annotations"]) and isinstance(annotations, list):
        origin = BlockOrigin(provider=provider, api=API, model=context.model_name)
        citations = [url_citation(a, origin) for a in annotations
                     if isinstance(a, dict) and a.get("type") == "url_citation"] or None
    content: list[Any] = []
    if text:
        content.append(TextBlock(text=text, citations=citations) if citations
                       else prechecked.cited_text_block(text, None))
    if refusal:
        content.append(prechecked.cited_text_block(refusal, None))
    if not text and citations:
        content.append(TextBlock(text="", citations=citations))
    return content, bool(refusal)


def _add_calls(calls: list[_Call], content: list[Any], raw: dict[str, Any]) -> tuple[list[str], int]:
    """Each call with usable arguments and a name as a block; (what was wrong with each unusable one, how many
    had no name), as the stream's assembler leaves such calls out."""
    broken: list[str] = []
    nameless = 0
    for call in calls:
        arguments = "".join(call.parts)
        tool_input: dict[str, Any] | None
        if call.custom:
            tool_input = {"input": arguments}
            raw.setdefault(CUSTOM_CALLS_KEY, []).append(call.tool_id)
        elif arguments.strip():
            tool_input, verbatim = parse_arguments(arguments)
            if tool_input is not None:
                if verbatim:
                    raw.setdefault(RAW_ARGUMENTS_KEY, {})[call.tool_id] = arguments
                if not hashable_json(tool_input):
                    tool_input, arguments = None, "<arguments with numbers or nesting no JSON hash can hold>"
        else:
            tool_input = {}
        if tool_input is None:
            broken.append(f"tool {call.name!r} arguments are not a JSON object: {arguments[:200]!r}")
        elif not call.name:  # nothing could run it and every provider refuses it as history
            nameless += 1
        elif type(call.name) is str and type(tool_input) is dict:
            content.append(prechecked.tool_use_block(call.tool_id, call.name, tool_input))
        else:
            content.append(ToolUseBlock(id=call.tool_id, name=call.name, input=tool_input))
    return broken, nameless


def read_chat_response(response: WireResponse, context: RequestContext) -> Message:
    """The whole answer read straight into canonical blocks (no stream translator: there is no stream).

    Gives exactly the Message the stream translator builds from the same answer sent as one delta
    (tests compare the two on every recorded response and on broken variants of them)."""
    provider = context.provider
    body = response.json(provider)
    choice = first_choice(body, response, provider)
    raw: dict[str, Any] = {}
    if "id" in body:
        raw["response_id"] = body["id"]
        if body.get("model"):
            raw["served_model"] = body["model"]
    choices = body["choices"]
    ignored = len({c.get("index", i) for i, c in enumerate(choices) if c is not choice and isinstance(c, dict)}
                  ) if len(choices) > 1 else 0
    message = choice["message"]
    content, refused = _text_blocks(message, raw, context)
    calls = _tool_calls(tool_calls, context) if "tool_calls" in message and (tool_calls := message["tool_calls"]) \
        else []
    finish_reason = choice.get("finish_reason") or "stop"
    raw["finish_reason"] = finish_reason
    broken, nameless = _add_calls(calls, content, raw) if calls else ([], 0)
    raw_usage = body.get("usage")
    usage = usage_from_chat(raw_usage) if isinstance(raw_usage, dict) else None
    if ignored:
        raw["ignored_choices"] = ignored
    stop_reason = chat_stop_reason(finish_reason, refused)
    status = _COMPLETE
    if nameless:
        log.warning("dropped %d tool call(s) without a name from %s", nameless, context.model,
                    extra={"session_id": context.session_id, "model": context.model})
        raw["nameless_tool_calls"] = nameless
    if broken:  # unusable arguments: those calls are left out, the message PARTIAL
        status = MessageStatus.PARTIAL
        raw["incomplete"] = "max_tokens" if stop_reason == "max_tokens" else "invalid tool arguments"
        for problem in broken:
            log.warning("response for %s is incomplete: %s", context.model, problem)
    return assistant_message(context, content, status, stop_reason, usage, raw)

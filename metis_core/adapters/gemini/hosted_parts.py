"""Parts of a Gemini answer that record the provider's own work, as canonical hosted blocks.

`executableCode` / `codeExecutionResult` (code execution) and Gemini 3's server-side tool parts
`toolCall` / `toolResponse` (Google Search, URL context, file search, Maps, ... run by Google)
become `ProviderToolCallBlock` / `ProviderToolResultBlock`; an image the model generated
(`inlineData`) a `ProviderToolResultBlock` named `generated_image`. Each keeps the part exactly as
sent (thought signature included) for a verbatim replay to Gemini, and a text rendering for any
other target. Nothing here is ever a client tool call; the replay itself is hosted.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from metis_core.adapters._common.hosted import readable
from metis_core.adapters.gemini.signatures import API, PROVIDER, to_standard_base64
from metis_core.messages import BlockOrigin, ImageBlock, ImageSource, ProviderToolCallBlock, ProviderToolResultBlock

CODE_CALL, CODE_RESULT = "executableCode", "codeExecutionResult"
TOOL_CALL, TOOL_RESPONSE = "toolCall", "toolResponse"
INLINE_DATA = "inlineData"
HOSTED_PART_KEYS = (CODE_CALL, CODE_RESULT, TOOL_CALL, TOOL_RESPONSE, INLINE_DATA)
GENERATED_IMAGE = "generated_image"
OK_OUTCOME = "OUTCOME_OK"

TOOL_NAMES = {"GOOGLE_SEARCH_WEB": "web_search", "URL_CONTEXT": "web_fetch", "FILE_SEARCH": "file_search",
              "GOOGLE_MAPS": "google_maps", "GOOGLE_SEARCH_IMAGE": "image_search"}
"""`toolType` -> the block's name: the canonical hosted tool name where there is one."""
UNRENDERED_KEYS = frozenset({"search_suggestions"})
"""Response fields that are markup for the app to show (Google's search chips), not facts for a model."""

HostedBuilder = Callable[[dict[str, Any], str, BlockOrigin], Any]


def is_hosted_part(part: dict[str, Any]) -> bool:
    return any(key in part for key in HOSTED_PART_KEYS)


class HostedPartReader:
    """Builders for the hosted parts of one model turn, in order, linking each result to its call.

    Gemini 3 gives calls and results an `id`; Gemini 2's code parts have none, and a result then
    answers the call before it. A call without an id is named by its position among the turn's
    parts of its kind, so a stream and a body agree."""

    def __init__(self) -> None:
        self._count = {CODE_CALL: 0, TOOL_CALL: 0}
        self._last_call: dict[str, str | None] = {CODE_CALL: None, TOOL_CALL: None}

    def builder(self, part: dict[str, Any]) -> HostedBuilder:
        if INLINE_DATA in part:
            return build_generated_image
        kind = CODE_CALL if CODE_CALL in part or CODE_RESULT in part else TOOL_CALL
        self._count[kind] += 1
        if CODE_CALL in part or TOOL_CALL in part:
            body = _body(part, kind)
            prefix = "code_execution" if kind == CODE_CALL else _tool_name(body)
            call_id = str(body.get("id") or f"{prefix}_{self._count[kind]}")
            self._last_call[kind] = call_id
            call = build_code_call if kind == CODE_CALL else build_tool_call
            return partial(call, call_id=call_id)
        result = build_code_result if kind == CODE_CALL else build_tool_result
        return partial(result, call_id=self._last_call[kind] or "")


def _body(part: dict[str, Any], key: str) -> dict[str, Any]:
    body = part.get(key)
    return body if isinstance(body, dict) else {}


def _tool_name(body: dict[str, Any]) -> str:
    tool_type = body.get("toolType")
    if not isinstance(tool_type, str) or not tool_type:
        return "server_tool"
    return TOOL_NAMES.get(tool_type, tool_type.lower())


def build_code_call(payload: dict[str, Any], fragments: str, origin: BlockOrigin, *,
                    call_id: str) -> ProviderToolCallBlock:
    body = _body(payload, CODE_CALL)
    language = str(body.get("language") or "PYTHON")
    code = str(body.get("code") or "")
    text = f"[hosted tool call: code_execution]\n```{language.lower()}\n{code}\n```"
    return ProviderToolCallBlock(id=call_id, name="code_execution", input={"language": language, "code": code},
                                 text=text, payload=payload, origin=origin)


def build_code_result(payload: dict[str, Any], fragments: str, origin: BlockOrigin, *,
                      call_id: str) -> ProviderToolResultBlock:
    body = _body(payload, CODE_RESULT)
    outcome = str(body.get("outcome") or "")
    is_error = outcome != OK_OUTCOME
    output = str(body.get("output") or "")
    label = f" ({outcome})" if is_error else ""
    text = f"[hosted tool result: code_execution{label}]\n{output}".rstrip()
    return ProviderToolResultBlock(tool_use_id=str(body.get("id") or call_id), name="code_execution_result",
                                   text=text, is_error=is_error, payload=payload, origin=origin)


def build_tool_call(payload: dict[str, Any], fragments: str, origin: BlockOrigin, *,
                    call_id: str) -> ProviderToolCallBlock:
    """A `toolCall` part: a tool Google ran for this answer, with the arguments it chose (search queries)."""
    body = _body(payload, TOOL_CALL)
    name = _tool_name(body)
    args = body.get("args")
    arguments = args if isinstance(args, dict) else {}
    shown = readable(arguments)
    text = f"[hosted tool call: {name}]" + (f"\n{shown}" if shown else "")
    return ProviderToolCallBlock(id=call_id, name=name, input=arguments, text=text, payload=payload, origin=origin)


def build_tool_result(payload: dict[str, Any], fragments: str, origin: BlockOrigin, *,
                      call_id: str) -> ProviderToolResultBlock:
    """A `toolResponse` part: what the tool returned (often nothing: file search answers in grounding)."""
    body = _body(payload, TOOL_RESPONSE)
    name = _tool_name(body)
    response = body.get("response")
    response = response if isinstance(response, dict) else {}
    shown = readable({k: v for k, v in response.items() if k not in UNRENDERED_KEYS})
    text = f"[hosted tool result: {name}]" + (f"\n{shown}" if shown else "")
    return ProviderToolResultBlock(tool_use_id=str(body.get("id") or call_id), name=f"{name}_result", text=text,
                                   payload=payload, origin=origin)


def build_generated_image(payload: dict[str, Any], fragments: str, origin: BlockOrigin) -> ProviderToolResultBlock:
    """An image the model made (`responseModalities` with IMAGE; a `thought` part is an interim draft).

    Another provider cannot take an image in an assistant turn, so it is told what was there."""
    body = _body(payload, INLINE_DATA)
    mime = str(body.get("mimeType") or "application/octet-stream")
    data = body.get("data")
    size = len(data) * 3 // 4 if isinstance(data, str) else 0
    draft = " (a draft made while thinking)" if payload.get("thought") is True else ""
    text = f"[image generated by {origin.model}{draft}: {mime}, about {_kilobytes(size)}; not shown here]"
    return ProviderToolResultBlock(tool_use_id="", name=GENERATED_IMAGE, text=text, payload=payload, origin=origin)


def _kilobytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB" if size >= 1_000_000 else f"{max(1, round(size / 1000))} KB"


def generated_image(block: ProviderToolResultBlock) -> ImageBlock | None:
    """The canonical image of a `generated_image` block (base64 in the standard alphabet), for
    showing or saving it; None for any other block."""
    if block.name != GENERATED_IMAGE or not block.origin.same_api(PROVIDER, API):
        return None
    body = _body(block.payload, INLINE_DATA)
    data, mime = body.get("data"), body.get("mimeType")
    if not isinstance(data, str) or not isinstance(mime, str):
        return None
    return ImageBlock(source=ImageSource(kind="base64", data=to_standard_base64(data)), media_type=mime)

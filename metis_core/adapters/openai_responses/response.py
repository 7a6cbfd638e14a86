"""A Responses API response body -> one canonical assistant Message.

Output items map in order: `message` parts -> text blocks (a refusal part becomes text and stop
reason `refusal`), `reasoning` -> a thinking block (summary parts joined, `encrypted_content` as
the signature, origin stamped by the assembler), `function_call` -> tool_use, `custom_tool_call`
-> tool_use with input `{"input": <raw text>}`, client-run shell, apply_patch and computer calls ->
`run_command` / `apply_patch` / `computer` tool_use (client_tools.py), hosted-tool items and `compaction` -> hosted
blocks (hosted.py), output_text annotations -> citations. Built through the same MessageAssembler the stream
uses, so both paths give the same Message. It does not read streams (stream.py).
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.base import RequestContext
from metis_core.adapters.openai_responses import client_tools, hosted
from metis_core.adapters.openai_responses.errors import PROVIDER, error_class_for, error_type_for
from metis_core.adapters.openai_responses.raw import API, RawRecord, join_summary
from metis_core.adapters.openai_responses.usage import usage_from_responses
from metis_core.errors import (
    RETRYABLE_CLASSES,
    ErrorClass,
    MalformedResponseError,
    OtherProviderError,
    ProviderError,
    RequestCancelledError,
)
from metis_core.messages import Message, MessageComplete, StreamEvent, ToolUseEnd
from metis_core.transport.wire import WireResponse, request_id_from_headers

TERMINAL_STATUSES = frozenset({"completed", "incomplete", "failed", "cancelled"})


def message_from_response(response: WireResponse, context: RequestContext) -> Message:
    body = response.json(PROVIDER)
    request_id = request_id_from_headers(response.headers)
    if not isinstance(body, dict) or not isinstance(body.get("output"), list):
        raise _malformed("the body has no `output` list; is this a Responses API reply?", response)
    status = body.get("status")
    if status == "failed":
        raise failure_error(body.get("error"), status=response.status, request_id=request_id)
    if status == "cancelled":
        raise RequestCancelledError("the response was cancelled", provider=PROVIDER, request_id=request_id)
    if status not in TERMINAL_STATUSES:
        raise OtherProviderError(
            f"response status is {status!r}; background responses are not supported, do not set `background`",
            provider=PROVIDER,
            status=response.status,
            request_id=request_id,
        )
    assembler = MessageAssembler(context, api=API)
    record = RawRecord()
    for position, item in enumerate(body["output"]):
        if not isinstance(item, dict):
            raise _malformed(f"output[{position}] is not an object", response)
        add_output_item(assembler, record, position, item)
    assembler.set_usage(usage_from_responses(body.get("usage")))
    final = end_response(assembler, record, body)[-1]
    assert isinstance(final, MessageComplete)
    message: Message = final.message
    return message


def add_output_item(assembler: MessageAssembler, record: RawRecord, position: int, item: dict[str, Any]) -> None:
    """Add one whole output item (non-streaming, or an item a stream only delivered whole)."""
    kind = item.get("type")
    if kind == "message":
        for index, part in enumerate(item.get("content") or ()):
            text = part_text(part, record)
            if text:
                assembler.text(text_key(position, index), text)
        add_annotations(assembler, position, item)
        record.add_message([text_key(position, i) for i in range(len(item.get("content") or ()))], item)
    elif client_tools.is_client_call(item):
        client_id, tool_name, tool_input = client_tools.call_input(item, position)
        start = assembler.tool_start(position, client_id, tool_name)
        assembler.tool_input_object(position, tool_input)
        record.client_calls[start.id] = dict(item)
        assembler.tool_end(position)
    elif hosted.is_hosted(kind):
        assembler.hosted(position, dict(item), hosted.build_item)
    elif kind == "reasoning":
        parts, from_content = reasoning_texts(item)
        text = join_summary(parts)
        signature = item.get("encrypted_content")
        has_block = bool(text) or isinstance(signature, str)
        if has_block:
            assembler.thinking(position, text)
            if isinstance(signature, str):
                assembler.thinking_signature(position, signature)
        record.add_reasoning(item.get("id"), has_block, [len(part) for part in parts], from_content)
    elif kind in ("function_call", "custom_tool_call"):
        call_id, name = item.get("call_id"), item.get("name")
        if not isinstance(name, str) or not name:
            raise MalformedResponseError(f"output[{position}] ({kind}) has no name", provider=PROVIDER)
        start = assembler.tool_start(position, call_id if isinstance(call_id, str) else None, name)
        record.add_namespace(start.id, item)
        if kind == "custom_tool_call":
            raw_input = item.get("input")
            assembler.tool_input_object(position, {"input": raw_input if isinstance(raw_input, str) else ""})
            record.custom_tool_calls.append(start.id)
            assembler.tool_end(position)
        else:
            arguments = item.get("arguments")
            arguments = arguments if isinstance(arguments, str) else ""
            assembler.tool_input(position, arguments)
            end = assembler.tool_end(position)
            if isinstance(end, ToolUseEnd):
                record.add_arguments(end.id, arguments, end.input)
    elif isinstance(kind, str):
        record.unhandled_items.append(kind)


def add_annotations(assembler: MessageAssembler, position: int, item: dict[str, Any]) -> None:
    """Annotations (url, file and container-file citations) of a message's text parts."""
    for index, part in enumerate(item.get("content") or ()):
        if isinstance(part, dict) and part.get("text"):
            for annotation in part.get("annotations") or ():
                if isinstance(annotation, dict):
                    assembler.citation(text_key(position, index), hosted.citation(annotation, assembler.origin))


def text_key(position: int, content_index: int) -> tuple[str, int, int]:
    return ("text", position, content_index)


def part_text(part: Any, record: RawRecord) -> str:
    if not isinstance(part, dict):
        return ""
    if part.get("type") == "refusal":
        record.refusal = True
        refusal = part.get("refusal")
        return refusal if isinstance(refusal, str) else ""
    text = part.get("text")
    return text if isinstance(text, str) else ""


def summary_texts(item: dict[str, Any]) -> list[str]:
    return [
        part["text"]
        for part in item.get("summary") or ()
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]


def reasoning_texts(item: dict[str, Any]) -> tuple[list[str], bool]:
    """A reasoning item's text parts: its summary, else its raw `reasoning_text` content (gpt-oss and
    Responses-compatible servers send the reasoning itself); True when they came from the content."""
    summary = summary_texts(item)
    if summary:
        return summary, False
    content = [
        part["text"]
        for part in item.get("content") or ()
        if isinstance(part, dict) and part.get("type") == "reasoning_text" and isinstance(part.get("text"), str)
    ]
    return content, bool(content)


def end_response(assembler: MessageAssembler, record: RawRecord, response: dict[str, Any]) -> list[StreamEvent]:
    """Close the message for a terminal response object: stop reason, raw data, status."""
    record.set_response(response)
    for key, kept in record.text_keys:
        ordinal = assembler.text_ordinal(key)
        if ordinal is not None:
            record.text_parts[str(ordinal)] = kept
    assembler.provider_raw.update(record.as_provider_raw())
    status = response.get("status")
    if status == "completed":
        has_tool = bool(record.custom_tool_calls or record.client_calls) or any(
            isinstance(item, dict) and item.get("type") == "function_call" for item in response.get("output") or ()
        )
        return assembler.complete("refusal" if record.refusal else "tool_use" if has_tool else "end_turn")
    if status == "incomplete":
        reason = record.response.get("incomplete_reason")
        if reason == "max_output_tokens":
            return assembler.complete("max_tokens")
        if reason == "content_filter":
            return assembler.complete("refusal")
        return assembler.fail(ErrorClass.OTHER.value, f"the response ended incomplete ({reason or 'no reason given'})")
    if status == "cancelled":
        return assembler.fail(ErrorClass.CANCELLED.value, "the response was cancelled")
    error = response.get("error")
    code, message = _error_code_message(error)
    error_class = error_class_for(code, message)
    return assembler.fail(error_class.value, message, retryable=error_class in RETRYABLE_CLASSES)


def failure_error(error: Any, *, status: int | None = None, request_id: str | None = None) -> ProviderError:
    """The exception for a `failed` response (its `error` object holds a code and a message)."""
    code, message = _error_code_message(error)
    return error_type_for(code, message)(
        message, provider=PROVIDER, status=status, request_id=request_id, provider_code=code
    )


def _error_code_message(error: Any) -> tuple[str | None, str]:
    if not isinstance(error, dict):
        return None, "the response failed without an error object"
    code = error.get("code")
    message = error.get("message")
    return (
        code if isinstance(code, str) else None,
        message if isinstance(message, str) and message else f"the response failed ({code})",
    )


def _malformed(problem: str, response: WireResponse) -> MalformedResponseError:
    return response.malformed(PROVIDER, problem)

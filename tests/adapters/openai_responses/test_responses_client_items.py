"""Client-run apply_patch and computer calls, and what a Responses request carries back: read by the
request reader into canonical tool calls and results (phase and logprobs kept on assistant text), and
written back as the same items. The computer_call body follows the SDK's ResponseComputerToolCall type
(no public recording has one)."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
from mock_http import serve

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.adapters.openai_responses.request_reader import read_request
from metis_core.messages import ImageBlock, ImageSource, Message, Role, tool_result_message, user_message

MODEL = "openai_responses:gpt-5-mini"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
CLICK = {"type": "click", "button": "left", "x": 156, "y": 50}
CHECKS = [{"id": "cu_sc_1", "code": "malicious_instructions", "message": "check the page"}]
COMPUTER_CALL = {"type": "computer_call", "id": "cu_67cc", "call_id": "call_zw3", "action": CLICK,
                 "pending_safety_checks": CHECKS, "status": "completed"}


def parsed(output: list[dict[str, Any]], ids: ToolIdMap) -> Message:
    body = {"id": "resp_1", "object": "response", "status": "completed", "model": "computer-use-preview",
            "output": output, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}
    client, _ = serve(httpx.Response(200, content=json.dumps(body).encode()), provider="openai_responses",
                      api_key="sk-x")
    message: Message = client.complete([user_message("open the page")], model=MODEL, tool_ids=ids)
    return message


def written(history: list[Message], ids: ToolIdMap) -> tuple[Any, list[Any]]:
    wire = OpenAIResponsesAdapter().to_wire(history, [], AdapterOptions(model=MODEL), ids)
    return wire.body["input"], wire.dropped


def test_a_computer_call_is_a_computer_tool_call_answered_with_a_screenshot() -> None:
    ids = ToolIdMap()
    message = parsed([COMPUTER_CALL], ids)
    [use] = message.tool_uses()
    assert (use.name, use.input) == ("computer", {"action": CLICK, "pending_safety_checks": CHECKS})
    assert message.metadata.stop_reason == "tool_use"
    screenshot = ImageBlock(source=ImageSource(kind="base64", data=PNG), media_type="image/png")
    items, dropped = written([user_message("open the page"), message, tool_result_message(use.id, [screenshot])], ids)
    assert dropped == []
    assert items[1:] == [COMPUTER_CALL, {"type": "computer_call_output", "call_id": "call_zw3",
                                     "output": {"type": "computer_screenshot",
                                                "image_url": f"data:image/png;base64,{PNG}"}}]


def test_a_computer_call_answered_without_a_screenshot_is_left_out_with_its_result_and_logged() -> None:
    ids = ToolIdMap()
    message = parsed([COMPUTER_CALL], ids)
    result = tool_result_message(message.tool_uses()[0].id, "no display here", is_error=True)
    items, dropped = written([user_message("open the page"), message, result], ids)
    assert items == "open the page"  # only the user's turn is left, in its bare-string form
    assert [d.block_type for d in dropped] == ["tool_result"]


def test_a_request_reads_client_items_and_their_outputs_and_writes_them_back_verbatim() -> None:
    patch_call = {"type": "apply_patch_call", "id": "apc_1", "call_id": "call_p", "status": "completed",
                  "operation": {"type": "update_file", "path": "a.py", "diff": "-x = 1\n+x = 2\n"}}
    patch_output = {"type": "apply_patch_call_output", "call_id": "call_p", "status": "failed",
                    "output": "context not found"}
    computer_output = {"type": "computer_call_output", "call_id": "call_zw3", "acknowledged_safety_checks": CHECKS,
                       "output": {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{PNG}"}}
    body = {"model": "computer-use-preview", "tools": [{"type": "apply_patch"}],
            "input": [{"role": "user", "content": "fix it"}, patch_call, patch_output, COMPUTER_CALL, computer_output]}
    ids = ToolIdMap()
    read = read_request(copy.deepcopy(body), tool_ids=ids)
    calls = [m.tool_uses()[0] for m in read.messages if m.role is Role.ASSISTANT]
    assert [(c.name, c.input.get("operation")) for c in calls] == [("apply_patch", "update_file"), ("computer", None)]
    results = [m.tool_results()[0] for m in read.messages if m.role is Role.TOOL]
    assert results[0].is_error and results[0].text() == "context not found"
    assert isinstance(results[1].content[0], ImageBlock)
    rebuilt = OpenAIResponsesAdapter().to_wire(read.messages, read.tools, read.options, ids).body
    assert rebuilt["input"] == body["input"]


def test_phase_and_logprobs_of_assistant_text_and_the_logprobs_options_go_back_upstream() -> None:
    logprobs = [{"token": "Hi", "bytes": [72, 105], "logprob": -0.01, "top_logprobs": []}]
    commentary = {"type": "message", "role": "assistant", "phase": "commentary",
                  "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]}
    final = {"type": "message", "role": "assistant", "phase": "final_answer",
             "content": [{"type": "output_text", "text": "Hi", "annotations": [], "logprobs": logprobs}]}
    body = {"model": "gpt-5.4", "include": ["message.output_text.logprobs"], "top_logprobs": 2,
            "input": [{"role": "user", "content": "hello"}, commentary, final, {"role": "user", "content": "again"}]}
    read = read_request(copy.deepcopy(body))
    assert [m.text() for m in read.messages if m.role is Role.ASSISTANT] == ["Looking.Hi"]
    rebuilt = OpenAIResponsesAdapter().to_wire(read.messages, read.tools, read.options, ToolIdMap()).body
    assert rebuilt["input"] == body["input"]
    assert rebuilt["include"] == ["message.output_text.logprobs"] and rebuilt["top_logprobs"] == 2


def test_a_function_call_a_program_made_keeps_its_caller_and_its_output_names_the_same_caller() -> None:
    """Programmatic tool calling, shaped after the SDK's Program item and `caller` fields."""
    program = {"type": "program", "id": "cm_1", "call_id": "call_prog", "code": "await tools.getStock({})",
               "fingerprint": "gAAAA-fp"}
    caller = {"type": "program", "caller_id": "call_prog"}
    call = {"type": "function_call", "id": "fc_1", "status": "in_progress", "call_id": "call_f", "name": "getStock",
            "arguments": "{}", "caller": caller}
    ids = ToolIdMap()
    message = parsed([program, call], ids)
    [use] = message.tool_uses()
    items, dropped = written([user_message("stock?"), message, tool_result_message(use.id, "42")], ids)
    assert dropped == []
    assert items[1:] == [program, {"type": "function_call", "call_id": "call_f", "name": "getStock", "arguments": "{}",
                                   "caller": caller},
                         {"type": "function_call_output", "call_id": "call_f", "output": "42", "caller": caller}]

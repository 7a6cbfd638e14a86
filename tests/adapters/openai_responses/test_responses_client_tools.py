"""Client-run Responses tools on recorded traffic: custom (grammar) calls and client shell calls.

Each recording is served through ModelClient (httpx mock transport), read into canonical tool
calls, answered with a tool result and written back: the call goes back exactly as sent and its
output in the shape the API expects, under the recorded call_id.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest
from fixture_files import read_bytes, read_json
from mock_http import serve, sse_response

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.errors import MalformedResponseError, MetisError
from metis_core.messages import Message, MessageComplete, ProviderToolCallBlock, tool_result_message, user_message

PROVIDER = "openai_responses"
MODEL = "openai_responses:gpt-5-mini"
HISTORY = [user_message("go")]


def parsed(body: dict[str, Any], ids: ToolIdMap) -> Message:
    client, _ = serve(httpx.Response(200, content=json.dumps(body).encode()), provider=PROVIDER, api_key="sk-x")
    message: Message = client.complete(HISTORY, model=MODEL, tool_ids=ids)
    return message


def answered(message: Message, ids: ToolIdMap, output: str, is_error: bool = False) -> list[dict[str, Any]]:
    """The input items after the user turn when the single tool call is answered with `output`."""
    use = message.tool_uses()[0]
    history = [*HISTORY, message, tool_result_message(use.id, output, is_error=is_error)]
    wire = OpenAIResponsesAdapter().to_wire(history, [], AdapterOptions(model=MODEL), ids)
    assert wire.dropped == []
    return [item for item in wire.body["input"][1:] if item.get("type") != "reasoning"]


def test_a_custom_tool_calls_free_form_input_round_trips_unchanged_with_its_output() -> None:
    body = read_json(PROVIDER, "response__custom_tool_call_with_reasoning.json")
    raw_input = '4 + 4\n  {"not": json} \\ "quoted"  '
    body["output"][1]["input"] = raw_input
    ids = ToolIdMap()
    message = parsed(body, ids)
    assert message.metadata.stop_reason == "tool_use"
    assert message.tool_uses()[0].name == "math_exp" and message.tool_uses()[0].input == {"input": raw_input}
    call, output = answered(message, ids, "8")
    assert call == {"type": "custom_tool_call", "call_id": "call_H8YsBUDPYjNHSq9fWOzwetxr", "name": "math_exp",
                    "input": raw_input}
    assert output == {"type": "custom_tool_call_output", "call_id": "call_H8YsBUDPYjNHSq9fWOzwetxr", "output": "8"}


def test_a_local_shell_call_is_a_run_command_call_and_its_output_goes_back_under_its_call_id() -> None:
    body = read_json(PROVIDER, "response__hosted_local_shell_call.json")
    ids = ToolIdMap()
    message = parsed(body, ids)
    assert message.metadata.stop_reason == "tool_use"
    assert not any(isinstance(b, ProviderToolCallBlock) for b in message.content)
    use = message.tool_uses()[0]
    assert (use.name, use.input) == ("run_command", {"command": "ls"})
    call, output = answered(message, ids, "exit code 0\nnotes.txt\n")
    assert call == body["output"][1]  # replayed exactly as the API sent it
    assert output == {"type": "local_shell_call_output", "call_id": "call_XWgeTylovOiS8xLNz2TONOgO",
                      "output": "exit code 0\nnotes.txt\n"}


def test_a_client_shell_call_runs_its_commands_as_one_script_and_reports_the_exit_outcome() -> None:
    body = read_json(PROVIDER, "response__hosted_shell_call.json")
    ids = ToolIdMap()
    message = parsed(body, ids)
    use = message.tool_uses()[0]
    assert use.name == "run_command"
    assert use.input["command"].split("\n") == body["output"][0]["action"]["commands"]
    call, output = answered(message, ids, "exit code 2\nno such directory\n", is_error=True)
    assert call == body["output"][0]
    assert output == {
        "type": "shell_call_output",
        "call_id": "call_udkLUvR8lWvG8cDO2B6GNpvZ",
        "output": [{"stdout": "no such directory\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 2}}],
        "max_output_length": 9907,
    }


def test_a_shell_call_in_a_hosted_container_stays_a_hosted_item() -> None:
    message = parsed(read_json(PROVIDER, "response__hosted_shell_call_output.json"), ToolIdMap())
    assert message.tool_uses() == []
    assert [b.name for b in message.content if isinstance(b, ProviderToolCallBlock)] == ["shell_call"]


def test_a_streamed_local_shell_call_gives_the_same_call_as_the_body() -> None:
    client, _ = serve(sse_response(read_bytes(PROVIDER, "stream__hosted_local_shell_call.sse")), provider=PROVIDER,
                      api_key="sk-x")
    events = list(client.stream(HISTORY, model=MODEL))
    assert isinstance(events[-1], MessageComplete)
    use = events[-1].message.tool_uses()[0]
    assert (use.name, use.input) == ("run_command", {"command": "ls -a '~'"})  # argv ["ls", "-a", "~"], quoted
    assert events[-1].message.metadata.stop_reason == "tool_use"
    assert [type(e).__name__ for e in events if type(e).__name__.startswith("ToolUse")] == [
        "ToolUseStart", "ToolUseEnd"]


@pytest.mark.parametrize(("change", "words"), [
    (lambda item: item.pop("call_id"), "has no call_id"),
    (lambda item: item["action"].update(command=[]), "empty command"),
    (lambda item: item["action"].update(command=["  "]), "empty command"),
])
def test_a_shell_call_that_cannot_run_is_a_named_error(change: Any, words: str) -> None:
    body = copy.deepcopy(read_json(PROVIDER, "response__hosted_local_shell_call.json"))
    change(body["output"][1])
    with pytest.raises(MalformedResponseError, match=words) as caught:
        parsed(body, ToolIdMap())
    assert isinstance(caught.value, MetisError)


@pytest.mark.parametrize(("timeout_ms", "seconds"), [(2500, 2.5), (10, 1.0), (3_600_000, 600.0)])
def test_a_shell_timeout_becomes_run_commands_timeout_within_its_bounds(timeout_ms: int, seconds: float) -> None:
    body = copy.deepcopy(read_json(PROVIDER, "response__hosted_local_shell_call.json"))
    body["output"][1]["action"]["timeout_ms"] = timeout_ms
    use = parsed(body, ToolIdMap()).tool_uses()[0]
    assert use.input == {"command": "ls", "timeout_seconds": seconds}


def test_a_timed_out_shell_call_reports_a_timeout_outcome() -> None:
    ids = ToolIdMap()
    message = parsed(read_json(PROVIDER, "response__hosted_shell_call.json"), ids)
    _, output = answered(message, ids, "command timed out after 5s and was killed", is_error=True)
    assert output["output"][0]["outcome"] == {"type": "timeout"}

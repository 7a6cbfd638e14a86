"""A Responses client of the gateway gets client-run calls as the items the Responses upstream made
(apply_patch_call, shell_call, local_shell_call, custom_tool_call), streamed or not, through the official
SDK; its next request's items and their *_output items reach the upstream as the client sent them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from cli.replay_server import ReplayServer, Reply
from fixture_files import read_bytes, read_json

from .gateway_harness import GatewayHarness

RESPONSES = "/v1/responses"
MODEL = "openai_responses:gpt-5.1"


@pytest.fixture(scope="module")
def shared_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    upstream = ReplayServer().start()
    harness = GatewayHarness(tmp_path_factory.mktemp("client-tools") / "home", upstream).start()
    yield harness
    harness.stop()
    upstream.stop()


@pytest.fixture
def gateway(shared_gateway: GatewayHarness) -> GatewayHarness:
    """One gateway for the module; each test starts with no upstream requests seen or replies queued."""
    shared_gateway.upstream.requests.clear()
    shared_gateway.upstream.queues.clear()
    return shared_gateway


def client(gateway: GatewayHarness) -> openai.OpenAI:
    _, token = gateway.issue()
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)


@pytest.mark.parametrize(("recording", "tools", "kind"), [
    ("response__hosted_apply_patch_call.json", [{"type": "apply_patch"}], "apply_patch_call"),
    ("response__hosted_local_shell_call.json", [{"type": "local_shell"}], "local_shell_call"),
    ("response__custom_tool_call_with_reasoning.json",
     [{"type": "custom", "name": "math_exp", "description": "math"}], "custom_tool_call"),
])
def test_a_client_run_call_reaches_a_responses_client_as_the_upstreams_item(
        gateway: GatewayHarness, recording: str, tools: list[dict[str, str]], kind: str) -> None:
    gateway.upstream.script(RESPONSES, Reply.recording("openai_responses", recording))
    answer = client(gateway).responses.create(model=MODEL, input="go", tools=tools)  # type: ignore[arg-type]
    [got] = [item.model_dump(exclude_none=True) for item in answer.output if item.type != "reasoning"]
    [recorded] = [item for item in read_json("openai_responses", recording)["output"] if item["type"] == kind]
    if kind == "custom_tool_call":
        assert {k: got[k] for k in ("type", "call_id", "name", "input")} == {
            k: recorded[k] for k in ("type", "call_id", "name", "input")}
    else:
        assert got == recorded


def test_an_apply_patch_call_and_its_output_go_back_upstream_as_the_client_sent_them(
        gateway: GatewayHarness) -> None:
    gateway.upstream.script(RESPONSES, Reply.recording("openai_responses", "response__hosted_apply_patch_call.json"),
                            Reply.recording("openai_responses", "response__text.json"))
    sdk = client(gateway)
    first = sdk.responses.create(model=MODEL, input="make a checklist", tools=[{"type": "apply_patch"}])
    [call] = [item.model_dump(exclude_none=True) for item in first.output]
    output = {"type": "apply_patch_call_output", "call_id": call["call_id"], "status": "completed",
              "output": "created shopping-checklist.md"}
    second = sdk.responses.create(model=MODEL, tools=[{"type": "apply_patch"}], input=[
        {"role": "user", "content": "make a checklist"}, call, output])  # type: ignore[list-item]
    assert second.output_text
    sent = gateway.upstream.bodies(RESPONSES)[1]["input"]
    assert [item for item in sent if item.get("type", "").startswith("apply_patch")] == [call, output]


def test_a_streamed_shell_call_is_accumulated_by_the_sdk_as_a_shell_call(gateway: GatewayHarness) -> None:
    gateway.upstream.script(RESPONSES, Reply.recording("openai_responses", "stream__hosted_shell_call.sse"))
    with client(gateway).responses.stream(model=MODEL, input="go", tools=[{"type": "shell"}]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    [call] = [item for item in final.output if item.type == "shell_call"]
    upstream = [json.loads(line[6:]) for line in
                Reply.recording("openai_responses", "stream__hosted_shell_call.sse").body.decode().splitlines()
                if line.startswith("data: {")]
    done = [e["item"] for e in upstream if e["type"] == "response.output_item.done"
            and e["item"]["type"] == "shell_call"]
    recorded_action = {k: v for k, v in done[-1]["action"].items() if v is not None}
    assert call.model_dump(exclude_none=True)["action"] == recorded_action
    assert call.call_id == done[-1]["call_id"]


LOGPROBS = [{"token": "Hi", "bytes": [72, 105], "logprob": -0.02, "top_logprobs": []}]


def _with_phase_and_logprobs(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("type") != "message":
        return item
    item = {**item, "phase": "final_answer"}
    item["content"] = [{**part, "logprobs": LOGPROBS} for part in item["content"]]
    return item


def _marked_stream(name: str) -> bytes:
    """A recorded stream whose message item carries a phase and logprobs in its done and terminal copies."""
    lines = []
    for line in read_bytes("openai_responses", name).decode().split("\n"):
        if line.startswith("data: {"):
            event = json.loads(line[6:])
            if event["type"] == "response.output_item.done":
                event["item"] = _with_phase_and_logprobs(event["item"])
            elif event["type"] == "response.completed":
                event["response"]["output"] = [_with_phase_and_logprobs(i) for i in event["response"]["output"]]
            line = "data: " + json.dumps(event)
        lines.append(line)
    return "\n".join(lines).encode()


@pytest.mark.parametrize("streamed", [False, True])
def test_the_upstreams_phase_and_logprobs_reach_the_responses_client(gateway: GatewayHarness, streamed: bool) -> None:
    """Built from the recorded text answer with a phase and logprobs added to its message item."""
    if streamed:
        reply = Reply(200, _marked_stream("stream__text.sse"), "text/event-stream", None)
    else:
        body = read_json("openai_responses", "response__text.json")
        body["output"] = [_with_phase_and_logprobs(item) for item in body["output"]]
        reply = Reply(200, json.dumps(body).encode(), "application/json", None)
    gateway.upstream.script(RESPONSES, reply)
    sdk = client(gateway)
    asked = {"model": MODEL, "input": "hello", "include": ["message.output_text.logprobs"], "top_logprobs": 1}
    if streamed:
        with sdk.responses.stream(**asked) as stream:  # type: ignore[call-overload]
            answer = stream.get_final_response()
    else:
        answer = sdk.responses.create(**asked)  # type: ignore[call-overload]
    [message] = [item.model_dump() for item in answer.output if item.type == "message"]
    assert message["phase"] == "final_answer" and message["content"][0]["logprobs"] == LOGPROBS
    sent = gateway.upstream.bodies(RESPONSES)[0]
    assert sent["include"] == ["message.output_text.logprobs"] and sent["top_logprobs"] == 1


def test_a_computer_call_and_its_acknowledged_screenshot_pass_through_the_gateway(gateway: GatewayHarness) -> None:
    """The upstream answer is the recorded text answer with its output replaced by a computer_call shaped
    after the SDK's ResponseComputerToolCall (no public recording has one)."""
    checks = [{"id": "cu_sc_1", "code": "malicious_instructions", "message": "check the page"}]
    computer_call = {"type": "computer_call", "id": "cu_67cc", "call_id": "call_zw3", "status": "completed",
                     "action": {"type": "click", "button": "left", "x": 156, "y": 50}, "pending_safety_checks": checks}
    body = read_json("openai_responses", "response__text.json")
    body["output"] = [computer_call]
    gateway.upstream.script(RESPONSES, Reply(200, json.dumps(body).encode(), "application/json", None),
                            Reply.recording("openai_responses", "response__text.json"))
    sdk = client(gateway)
    tools = [{"type": "computer_use_preview", "display_width": 1024, "display_height": 768, "environment": "browser"}]
    first = sdk.responses.create(model=MODEL, input="open the page", tools=tools)  # type: ignore[arg-type]
    [call] = [item.model_dump(exclude_none=True) for item in first.output]
    assert call == computer_call
    output = {"type": "computer_call_output", "call_id": "call_zw3", "acknowledged_safety_checks": checks,
              "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="}}
    sdk.responses.create(model=MODEL, tools=tools, input=[  # type: ignore[arg-type]
        {"role": "user", "content": "open the page"}, call, output])  # type: ignore[list-item]
    sent = gateway.upstream.bodies(RESPONSES)[1]["input"]
    assert [item for item in sent if item.get("type", "").startswith("computer_call")] == [call, output]

"""A Responses computer_call in the agent loop: answered by a tool the caller registered with
`register_provider_called` (never offered as a function tool), its screenshot sent back as a
computer_call_output. The upstream stream is built from the SDK's ResponseComputerToolCall shape
(no public recording has a computer call)."""

from __future__ import annotations

import json
from typing import Any

from support_servers import Reply

from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.messages import ImageBlock, ImageSource, SideEffects, ToolDefinition

from .conftest import Harness

MODEL = "openai_responses:gpt-5-mini"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
CLICK = {"type": "click", "button": "left", "x": 156, "y": 50}


def computer_call_stream() -> bytes:
    call = {"type": "computer_call", "id": "cu_1", "call_id": "call_cu", "action": CLICK, "pending_safety_checks": []}
    response = {"id": "resp_cu", "object": "response", "status": "in_progress", "model": "gpt-5-mini", "output": []}
    events = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": {**call, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": {**call, "status": "completed"}},
        {"type": "response.completed", "response": {**response, "status": "completed",
                                                    "output": [{**call, "status": "completed"}],
                                                    "usage": {"input_tokens": 9, "output_tokens": 4}}},
    ]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


class Screen:
    definition = ToolDefinition(name="computer", description="the caller's screen", side_effects=SideEffects.READ,
                                input_schema={"type": "object", "properties": {"action": {
                                    "type": "object", "properties": {"type": {"type": "string"}}}}})

    def __init__(self) -> None:
        self.actions: list[dict[str, Any]] = []

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        self.actions.append(tool_input["action"])
        shot = ImageBlock(source=ImageSource(kind="base64", data=PNG), media_type="image/png")
        return ToolOutcome("a screenshot", blocks=[shot])


async def test_a_computer_call_is_answered_by_the_callers_tool_with_a_screenshot(harness: Harness) -> None:
    h = harness
    screen = Screen()
    h.runtime.tools.register_provider_called(screen)
    assert "computer" not in h.runtime.tools.names()
    h.script.script("openai_responses", [
        Reply(200, computer_call_stream(), {"content-type": "text/event-stream"}),
        Reply.fixture("openai_responses", "stream__text.sse"),
    ])
    session = h.runtime.sessions.create(h.workspace, model=MODEL)
    await h.runtime.turns.run(session, "click the button")
    assert screen.actions == [CLICK]
    first, second = h.requests_to("openai-responses.test")
    assert "computer" not in [tool.get("name") for tool in first.get("tools", [])]
    output = next(i for i in second["input"] if i.get("type") == "computer_call_output")
    assert output == {"type": "computer_call_output", "call_id": "call_cu",
                      "output": {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{PNG}"}}

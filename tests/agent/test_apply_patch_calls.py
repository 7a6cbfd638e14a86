"""A Responses apply_patch_call in the agent loop: applied by the apply_patch tool inside the workspace
after confirmation, its outcome sent back as an apply_patch_call_output under the recorded call_id."""

from __future__ import annotations

from support_servers import Reply

from metis_core.agent.confirmation import ConfirmationAnswer
from metis_core.messages import Role

from .conftest import Harness

MODEL = "openai_responses:gpt-5-mini"
RECORDED = "stream__hosted_apply_patch_call.sse"  # create_file shopping-checklist.md


async def _patched(h: Harness, answer: ConfirmationAnswer) -> list[dict[str, object]]:
    h.confirmer.answers = [answer]
    h.script.script("openai_responses", [
        Reply.fixture("openai_responses", RECORDED),
        Reply.fixture("openai_responses", "stream__text.sse"),
    ])
    session = h.runtime.sessions.create(h.workspace, model=MODEL)
    await h.runtime.turns.run(session, "make me a checklist")
    assert [r.tool_name for r in h.confirmer.asked] == ["apply_patch"]
    assert h.confirmer.asked[0].projected_modifications == ["shopping-checklist.md"]
    assert next(m for m in session.history if m.role is Role.TOOL).tool_results()
    calling = next(m for m in session.history if m.role is Role.ASSISTANT and m.tool_uses())
    assert calling.metadata.tool_input_violations is None  # a provider-defined tool: no offered schema applies
    second: list[dict[str, object]] = h.requests_to("openai-responses.test")[1]["input"]
    return second


async def test_an_apply_patch_call_creates_its_file_after_confirmation_and_reports_completed(
        harness: Harness) -> None:
    second = await _patched(harness, ConfirmationAnswer("allow", "once"))
    created = (harness.workspace / "shopping-checklist.md").read_text()
    assert created == "## Shopping Checklist\n\n- [ ] Milk\n- [ ] Bread\n- [ ] Eggs\n- [ ] Fresh fruit\n- [ ] Coffee"
    call = next(i for i in second if i.get("type") == "apply_patch_call")
    output = next(i for i in second if i.get("type") == "apply_patch_call_output")
    assert output == {"type": "apply_patch_call_output", "call_id": call["call_id"], "status": "completed",
                      "output": "created shopping-checklist.md"}


async def test_a_denied_apply_patch_call_writes_nothing_and_reports_failed(harness: Harness) -> None:
    second = await _patched(harness, ConfirmationAnswer("deny"))
    assert not (harness.workspace / "shopping-checklist.md").exists()
    output = next(i for i in second if i.get("type") == "apply_patch_call_output")
    assert output["status"] == "failed" and "denied" in str(output["output"])

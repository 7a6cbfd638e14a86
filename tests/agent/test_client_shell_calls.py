"""A Responses local_shell_call in the agent loop: run by run_command in the workspace after
confirmation, its output sent back as a local_shell_call_output under the recorded call_id."""

from __future__ import annotations

from support_servers import Reply

from metis_core.agent.confirmation import ConfirmationAnswer
from metis_core.messages import Role

from .conftest import Harness

MODEL = "openai_responses:gpt-5-mini"


async def test_a_local_shell_call_runs_in_the_workspace_after_confirmation(harness: Harness) -> None:
    h = harness
    (h.workspace / "notes.txt").write_text("x")
    h.confirmer.answers = [ConfirmationAnswer("allow", "once")]
    h.script.script("openai_responses", [
        Reply.fixture("openai_responses", "stream__hosted_local_shell_call.sse"),  # argv ["ls", "-a", "~"]
        Reply.fixture("openai_responses", "stream__text.sse"),
    ])
    (h.workspace / "~").mkdir()  # the argv is quoted: `~` is this directory, never the home folder
    ((h.workspace / "~") / "inside.txt").write_text("y")
    session = h.runtime.sessions.create(h.workspace, model=MODEL)
    await h.runtime.turns.run(session, "list it")

    assert [r.tool_name for r in h.confirmer.asked] == ["run_command"]
    result = next(m for m in session.history if m.role is Role.TOOL).tool_results()[0]
    assert not result.is_error and "inside.txt" in result.text()
    second = h.requests_to("openai-responses.test")[1]["input"]
    call = next(i for i in second if i.get("type") == "local_shell_call")
    output = next(i for i in second if i.get("type") == "local_shell_call_output")
    assert call["action"]["command"] == ["ls", "-a", "~"]
    assert output["call_id"] == call["call_id"] and "inside.txt" in output["output"]

"""Bus spec §9: route.decided exactly once and route.overridden causality under a pattern override;
tool cycles evaluated on the bus; fingerprints compared without their text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support_servers import Reply

from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.events.causality import walk_to_root
from metis_core.events.envelope import Sensitivity
from metis_core.learning.patterns.fingerprint import distance, fingerprint
from metis_core.messages import SideEffects, ToolDefinition

from .conftest import CHEAP, STRONG, LearningHarness
from .test_pattern_routing import RULE, advised_summary, learning_harness


class Weather:
    definition = ToolDefinition(
        name="get_weather", description="Current weather for a location.",
        input_schema={"type": "object", "properties": {"location": {"type": "string"},
                                                       "units": {"type": "string", "enum": ["c", "f"]}},
                      "required": ["location"], "additionalProperties": False},
        side_effects=SideEffects.NONE, requires_workspace=False,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolOutcome(f"{tool_input['location']}: 20°C")


async def overridden_turn(tmp_path: Path) -> tuple[LearningHarness, str]:
    h = learning_harness(tmp_path, RULE)
    sid, _, _ = await advised_summary(h, "override")
    return h, sid


async def test_route_decided_is_emitted_exactly_once_when_the_pattern_is_overridden(tmp_path: Path) -> None:
    h, sid = await overridden_turn(tmp_path)
    try:
        events = h.events(sid)
        decided = [e for e in events if e.type == "route.decided"]
        overridden = [e for e in events if e.type == "route.overridden"]
        assert len(decided) == 1 and len(overridden) == 1
        assert decided[0].id < overridden[0].id
        assert decided[0].payload["chosen_model"] == STRONG and overridden[0].payload["new_chosen_model"] == CHEAP
        assert h.runtime.trace.get(decided[0].id).payload == decided[0].payload  # type: ignore[union-attr]
    finally:
        h.runtime.close()


async def test_route_overridden_causality_reaches_turn_started_through_the_override(tmp_path: Path) -> None:
    h, sid = await overridden_turn(tmp_path)
    try:
        events = h.events(sid)
        by_id = {e.id: e for e in events}
        completed = next(e for e in events if e.type == "llm.call_completed")
        chain = walk_to_root(completed.id, by_id.get)
        assert [e.type for e in chain] == ["llm.call_completed", "llm.call_started", "route.overridden",
                                           "route.decided", "turn.started"]
    finally:
        h.runtime.close()


async def test_each_tool_cycle_is_evaluated_after_its_result(learning: LearningHarness) -> None:
    h = learning
    h.runtime.tools.register(Weather())
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__tool_use_input_json_delta.sse"),
                                  Reply.fixture("anthropic", "stream__text_basic.sse")])
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "What's the weather in Paris?")
    called = h.of_type("tool.called", session.id)[0]
    result = h.of_type("tool.completed", session.id)[0]
    (started,) = [e for e in h.of_type("eval.started", session.id) if e.payload["subject_kind"] == "tool_cycle"]
    assert started.parent_event_id == result.id and started.payload["subject_id"] == called.id
    assert started.payload["rubric_id"] == "tool_cycle-default"
    (completed,) = [e for e in h.of_type("eval.completed", session.id) if e.parent_event_id == started.id]
    assert completed.payload["score"] == 0.9 and completed.payload["signals"]["heuristic"] == {"ended": "completed"}
    assert completed.sensitivity is Sensitivity.PSEUDONYMOUS


def test_fingerprints_share_structure_not_text(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    one = fingerprint("Summarize the notes", estimated_tokens=50, has_images=False, workspace=str(tmp_path),
                      tools_used=["read_file"])
    two = fingerprint("Summarize the memo", estimated_tokens=70, has_images=False, workspace=str(tmp_path),
                      tools_used=["read_file"])
    other = fingerprint("Prove the lemma", estimated_tokens=50, has_images=False, workspace=str(tmp_path),
                        tools_used=["read_file"])
    assert one.key == two.key and distance(one, two) == 0.0
    assert one.features["workspace"] == "python" and one.features["lead"] == "summarize"
    assert distance(one, other) == 0.25 and "notes" not in str(one.features)
    hybrid = fingerprint("Summarize the notes", estimated_tokens=50, has_images=False, workspace=str(tmp_path),
                         tools_used=[], embed=lambda text: [1.0, 0.0])
    assert hybrid.kind == "hybrid" and hybrid.key != one.key

"""The `learning:` settings and the rubric files: bad input is a named error, a user rubric wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_core.errors import ConfigError, RubricInvalidError
from metis_core.learning.evaluator.rubrics import RubricBook
from metis_core.learning.settings import LearningSettings

from .conftest import LearningHarness


def test_bad_learning_settings_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"learning\.patterns\.k"):
        LearningSettings.from_config({"patterns": {"k": 0}})
    with pytest.raises(ConfigError, match=r"learning\.judge_modle"):
        LearningSettings.from_config({"judge_modle": "x"})
    with pytest.raises(ConfigError, match="hard_cap_rows must be at least soft_cap_rows"):
        LearningSettings.from_config({"patterns": {"soft_cap_rows": 10, "hard_cap_rows": 5}})
    with pytest.raises(ConfigError, match=r"change_window is no longer a setting.*remove it"):
        LearningSettings.from_config({"patterns": {"change_window": 20}})
    for key in ("switch_evidence", "change_failure_scale"):
        with pytest.raises(ConfigError, match=rf"learning\.patterns\.{key}: Input should be greater than or equal"):
            LearningSettings.from_config({"patterns": {key: -1}})
    assert LearningSettings.from_config(None).judge_model is None


def test_shipped_rubrics_load_and_a_user_file_replaces_one(tmp_path: Path) -> None:
    book = RubricBook(user_dir=tmp_path)
    assert {r.id for r in book.all()} == {"turn-default", "session-default", "tool_cycle-default"}
    assert book.for_subject("turn").judge == "hybrid"
    (tmp_path / "turn-default.yaml").write_text(
        "id: turn-default\nversion: '2'\nsubject: turn\njudge: heuristic\n"
        "criteria: [{name: correct, description: The answer is right.}]\n")
    assert book.for_subject("turn").version == "2"
    (tmp_path / "session-default.yaml").write_text("id: other\nversion: '1'\nsubject: session\n"
                                                   "criteria: [{name: a, description: b}]\n")
    with pytest.raises(RubricInvalidError, match="declares id 'other'"):
        book.for_subject("session")
    (tmp_path / "tool_cycle-default.yaml").write_text("id: [unclosed\n")
    with pytest.raises(RubricInvalidError, match="is not valid YAML at line 2"):
        book.for_subject("tool_cycle")


async def test_verdicts_record_the_user_rubric_version(learning: LearningHarness) -> None:
    h = learning
    (h.home / "rubrics").mkdir()
    (h.home / "rubrics" / "turn-default.yaml").write_text(
        "id: turn-default\nversion: '7'\nsubject: turn\ncriteria: [{name: correct, description: Right.}]\n")
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "Hello")
    h.events()
    (verdict,) = h.loop.verdicts.of_subject("turn", result.turn_id)
    assert (verdict.rubric_id, verdict.rubric_version) == ("turn-default", "7")

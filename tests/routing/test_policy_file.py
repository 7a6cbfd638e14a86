"""routing.yaml loading: reload on change, last known good on error, content-hash versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metis_core.routing.policy_file import PolicyLoader


def test_policy_reloads_when_the_file_changes(tmp_path: Path) -> None:
    (tmp_path / "routing.yaml").write_text("default: sonnet\n")
    loader = PolicyLoader(None, tmp_path)
    first = loader.policy
    assert first.global_.default == "sonnet"
    (tmp_path / "routing.yaml").write_text("default: haiku\n")
    second = loader.policy
    assert second.global_.default == "haiku"
    assert second.version != first.version


def test_invalid_file_keeps_last_known_good_and_reports_once(tmp_path: Path) -> None:
    reports: list[tuple[str, list[str], bool]] = []
    path = tmp_path / "routing.yaml"
    path.write_text("default: sonnet\n")
    loader = PolicyLoader(None, tmp_path, on_invalid=lambda p, errors, lkg: reports.append((p, errors, lkg)))
    good_version = loader.policy.version
    path.write_text("default: sonnet\nrules:\n  - name: r\n    when: {colour: blue}\n    model: haiku\n")
    assert loader.policy.global_.default == "sonnet"
    assert loader.policy.version == good_version
    loader.policy  # noqa: B018 - the same bad content is not reported twice
    assert len(reports) == 1
    policy_path, errors, using_last_known_good = reports[0]
    assert policy_path == str(path) and using_last_known_good
    assert any("colour" in e for e in errors)


def test_broken_yaml_is_reported(tmp_path: Path) -> None:
    reports: list[Any] = []
    (tmp_path / "routing.yaml").write_text("default: [unclosed\n")
    loader = PolicyLoader(None, tmp_path, on_invalid=lambda *a: reports.append(a))
    assert loader.policy.global_.default is None
    assert reports and "not valid YAML" in reports[0][1][0] and reports[0][2] is False


def test_version_is_the_content_hash_not_the_mtime(tmp_path: Path) -> None:
    (tmp_path / "routing.yaml").write_text("default: sonnet\n")
    a = PolicyLoader(None, tmp_path).policy.version
    other = tmp_path / "other"
    other.mkdir()
    (other / "routing.yaml").write_text("default: sonnet\n")
    assert PolicyLoader(None, other).policy.version == a

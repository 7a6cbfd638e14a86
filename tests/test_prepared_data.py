"""The prepared form of the bundled YAML: used only for the exact file it was made from, never trusted to run code."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from metis_core.models.pricing import builtin_price_path
from metis_core.models.registry_file import builtin_registry_path
from metis_core.prepared_data import load_prepared, prepared_name
from metis_core.yaml_text import safe_load


@pytest.fixture
def data_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    source = tmp_path / "pkg" / "data" / "models.yaml"
    source.parent.mkdir(parents=True)
    source.write_text("effective_from: 2026-05-01\nmodels: {a: 1}\n")
    return source


def counting_parse(calls: list[str]):  # type: ignore[no-untyped-def]
    def parse(text: str) -> object:
        calls.append(text)
        return safe_load(text)
    return parse


def test_the_second_process_reads_the_prepared_form_instead_of_parsing(data_file: Path) -> None:
    calls: list[str] = []
    first = load_prepared(data_file, counting_parse(calls))
    second = load_prepared(data_file, counting_parse(calls))
    assert first == second == safe_load(data_file.read_text()) and len(calls) == 1
    assert [p.name[:12] for p in (data_file.parent / "__pycache__").iterdir()] == ["models.yaml."]


def test_a_changed_file_is_parsed_again(data_file: Path) -> None:
    calls: list[str] = []
    load_prepared(data_file, counting_parse(calls))
    data_file.write_text("models: {b: 2}\n")
    assert load_prepared(data_file, counting_parse(calls)) == {"models": {"b": 2}} and len(calls) == 2


def test_a_planted_pickle_that_would_run_code_is_ignored(data_file: Path, tmp_path: Path) -> None:
    import hashlib

    digest = hashlib.sha256(data_file.read_bytes()).hexdigest()
    planted = data_file.parent / "__pycache__" / prepared_name(data_file, digest)
    planted.parent.mkdir()
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (os.system, (f"touch {marker}",))

    planted.write_bytes(pickle.dumps(Exploit()))
    calls: list[str] = []
    assert load_prepared(data_file, counting_parse(calls)) == {"effective_from": safe_load(
        "d: 2026-05-01")["d"], "models": {"a": 1}}
    assert not marker.exists() and len(calls) == 1


def test_an_unwritable_package_falls_back_to_the_user_cache(data_file: Path, tmp_path: Path) -> None:
    (data_file.parent / "__pycache__").write_text("a file where the folder would go")
    calls: list[str] = []
    load_prepared(data_file, counting_parse(calls))
    load_prepared(data_file, counting_parse(calls))
    assert len(calls) == 1 and list((tmp_path / "user-cache" / "metis-core").iterdir())


@pytest.mark.parametrize("path", [builtin_registry_path(), builtin_price_path()])
def test_the_bundled_files_load_the_same_data_either_way(path: Path) -> None:
    assert load_prepared(path, lambda text: safe_load(text)) == safe_load(path.read_text())

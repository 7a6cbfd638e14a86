"""The prepared form of the bundled YAML: used only for the exact file it was made from, never trusted to run code.

A checked form (load_checked) is stored only after its data passed the check, and what is built from
it without validating equals what validation makes.
"""

from __future__ import annotations

import pickle
from datetime import date
from pathlib import Path

import orjson
import pytest

from metis_core.models.price_file import checked_price_data, parse_price_data
from metis_core.models.pricing import builtin_price_path
from metis_core.models.registry_file import builtin_registry_path, checked_registry_data, parse_registry_data
from metis_core.prepared_data import load_checked, load_prepared, prepared_name
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


def test_a_damaged_prepared_form_is_ignored_and_the_source_parsed(data_file: Path) -> None:
    import hashlib

    digest = hashlib.sha256(data_file.read_bytes()).hexdigest()
    planted = data_file.parent / "__pycache__" / prepared_name(data_file, digest)
    planted.parent.mkdir()
    planted.write_bytes(pickle.dumps({"models": {"planted": True}}))  # not JSON: never unpickled
    calls: list[str] = []
    data = load_prepared(data_file, counting_parse(calls))
    assert data == safe_load(data_file.read_text()) and len(calls) == 1


def test_dates_survive_the_prepared_form(data_file: Path) -> None:
    calls: list[str] = []
    load_prepared(data_file, counting_parse(calls))
    again = load_prepared(data_file, counting_parse(calls))
    assert again["effective_from"] == date(2026, 5, 1) and len(calls) == 1


def test_an_unwritable_package_falls_back_to_the_user_cache(data_file: Path, tmp_path: Path) -> None:
    (data_file.parent / "__pycache__").write_text("a file where the folder would go")
    calls: list[str] = []
    load_prepared(data_file, counting_parse(calls))
    load_prepared(data_file, counting_parse(calls))
    assert len(calls) == 1 and list((tmp_path / "user-cache" / "metis-core").iterdir())


@pytest.mark.parametrize("path", [builtin_registry_path(), builtin_price_path()])
def test_the_bundled_files_load_the_same_data_either_way(path: Path) -> None:
    assert load_prepared(path, lambda text: safe_load(text)) == safe_load(path.read_text())


def checked_models(data: object) -> dict[str, int]:
    """A stand-in check: the data must be {models: {name: positive int}}; returns the models."""
    assert isinstance(data, dict)
    models = data["models"]
    if not all(isinstance(v, int) and v > 0 for v in models.values()):
        raise ValueError("a model count must be a positive integer")
    return dict(models)


def test_a_checked_form_is_built_without_parsing_or_checking_again(data_file: Path) -> None:
    calls: list[str] = []
    checks: list[object] = []

    def check(data: object) -> dict[str, int]:
        checks.append(data)
        return checked_models(data)

    first = load_checked(data_file, counting_parse(calls), check, lambda data: dict(data["models"]))
    second = load_checked(data_file, counting_parse(calls), check, lambda data: dict(data["models"]))
    assert first == second == {"a": 1} and len(calls) == 1 and len(checks) == 1


def test_data_that_fails_its_check_is_never_stored(data_file: Path) -> None:
    data_file.write_text("models: {a: -1}\n")
    for _ in range(2):
        with pytest.raises(ValueError, match="positive integer"):
            load_checked(data_file, lambda text: safe_load(text), checked_models, lambda data: dict(data["models"]))
    assert not (data_file.parent / "__pycache__").exists()


def test_a_prepared_form_that_does_not_fit_is_parsed_and_checked_again(data_file: Path) -> None:
    import hashlib

    digest = hashlib.sha256(data_file.read_bytes()).hexdigest()
    planted = data_file.parent / "__pycache__" / prepared_name(data_file, digest)
    planted.parent.mkdir()
    planted.write_bytes(b'{"other": []}')  # JSON, but not the shape the builder expects
    calls: list[str] = []
    result = load_checked(data_file, counting_parse(calls), checked_models, lambda data: dict(data["models"]))
    assert result == {"a": 1} and len(calls) == 1


def test_the_bundled_registry_built_from_its_prepared_form_equals_the_validated_one() -> None:
    path = builtin_registry_path()
    validated = parse_registry_data(safe_load(path.read_text()), str(path))
    built = checked_registry_data(orjson.loads(orjson.dumps(safe_load(path.read_text()))))
    assert built == validated and repr(built) == repr(validated)


def test_the_bundled_prices_built_from_their_prepared_form_equal_the_validated_ones() -> None:
    path = builtin_price_path()
    validated = parse_price_data(safe_load(path.read_text()), str(path))
    built = checked_price_data(load_prepared(path, lambda text: safe_load(text)))
    assert built == validated and [repr(v.models) for v in built] == [repr(v.models) for v in validated]

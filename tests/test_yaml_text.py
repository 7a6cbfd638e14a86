"""Reading our YAML files: one named error per failure, with the position and never the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_core.errors import ConfigError, PriceTableError
from metis_core.yaml_text import read_yaml_file


def test_a_file_reads_to_its_data(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("a: 1\nb: [x, y]\n")
    assert read_yaml_file(path, ConfigError, "test file") == {"a": 1, "b": ["x", "y"]}


def test_a_missing_file_raises_the_callers_error_naming_what_it_is(tmp_path: Path) -> None:
    with pytest.raises(PriceTableError, match=r"cannot read price table .*missing\.yaml"):
        read_yaml_file(tmp_path / "missing.yaml", PriceTableError, "price table")


def test_malformed_yaml_gives_the_position_but_not_the_offending_text(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("providers:\n  openai:\n    api_key: sk-secret-123\n   bad: [\n")
    with pytest.raises(ConfigError) as caught:
        read_yaml_file(path, ConfigError, "config file")
    message = str(caught.value)
    assert "invalid YAML at line" in message and "column" in message
    assert "sk-secret-123" not in message

"""RFC 8785 canonical JSON + SHA-256, checked against the published JCS vectors."""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path

import pytest
import rfc8785

from metis_core.hashing import canonical_json, json_hash, sha256_hex

NAMES = ["arrays", "french", "structures", "unicode", "values", "weird"]


@pytest.mark.parametrize("name", NAMES)
def test_canonical_bytes_match_cyberphone_vectors(fixtures: Path, name: str) -> None:
    base = fixtures / "jcs" / "cyberphone"
    value = json.loads((base / "input" / f"{name}.json").read_text(encoding="utf-8"))
    expected = (base / "output" / f"{name}.json").read_bytes()
    assert canonical_json(value) == expected
    hex_bytes = bytes.fromhex("".join((base / "outhex" / f"{name}.txt").read_text().split()))
    assert canonical_json(value) == hex_bytes


@pytest.mark.parametrize(
    "csv_path", ["trailofbits/es6_float_vectors.csv", "cyberphone/es6_number_discrete_vectors.csv"]
)
def test_es6_number_serialization(fixtures: Path, csv_path: str) -> None:
    with (fixtures / "jcs" / csv_path).open() as handle:
        rows = list(csv.DictReader(handle))
    assert rows
    for row in rows:
        number = struct.unpack(">d", bytes.fromhex(row["hex_ieee"]))[0]
        if row["expected"].startswith("<"):
            with pytest.raises(rfc8785.CanonicalizationError):
                canonical_json(number)
        else:
            assert canonical_json(number).decode() == row["expected"], row


def test_hash_ignores_key_order_and_whitespace() -> None:
    a = json.loads('{"b": 1, "a": [1, 2, {"y": "é", "x": null}]}')
    b = json.loads('{"a":[1,2,{"x":null,"y":"\\u00e9"}],"b":1}')
    assert json_hash(a) == json_hash(b)
    assert json_hash(a) == sha256_hex(canonical_json(a))
    assert json_hash(a) != json_hash({"b": 2, "a": [1, 2, {"x": None, "y": "é"}]})


def test_integer_outside_ijson_range_is_rejected() -> None:
    with pytest.raises(rfc8785.IntegerDomainError):
        canonical_json(2**53)

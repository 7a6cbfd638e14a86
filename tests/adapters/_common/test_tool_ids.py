"""Canonical ⇄ provider tool ids: stable, deterministic, and valid for every target's rules."""

from __future__ import annotations

import re

from metis_core.adapters._common.tool_ids import ToolIdMap, outbound_id
from metis_core.ids import new_tool_use_id


def test_an_arriving_provider_id_maps_to_one_canonical_id() -> None:
    ids = ToolIdMap()
    first = ids.canonical_for("anthropic", "toolu_01ABC")
    assert first.startswith("tu_")
    assert ids.canonical_for("anthropic", "toolu_01ABC") == first
    assert ids.canonical_for("openai", "toolu_01ABC") != first  # namespaces never mix
    assert ids.provider_for("anthropic", first, "anthropic") == "toolu_01ABC"


def test_outbound_ids_meet_each_target_rule() -> None:
    canonical = new_tool_use_id()
    assert len(outbound_id(canonical, "openai")) <= 40
    anthropic = outbound_id(canonical, "anthropic")
    assert re.fullmatch(r"[a-zA-Z0-9_-]+", anthropic) and len(anthropic) <= 64
    nine = outbound_id(canonical, "alnum9")
    assert re.fullmatch(r"[a-zA-Z0-9]{9}", nine)


def test_outbound_ids_are_deterministic_so_replays_are_byte_identical() -> None:
    canonical = new_tool_use_id()
    a = ToolIdMap().provider_for("openai", canonical, "alnum9")
    b = ToolIdMap().provider_for("openai", canonical, "alnum9")
    assert a == b


def test_an_id_that_breaks_the_target_rule_is_replaced() -> None:
    ids = ToolIdMap()
    canonical = ids.canonical_for("openai", "call_" + "x" * 60)  # too long for the openai rule
    replaced = ids.provider_for("openai", canonical, "openai")
    assert len(replaced) <= 40
    assert ids.lookup_canonical("openai", replaced) == canonical


def test_map_is_plain_data_that_survives_a_round_trip() -> None:
    ids = ToolIdMap()
    canonical = ids.canonical_for("anthropic", "toolu_1")
    ids.provider_for("openai", canonical, "openai")
    restored = ToolIdMap.from_dict(ids.to_dict())
    assert restored.to_dict() == ids.to_dict()
    assert restored.canonical_for("anthropic", "toolu_1") == canonical
    assert len(restored) == 2


def test_a_reused_provider_id_in_a_new_response_never_merges_two_calls() -> None:
    ids = ToolIdMap()
    first = ids.issue("anthropic", "toolu_same")
    second = ids.issue("anthropic", "toolu_same")
    assert first != second
    assert ids.provider_for("anthropic", first, "anthropic") == "toolu_same"
    replacement = ids.provider_for("anthropic", second, "anthropic")
    assert replacement != "toolu_same" and ids.lookup_canonical("anthropic", replacement) == second

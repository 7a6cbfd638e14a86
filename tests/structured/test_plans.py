"""Per-provider plans: the schema reduced into the portable subset, strict only where it qualifies, losses logged."""

from __future__ import annotations

import logging

import pytest
from pydantic import BaseModel

from metis_core.adapters.anthropic.structured import anthropic_structured_plan
from metis_core.adapters.openai_chat.structured import openai_structured_plan
from metis_core.adapters.openrouter.structured import openrouter_structured_plan
from metis_core.errors import CapabilityMismatchError
from metis_core.messages.schema_changes import forget_logged_changes
from metis_core.models.registry import default_registry
from metis_core.structured import output_spec

CAPS = default_registry().capabilities


class Closed(BaseModel):
    name: str
    tags: list[str]


class WithOptional(BaseModel):
    name: str
    nickname: str | None = None


def test_openai_is_strict_when_every_property_is_required_and_objects_get_closed() -> None:
    plan = openai_structured_plan(output_spec(Closed), CAPS("openai:gpt-4o"), "openai:gpt-4o")
    assert plan.response_format is not None and plan.response_format["strict"] is True
    assert plan.response_format["schema"]["additionalProperties"] is False
    assert any(c.keyword == "additionalProperties" and c.lossy for c in plan.changes)


def test_openai_is_not_strict_with_an_optional_property_and_keeps_the_schema_open() -> None:
    plan = openai_structured_plan(output_spec(WithOptional), CAPS("openai:gpt-4o"), "openai:gpt-4o")
    assert plan.response_format is not None and plan.response_format["strict"] is False
    assert "additionalProperties" not in plan.response_format["schema"]


def test_openrouter_passes_the_format_through_and_requires_upstreams_that_honour_it() -> None:
    plan = openrouter_structured_plan(output_spec(Closed), CAPS("openrouter:x/y"), "openrouter:x/y")
    assert plan.mode == "json_schema" and plan.extra == {"provider": {"require_parameters": True}}


def test_a_lossy_reduction_is_logged_once_per_output_path_and_keyword(caplog: pytest.LogCaptureFixture) -> None:
    forget_logged_changes()
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                                        "uniqueItems": True}}, "required": ["tags"]}
    model = "anthropic:claude-sonnet-4-5"
    with caplog.at_level(logging.WARNING, logger="metis_core.messages.schema"):
        first = anthropic_structured_plan(output_spec(schema, name="ticket"), CAPS(model), model)
        anthropic_structured_plan(output_spec(schema, name="ticket"), CAPS(model), model)
    lossy = [c for c in first.changes if c.lossy]
    assert any(c.keyword == "uniqueItems" for c in lossy)
    lines = [r for r in caplog.records if "uniqueItems" in r.getMessage() and "output ticket" in r.getMessage()]
    assert len(lines) == 1


def test_a_schema_that_cannot_be_reduced_is_a_capability_mismatch_before_any_call() -> None:
    recursive = {"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}
    with pytest.raises(CapabilityMismatchError, match="cannot travel as json_schema"):
        openai_structured_plan(output_spec(recursive), CAPS("openai:gpt-4o"), "openai:gpt-4o")

"""Capabilities made from checked values are exactly what validating them gives, and odd values are validated."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from metis_core.models import registry as registry_module
from metis_core.models.capabilities import AdapterCapabilities, capabilities_from


def same(built: AdapterCapabilities, reference: AdapterCapabilities) -> None:
    assert built == reference
    assert built.__dict__ == reference.__dict__ and list(built.__dict__) == list(reference.__dict__)
    assert built.model_fields_set == reference.model_fields_set
    assert {k: type(v) for k, v in built.__dict__.items()} == {k: type(v) for k, v in reference.__dict__.items()}


def test_every_catalogued_model_gets_the_capabilities_validation_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[dict[str, Any]] = []

    def both(fields: dict[str, Any]) -> AdapterCapabilities:
        built = capabilities_from(fields)
        same(built, AdapterCapabilities.model_validate(fields))
        checked.append(fields)
        return built

    monkeypatch.setattr(registry_module, "capabilities_from", both)
    registry = registry_module.ModelRegistry.load()
    for provider in registry.providers():
        registry.models(provider)
    assert len(checked) > 50 and any(f.get("accepted_image_media_types") for f in checked)


@pytest.mark.parametrize("fields", [
    {}, {"supports_images": True, "max_context_tokens": 200_000},
    {"accepted_image_media_types": ["image/png", "image/jpeg"], "hosted_tools": ("web_search",)},
    {"structured_output_mode": "tool", "tool_id_style": "alnum9"},
    {"supports_images": 1}, {"supports_images": "yes"}, {"max_context_tokens": True},
    {"max_context_tokens": "8192"},
    {"structured_output_mode": "json_schema"}, {"unknown_field": 1},
])
def test_capabilities_from_is_model_validate(fields: dict[str, Any]) -> None:
    same(capabilities_from(fields), AdapterCapabilities.model_validate(fields))


@pytest.mark.parametrize("fields", [
    {"structured_output_mode": "grammar"}, {"max_context_tokens": "many"}, {"hosted_tools": [1]},
    {"supports_images": "perhaps"}, {"accepted_image_media_types": "image/png"},
])
def test_values_validation_refuses_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        capabilities_from(fields)

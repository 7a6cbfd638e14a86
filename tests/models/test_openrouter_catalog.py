"""OpenRouter's published model list read into the registry and price table through METIS_HOME."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from metis_core.config import load_config
from metis_core.messages import Usage
from metis_core.models.openrouter_catalog import ModelListError, catalog_from_listing, write_catalog
from metis_core.models.pricing import PriceTable
from metis_core.models.registry import ModelRegistry

LISTING = Path(__file__).resolve().parent.parent / "data" / "openrouter" / "models_list.json"
SONNET = "openrouter:anthropic/claude-sonnet-4.5"
LLAMA = "openrouter:meta-llama/llama-3.1-8b-instruct"


def test_listing_becomes_capabilities_and_per_million_prices() -> None:
    catalog = catalog_from_listing(LISTING.read_bytes(), "models_list.json")
    assert catalog["models"][SONNET]["capabilities"] == {
        "max_context_tokens": 1_000_000, "max_output_tokens": 64_000, "supports_tools": True,
        "supports_structured_output": True, "supports_thinking": True, "supports_images": True}
    assert catalog["models"][LLAMA]["capabilities"]["supports_tools"] is False
    assert catalog["prices"][SONNET] == {"input": "3", "output": "15", "cache_read": "0.3", "cache_write": "3.75",
                                         "reasoning": "0"}
    assert catalog["prices"][LLAMA]["input"] == "0.02"
    assert "openrouter:openrouter/auto" not in catalog["prices"]  # -1: priced by the model it routes to


def test_written_catalog_reaches_registry_and_price_table_under_the_users_own_config(tmp_path: Path) -> None:
    write_catalog(tmp_path, catalog_from_listing(LISTING.read_bytes(), "models_list.json"))
    (tmp_path / "config.yaml").write_text('prices:\n  "openrouter:meta-llama/llama-3.1-8b-instruct":\n'
                                          '    input: "1"\n    output: "2"\n')
    config = load_config(tmp_path, environ={})
    registry = ModelRegistry.load(config)
    sonnet = registry.get(SONNET).capabilities
    assert (sonnet.max_context_tokens, sonnet.supports_structured_output) == (1_000_000, True)
    llama = registry.get(LLAMA)
    assert (llama.capabilities.supports_tools, llama.display_name) == (False, "Meta: Llama 3.1 8B Instruct")
    prices = PriceTable.load(config)
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_input_tokens=1_000_000)
    assert prices.cost(usage, SONNET)[0] == Decimal("18.3")
    assert prices.cost(usage, LLAMA)[0] == Decimal("4")  # config.yaml wins over the list (cached at input)


@pytest.mark.parametrize(("text", "problem"), [
    ("<html>rate limited</html>", "not JSON"),
    ('{"models": []}', "no `data` list"),
    ('{"data": [{"name": "x"}]}', r"data\[0\]: a model needs a string `id`"),
    ('{"data": [{"id": "a/b", "supported_parameters": [], "architecture": {"input_modalities": []}}]}',
     "context_length"),
    ('{"data": [{"id": "a/b", "context_length": 8, "supported_parameters": [], '
     '"architecture": {"input_modalities": []}, "pricing": {"prompt": "0.1"}}]}', "`prompt` and `completion`"),
    ('{"data": [{"id": "a/b", "context_length": 8, "supported_parameters": [], '
     '"architecture": {"input_modalities": []}, "pricing": {"prompt": "free", "completion": "0"}}]}',
     "not a number"),
])
def test_bad_listing_is_refused_with_a_named_error(text: str, problem: str) -> None:
    with pytest.raises(ModelListError, match=problem):
        catalog_from_listing(text, "saved.json")


def test_damaged_catalog_file_names_itself_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "openrouter-models.json").write_text(json.dumps({"models": []}))
    with pytest.raises(ModelListError, match="metis models update openrouter"):
        load_config(tmp_path, environ={})

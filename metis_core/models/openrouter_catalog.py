"""OpenRouter's published model list (GET /api/v1/models) turned into registry and price entries.

`metis models update openrouter` writes them to METIS_HOME/openrouter-models.json; load_config adds
that file's `models:` and `prices:` under the user's own config entries, so the registry and price
table read them through their usual overlays. OpenRouter prices are USD per token, as strings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from metis_core.errors import MetisError

CATALOG_FILE_NAME = "openrouter-models.json"
LISTING_URL = "https://openrouter.ai/api/v1/models"
PRICE_FIELDS = {"prompt": "input", "completion": "output", "input_cache_read": "cache_read",
                "input_cache_write": "cache_write", "internal_reasoning": "reasoning"}
"""OpenRouter `pricing` field -> price table rate kind."""
_PER_MILLION = Decimal(1_000_000)


class ModelListError(MetisError):
    """A published model list (or the catalog written from it) is not what its API documents."""


def catalog_from_listing(text: str | bytes, source: str) -> dict[str, Any]:
    """The catalog ({models, prices, source, updated_at}) for the text of a GET /api/v1/models answer."""
    try:
        listing = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelListError(f"{source}: not JSON ({exc}); save the body of {LISTING_URL} as it is") from None
    rows = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(rows, list):
        raise ModelListError(f"{source}: no `data` list of models; expected the body of {LISTING_URL}")
    models: dict[str, Any] = {}
    prices: dict[str, Any] = {}
    for index, row in enumerate(rows):
        where = f"{source}: data[{index}]"
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not row["id"]:
            raise ModelListError(f"{where}: a model needs a string `id`")
        model_id = f"openrouter:{row['id']}"
        models[model_id] = _registry_entry(row, f"{where} ({row['id']})")
        price = _price_entry(row, f"{where} ({row['id']})")
        if price is not None:
            prices[model_id] = price
    return {"source": source, "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "models": models, "prices": prices}


def _registry_entry(row: Mapping[str, Any], where: str) -> dict[str, Any]:
    context = row.get("context_length")
    if not isinstance(context, int) or isinstance(context, bool) or context <= 0:
        raise ModelListError(f"{where}: `context_length` must be a positive integer")
    parameters = row.get("supported_parameters")
    if not isinstance(parameters, list):
        raise ModelListError(f"{where}: `supported_parameters` must be a list")
    architecture = row.get("architecture")
    if not isinstance(architecture, dict) or not isinstance(architecture.get("input_modalities"), list):
        raise ModelListError(f"{where}: `architecture.input_modalities` must be a list")
    capabilities: dict[str, Any] = {
        "max_context_tokens": context,
        "supports_tools": "tools" in parameters,
        "supports_structured_output": "structured_outputs" in parameters,
        "supports_thinking": "reasoning" in parameters,
        "supports_images": "image" in architecture["input_modalities"],
    }
    top = row.get("top_provider")
    most = top.get("max_completion_tokens") if isinstance(top, dict) else None
    if isinstance(most, int) and not isinstance(most, bool) and most > 0:
        capabilities["max_output_tokens"] = most
    entry: dict[str, Any] = {"capabilities": capabilities}
    if isinstance(row.get("name"), str):
        entry["display_name"] = row["name"]
    return entry


def _price_entry(row: Mapping[str, Any], where: str) -> dict[str, str] | None:
    """Per-million prices as Decimal strings; None for a router whose price depends on the model it picks
    (OpenRouter writes -1 there)."""
    pricing = row.get("pricing")
    if not isinstance(pricing, dict) or "prompt" not in pricing or "completion" not in pricing:
        raise ModelListError(f"{where}: `pricing` needs `prompt` and `completion` (USD per token)")
    entry: dict[str, str] = {}
    for field, kind in PRICE_FIELDS.items():
        if pricing.get(field) is None:
            continue
        try:
            per_token = Decimal(str(pricing[field]))
        except InvalidOperation:
            raise ModelListError(f"{where}: pricing.{field} {pricing[field]!r} is not a number") from None
        if not per_token.is_finite():
            raise ModelListError(f"{where}: pricing.{field} {pricing[field]!r} is not a price")
        if per_token < 0:
            return None
        entry[kind] = format((per_token * _PER_MILLION).normalize(), "f")
    return entry


def catalog_path(home: Path) -> Path:
    return home / CATALOG_FILE_NAME


def write_catalog(home: Path, catalog: Mapping[str, Any]) -> Path:
    """Replace the catalog file in one step (a reader never sees half of it)."""
    path = catalog_path(home)
    home.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(catalog, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


def with_catalog(home: Path, data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Config file data with the catalog's models and prices under its own (the config's win)."""
    path = catalog_path(home)
    if not path.is_file():
        return data
    try:
        catalog = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelListError(f"{path}: unreadable ({exc}); run `metis models update openrouter` again") from None
    if not isinstance(catalog, dict) or not all(isinstance(catalog.get(k), dict) for k in ("models", "prices")):
        raise ModelListError(f"{path}: no `models` and `prices` mappings; run `metis models update openrouter` again")
    merged = dict(data)
    for section in ("models", "prices"):
        own = data.get(section, {})
        merged[section] = {**catalog[section], **own} if isinstance(own, dict) else own  # else: validation says
    return merged

"""Strict-mode schema forms shared by the OpenAI-shaped APIs and Anthropic's native structured output.

`is_strict_compatible` says whether OpenAI's `strict: true` accepts a schema (every object closed, all
properties required). `closed_schema` closes every object that does not say `additionalProperties`,
which strict decoders require; answers validate against the caller's schema afterwards either way.
"""

from __future__ import annotations

from typing import Any

from metis_core.messages.schema_changes import SchemaChange


def is_strict_compatible(schema: Any) -> bool:
    """Strict mode needs every object closed (`additionalProperties: false`) with all properties required."""
    if not isinstance(schema, dict):
        return True
    if "anyOf" in schema:
        return all(is_strict_compatible(branch) for branch in schema["anyOf"])
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(properties):
            return False
        return all(is_strict_compatible(sub) for sub in properties.values())
    if "array" in kinds:
        return is_strict_compatible(schema.get("items"))
    return True


def closed_schema(schema: Any, path: str = "$", changes: list[SchemaChange] | None = None) -> Any:
    """A copy with `additionalProperties: false` on every object that leaves it unsaid (each one recorded)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    kind = out.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds and "additionalProperties" not in out:
        out["additionalProperties"] = False
        if changes is not None:
            changes.append(SchemaChange(path, "additionalProperties", "closed for strict decoding", lossy=True))
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: closed_schema(v, f"{path}.properties.{k}", changes)
                             for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = closed_schema(out["items"], f"{path}.items", changes)
    if isinstance(out.get("anyOf"), list):
        out["anyOf"] = [closed_schema(b, f"{path}.anyOf[{i}]", changes) for i, b in enumerate(out["anyOf"])]
    return out

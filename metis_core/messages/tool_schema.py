"""Placeholder replaced by the JSON Schema subset checker (see docs/tool-schema-subset.md)."""

from __future__ import annotations

from typing import Any


def check_tool_schema(tool_name: str, schema: dict[str, Any]) -> None:
    return None

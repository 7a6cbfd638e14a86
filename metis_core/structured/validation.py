"""Validating one answer text: strict first, lenient recovery only when the strict parse fails.

The clean path is one call into the spec's validator (pydantic's own JSON parser for model specs),
so an answer that needs no recovery costs what `model_validate_json` costs; the benchmark's
structured row holds it to at most 2x that.
"""

from __future__ import annotations

from typing import Any

from metis_core.structured.recovery import Recovery, Unrecoverable, recover_json
from metis_core.structured.spec import OutputInvalid, OutputSpec


def validate_answer(spec: OutputSpec, text: str | bytes, *, recover: bool = True) -> tuple[Any, Recovery | None]:
    """The validated value and how it was recovered (None when it was clean); OutputInvalid otherwise."""
    try:
        return spec.validate_json(text), None
    except OutputInvalid as invalid:
        if not invalid.parse_error or not recover:
            raise
        decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        try:
            value, recovery = recover_json(decoded)
        except Unrecoverable:
            raise invalid from None
    return spec.validate_python(value), recovery

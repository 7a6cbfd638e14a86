"""`-o KEY=VALUE` model options (and a template's `options:`) as AdapterOptions fields.

Only the options every adapter understands are accepted, each converted to its type, so a typo
or a bad value is refused before anything is sent (exit 2) instead of being ignored by a provider.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from metis_core.cli.exit_codes import UsageProblem

EFFORTS = ("minimal", "low", "medium", "high")


def _effort(value: str) -> str:
    if value not in EFFORTS:
        raise ValueError(value)
    return value


def _stop(value: str) -> list[str]:
    return [part for part in value.split(",") if part]


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(value)
    return number


CONVERTERS: dict[str, Callable[[str], Any]] = {
    "temperature": float, "top_p": float, "max_tokens": _positive_int, "thinking_budget_tokens": _positive_int,
    "reasoning_effort": _effort, "stop": _stop,
}  # fmt: skip
NEEDS = {
    "temperature": "a number", "top_p": "a number", "max_tokens": "a whole number of at least 1",
    "thinking_budget_tokens": "a whole number of at least 1", "reasoning_effort": " or ".join(EFFORTS),
    "stop": "comma-separated stop strings",
}  # fmt: skip


def parse_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """["temperature=0.2", ...] -> {"temperature": "0.2"}; a pair without `=` is refused."""
    found: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageProblem(f"option {pair!r} is not KEY=VALUE; e.g. -o temperature=0.2")
        found[key.strip()] = value.strip()
    return found


def model_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """Typed AdapterOptions keyword arguments from string (or already typed) values."""
    options: dict[str, Any] = {}
    for key, raw in values.items():
        convert = CONVERTERS.get(key)
        if convert is None:
            raise UsageProblem(f"unknown model option {key!r}; use {', '.join(CONVERTERS)}")
        try:
            options[key] = convert(",".join(raw) if isinstance(raw, list) else str(raw))
        except ValueError as error:
            del error
            raise UsageProblem(f"model option {key}={raw!r} is not valid: it needs {NEEDS[key]}") from None
    return options

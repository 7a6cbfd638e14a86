"""Gemini thought signatures: where they live in a canonical Message and how they go back on the wire.

A signature on a `thought` part is the ThinkingBlock's own `signature`. Signatures on functionCall
and text parts have no canonical field, so they live in `metadata.provider_raw["thought_signatures"]`
with their origin (gemini / generate_content / model): by canonical tool id for calls, by ordinal
among the message's text blocks for text, and `trailing` for an empty text part that carried one.
Stored in standard base64 (as responses carry them); sent URL-safe, as the google-genai SDK sends
every bytes field. This module does not decide whether to replay: request.py checks the origin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROVIDER = "gemini"
API = "generate_content"
RAW_KEY = "thought_signatures"

GEMINI_3_SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented stand-in for a functionCall Gemini 3 did not issue (another model's history)."""

_TO_STANDARD = str.maketrans("-_", "+/")
_TO_URLSAFE = str.maketrans("+/", "-_")


def to_standard_base64(value: str) -> str:
    """Canonical form of a base64 token: standard alphabet (`+`, `/`), whatever arrived."""
    return value.translate(_TO_STANDARD) if ("-" in value or "_" in value) else value


def to_urlsafe_base64(value: str) -> str:
    """Wire form: the URL-safe alphabet the google-genai SDK uses for bytes fields."""
    return value.translate(_TO_URLSAFE) if ("+" in value or "/" in value) else value


@dataclass(slots=True)
class SignatureTable:
    """The non-thought signatures of one model turn, keyed so that history repair cannot shift them."""

    model: str
    tool_use: dict[str, str] = field(default_factory=dict)
    text: dict[int, str] = field(default_factory=dict)
    trailing: str | None = None

    def __bool__(self) -> bool:
        return bool(self.tool_use or self.text or self.trailing)

    def to_raw(self) -> dict[str, Any]:
        raw: dict[str, Any] = {
            "origin": {"provider": PROVIDER, "api": API, "model": self.model},
            "tool_use": dict(self.tool_use),
            "text": {str(k): v for k, v in self.text.items()},
        }
        if self.trailing is not None:
            raw["trailing"] = self.trailing
        return raw

    @classmethod
    def from_raw(cls, raw: Any) -> SignatureTable | None:
        if not isinstance(raw, dict):
            return None
        origin = raw.get("origin")
        if not isinstance(origin, dict):
            return None
        table = cls(model=str(origin.get("model", "")))
        if origin.get("provider") != PROVIDER or origin.get("api") != API:
            table.model = ""  # never matches a real target
        tool_use = raw.get("tool_use")
        if isinstance(tool_use, dict):
            table.tool_use = {str(k): str(v) for k, v in tool_use.items()}
        text = raw.get("text")
        if isinstance(text, dict):
            table.text = {int(k): str(v) for k, v in text.items() if str(k).isdigit()}
        trailing = raw.get("trailing")
        table.trailing = trailing if isinstance(trailing, str) else None
        return table

    def origin_label(self) -> str:
        return f"{PROVIDER}/{API}/{self.model or '?'}"


def signature_table(provider_raw: dict[str, Any] | None) -> SignatureTable | None:
    """The table stored on an assistant message, if any."""
    if not provider_raw:
        return None
    return SignatureTable.from_raw(provider_raw.get(RAW_KEY))


def needs_skip_signature(model_name: str) -> bool:
    """Gemini 3 rejects a model turn whose first functionCall has no signature; older models do not."""
    return model_name.startswith("gemini-3")

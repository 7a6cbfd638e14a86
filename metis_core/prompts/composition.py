"""The parts a system prompt is assembled from, and the composed result with its record.

A PromptPart is one contribution (base instructions, a template at a version, memory, a skill,
tool output or fetched text) with its provenance and trust. `compose` joins them in order, wraps
every untrusted part in `<UNTRUSTED>...</UNTRUSTED>` so the model (and anyone reading the record)
can tell instructions from data, and returns the text with a hash-only record of each part for
`llm.prompt_composed`. Pure values: no I/O, no events (the agent emits, exports translate).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from metis_core.errors import PromptCompositionError
from metis_core.hashing import sha256_hex

PartKind = Literal["system", "template", "memory", "skill", "tool_output", "fetched"]
UNTRUSTED_KINDS: frozenset[str] = frozenset({"tool_output", "fetched"})
"""Kinds that are data, not instructions: untrusted unless a part says otherwise."""
UNTRUSTED_OPEN, UNTRUSTED_CLOSE = "<UNTRUSTED>", "</UNTRUSTED>"
_TEMPLATE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
_SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


@dataclass(frozen=True)
class PromptPart:
    """One contribution to a system prompt. `template_id`/`version` name where it came from."""

    kind: PartKind
    text: str
    template_id: str | None = None
    """Lower-case id (letters, digits, . _ -), e.g. `coding-assistant`; required for templates."""
    version: str | None = None
    """Semantic version of the template or skill, e.g. 1.2.0."""
    variables: Mapping[str, str] = field(default_factory=dict)
    """Values bound into a template: only their hashes are recorded."""
    trusted: bool | None = None
    """None: by kind (tool output and fetched text are untrusted, the rest trusted)."""

    def __post_init__(self) -> None:
        if self.template_id is not None and not _TEMPLATE_ID.match(self.template_id):
            raise PromptCompositionError(
                f"prompt part id {self.template_id!r} must be 1-128 lower-case letters, digits, '.', '_' or '-'")
        if self.version is not None and not _SEMVER.match(self.version):
            raise PromptCompositionError(f"prompt part version {self.version!r} is not a semantic version (1.2.0)")
        if self.kind == "template" and self.template_id is None:
            raise PromptCompositionError("a template part needs its template_id (and should carry its version)")

    @property
    def is_trusted(self) -> bool:
        return self.trusted if self.trusted is not None else self.kind not in UNTRUSTED_KINDS

    @property
    def ref(self) -> str | None:
        """The OpenWOP PromptRef form, `prompt:<id>[@<version>]`."""
        if self.template_id is None:
            return None
        return f"prompt:{self.template_id}" + (f"@{self.version}" if self.version else "")

    def rendered(self) -> str:
        if self.is_trusted:
            return self.text
        # A closing marker inside the data would end the untrusted span early: neutralise it.
        inner = self.text.replace(UNTRUSTED_CLOSE, "</UNTRUSTED_>")
        return f"{UNTRUSTED_OPEN}\n{inner}\n{UNTRUSTED_CLOSE}"


@dataclass(frozen=True)
class Composition:
    """A composed system prompt and what went into it."""

    text: str
    parts: tuple[PromptPart, ...]

    @property
    def hash(self) -> str:
        return sha256_hex(self.text)

    @property
    def content_trust(self) -> Literal["trusted", "untrusted"]:
        return "trusted" if all(part.is_trusted for part in self.parts) else "untrusted"

    def record(self) -> dict[str, Any]:
        """The llm.prompt_composed payload: hashes, refs and trust, never the text."""
        variables: dict[str, str] = {}
        for part in self.parts:
            for name, value in part.variables.items():
                variables[f"{part.template_id}.{name}" if part.template_id else name] = sha256_hex(value)
        return {
            "kind": "system-only", "hash": self.hash, "content_trust": self.content_trust,
            "parts": [{"kind": part.kind, "ref": part.ref, "version": part.version,
                       "hash": sha256_hex(part.text), "size_chars": len(part.text), "trusted": part.is_trusted}
                      for part in self.parts],
            "variable_hashes": variables,
        }


PART_SEPARATOR = "\n\n"


def compose(parts: Iterable[PromptPart]) -> Composition | None:
    """Join the non-empty parts in order (untrusted ones marked); None when nothing is left."""
    kept = tuple(part for part in parts if part.text.strip())
    if not kept:
        return None
    return Composition(PART_SEPARATOR.join(part.rendered() for part in kept), kept)

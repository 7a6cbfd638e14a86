"""Turn fingerprints: the structural shape of a request, comparable without its content.

Features: the leading verb (from a fixed lexicon, else "other"), message size and context size
buckets, images, code in the message, the writing system, the workspace kind (marker files) and
the tools earlier turns used. Two fingerprints are compared by a weighted mismatch distance in
[0, 1]. An optional embedding hook makes the fingerprint "hybrid" and adds cosine distance.
No text is stored: only these categories (and, for hybrid, the vector).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from metis_core.hashing import sha256_hex

Embedder = Callable[[str], Sequence[float] | None]
"""Text → vector; None when it could not embed (the fingerprint then stays structural)."""
LEAD_VERBS = frozenset({
    "add", "analyze", "answer", "build", "calculate", "check", "clean", "compare", "compute", "convert", "create",
    "debug", "define", "delete", "derive", "describe", "design", "document", "draft", "edit", "estimate",
    "evaluate", "explain", "extract", "find", "fix", "format", "generate", "implement", "improve", "list", "make",
    "migrate", "optimize", "outline", "plan", "prove", "read", "refactor", "remove", "rename", "review",
    "rewrite", "run", "search", "show", "solve", "sort", "suggest", "summarize", "test", "translate", "update",
    "what", "when", "where", "which", "who", "why", "how", "write",
})  # fmt: skip
WORKSPACE_MARKERS = (
    ("pyproject.toml", "python"), ("setup.py", "python"), ("package.json", "node"), ("Cargo.toml", "rust"),
    ("go.mod", "go"), ("pom.xml", "java"), ("build.gradle", "java"), ("Gemfile", "ruby"), ("composer.json", "php"),
    ("CMakeLists.txt", "c++"), ("Makefile", "make"),
)  # fmt: skip
WEIGHTS = {"lead": 3.0, "size": 2.0, "images": 2.0, "context": 1.0, "code": 1.0, "script": 1.0, "workspace": 1.0,
           "tools_used": 1.0}  # fmt: skip
EMBEDDING_WEIGHT = 3.0
FEATURE_ORDER = ("lead", "size", "context", "images", "code", "script", "workspace", "tools_used")
WORD = re.compile(r"[A-Za-z']+")
CODE = re.compile(r"```|\bdef |\bclass |\bfunction\b|=>|;\s*$|\{\s*$", re.MULTILINE)


def _bucket(value: int, edges: Sequence[int], names: Sequence[str]) -> str:
    for edge, name in zip(edges, names, strict=False):
        if value < edge:
            return name
    return names[-1]


def script_of(text: str) -> str:
    counts = {"latin": 0, "cyrillic": 0, "cjk": 0, "arabic": 0, "other": 0}
    for char in text:
        if not char.isalpha():
            continue
        point = ord(char)
        if point < 0x250:
            counts["latin"] += 1
        elif 0x400 <= point < 0x530:
            counts["cyrillic"] += 1
        elif 0x3040 <= point < 0xA000 or 0xAC00 <= point < 0xD7B0:
            counts["cjk"] += 1
        elif 0x600 <= point < 0x700:
            counts["arabic"] += 1
        else:
            counts["other"] += 1
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] else "none"


def workspace_kind(workspace: str) -> str:
    if not workspace:
        return "none"
    root = Path(workspace)
    for marker, kind in WORKSPACE_MARKERS:
        if (root / marker).exists():
            return kind
    return "plain"


@dataclass(frozen=True)
class Fingerprint:
    features: dict[str, Any]
    embedding: tuple[float, ...] | None = field(default=None, compare=False)

    @property
    def kind(self) -> str:
        return "hybrid" if self.embedding is not None else "structural"

    @property
    def key(self) -> str:
        """Identical features (and kind) share one stored fingerprint row."""
        return sha256_hex(orjson.dumps({"kind": self.kind, **self.features}, option=orjson.OPT_SORT_KEYS).decode())


def fingerprint(
    user_text: str, *, estimated_tokens: int, has_images: bool, workspace: str, tools_used: Sequence[str],
    embed: Embedder | None = None,
) -> Fingerprint:
    words = WORD.findall(user_text[:200].lower())
    lead = words[0].strip("'") if words else ""
    features = {
        "lead": lead if lead in LEAD_VERBS else "other",
        "size": _bucket(len(user_text), (80, 300, 1200, 5000), ("xs", "s", "m", "l", "xl")),
        "context": _bucket(estimated_tokens, (2_000, 16_000, 64_000), ("small", "medium", "large", "huge")),
        "images": has_images,
        "code": CODE.search(user_text) is not None,
        "script": script_of(user_text[:2000]),
        "workspace": workspace_kind(workspace),
        "tools_used": sorted(set(tools_used)),
    }
    embedded = embed(user_text) if embed is not None else None
    vector = tuple(float(x) for x in embedded) if embedded is not None else None
    return Fingerprint(features, vector)


def in_feature_order(features: dict[str, Any]) -> dict[str, Any]:
    """`features` in the order `fingerprint` writes them (PostgreSQL's jsonb reorders keys)."""
    rank = {name: i for i, name in enumerate(FEATURE_ORDER)}
    return dict(sorted(features.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])))


def distance(a: Fingerprint, b: Fingerprint) -> float:
    """0 for identical fingerprints, 1 for nothing in common."""
    total = weight = 0.0
    for name, w in WEIGHTS.items():
        left, right = a.features.get(name), b.features.get(name)
        if name == "tools_used":
            ls, rs = set(left or ()), set(right or ())
            miss = 0.0 if ls == rs else 1.0 - len(ls & rs) / len(ls | rs)
        else:
            miss = 0.0 if left == right else 1.0
        total += w * miss
        weight += w
    if a.embedding is not None and b.embedding is not None:
        total += EMBEDDING_WEIGHT * (1.0 - _cosine(a.embedding, b.embedding)) / 2
        weight += EMBEDDING_WEIGHT
    return total / weight


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0

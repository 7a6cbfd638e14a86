"""A seeded mutator over the recorded provider traffic in tests/data/shared/fixtures/wire.

Bodies are mutated as JSON (a field dropped, a value of the wrong type, a huge number, 5,000-deep
nesting, a list shuffled) or as bytes (truncated, flipped, non-UTF-8); streams additionally lose,
repeat or swap whole events, or have one event's JSON mutated. Same seed, same case.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WIRE = Path(__file__).parent / "data" / "shared" / "fixtures" / "wire"

MODELS = {
    "anthropic": ["anthropic:claude-sonnet-4-5"],
    "openai_chat": ["openai:gpt-4o", "openai_compatible:local-model"],
    "openai_responses": ["openai_responses:gpt-5"],
    "gemini": ["gemini:gemini-2.5-flash"],
    "ollama": ["ollama:llama3.2"],
    "openrouter": ["openrouter:anthropic/claude-sonnet-4.5"],
}

DEEP = 5000
_DEEP_MARK = "\u0000deep\u0000"
_ODD_VALUES: list[Any] = [
    None, True, 0, -1, 2**64, 2**63, -(2**63) - 1, 10**30, 1e308, -1.5, "", "x", "\u0000", [], {}, [1, "a", None],
    {"type": "text"}, {"index": None}, [[[]]], _DEEP_MARK, "\ud800".encode("utf-8", "surrogatepass").decode("latin-1"),
]


def _odd(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(_ODD_VALUES))


@dataclass(frozen=True)
class Sample:
    provider_dir: str
    kind: str  # "response" | "stream" | "error"
    name: str
    body: bytes


@dataclass
class Case:
    sample: Sample
    model: str
    body: bytes
    status: int
    mutation: str


def load_samples() -> list[Sample]:
    samples = []
    for directory in sorted(WIRE.iterdir()):
        if directory.name not in MODELS:
            continue
        for path in sorted(directory.iterdir()):
            kind = path.name.split("__", 1)[0]
            if kind in {"response", "stream", "error"} and not path.name.endswith((".source.txt", ".jsonc")):
                samples.append(Sample(directory.name, kind, path.name, path.read_bytes()))
    return samples


def _dumps(value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False)
    deep = "[" * DEEP + "]" * DEEP
    return text.replace(json.dumps(_DEEP_MARK, ensure_ascii=False), deep).encode("utf-8", "surrogatepass")


def _containers(value: Any, out: list[Any]) -> list[Any]:
    if isinstance(value, dict):
        out.append(value)
        for item in value.values():
            _containers(item, out)
    elif isinstance(value, list):
        out.append(value)
        for item in value:
            _containers(item, out)
    return out


def mutate_json(rng: random.Random, value: Any) -> tuple[Any, str]:
    """One structural mutation of a parsed JSON value (in place where possible)."""
    containers = _containers(value, [])
    if not containers:
        return _odd(rng), "replace-root"
    target = rng.choice(containers)
    keys = list(target) if isinstance(target, dict) else list(range(len(target)))
    if not keys:
        (target.__setitem__("x", _odd(rng)) if isinstance(target, dict) else target.append(None))
        return value, "fill-empty"
    key = rng.choice(keys)
    choice = rng.random()
    if choice < 0.3:
        del target[key]
        return value, f"drop {key!r}"
    if choice < 0.75:
        odd = _odd(rng)
        target[key] = odd
        return value, f"set {key!r}={'deep' if odd == _DEEP_MARK else repr(odd)[:30]}"
    if choice < 0.85 and isinstance(target, list):
        rng.shuffle(target)
        target.extend(copy.deepcopy(target[: rng.randint(0, 2)]))
        return value, "shuffle-list"
    if choice < 0.95:
        target[key] = _DEEP_MARK
        return value, f"deep {key!r}"
    target[key] = [target[key]] if rng.random() < 0.5 else {"value": target[key]}
    return value, f"wrap {key!r}"


def mutate_bytes(rng: random.Random, body: bytes) -> tuple[bytes, str]:
    if not body:
        return b"\xff", "garbage"
    choice = rng.random()
    if choice < 0.5:
        cut = rng.randrange(len(body))
        return body[:cut], f"truncate@{cut}"
    if choice < 0.8:
        data = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data), "flip-bytes"
    position = rng.randrange(len(body))
    return body[:position] + rng.choice([b"\xff\xfe", b"\x00", b"}}}", b"\n\n", b"data: {"]) + body[position:], "insert"


def mutate_body(rng: random.Random, body: bytes) -> tuple[bytes, str]:
    if rng.random() < 0.7:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return mutate_bytes(rng, body)
        for _ in range(rng.randint(1, 3)):
            value, what = mutate_json(rng, value)
        return _dumps(value), what
    return mutate_bytes(rng, body)


def _split_stream(body: bytes, sse: bool) -> tuple[list[bytes], bytes]:
    sep = b"\r\n\r\n" if sse and b"\r\n\r\n" in body else (b"\n\n" if sse else b"\n")
    return [part for part in body.split(sep) if part.strip()], sep


def _mutate_event(rng: random.Random, event: bytes) -> tuple[bytes, str]:
    lines = event.split(b"\n")
    for number, line in enumerate(lines):
        stripped = line.rstrip(b"\r")
        prefix = b"data:" if stripped.startswith(b"data:") else b""
        payload = stripped[len(prefix):]
        try:
            value = json.loads(payload)
        except (ValueError, RecursionError):
            continue
        value, what = mutate_json(rng, value)
        lines[number] = prefix + (b" " if prefix else b"") + _dumps(value)
        return b"\n".join(lines), what
    return mutate_bytes(rng, event)


def mutate_stream(rng: random.Random, body: bytes, sse: bool) -> tuple[bytes, str]:
    events, sep = _split_stream(body, sse)
    if not events:
        return mutate_bytes(rng, body)
    what = []
    for _ in range(rng.randint(1, 3)):
        choice = rng.random()
        i = rng.randrange(len(events))
        if choice < 0.5:
            events[i], how = _mutate_event(rng, events[i])
            what.append(f"event{i} {how}")
        elif choice < 0.65 and len(events) > 1:
            del events[i]
            what.append(f"drop-event{i}")
        elif choice < 0.75:
            events.insert(i, events[i])
            what.append(f"repeat-event{i}")
        elif choice < 0.9:
            j = rng.randrange(len(events))
            events[i], events[j] = events[j], events[i]
            what.append(f"swap-events{i},{j}")
        else:
            events[i], how = mutate_bytes(rng, events[i])
            what.append(f"event{i} {how}")
        if not events:
            break
    out = sep.join(events) + sep
    if rng.random() < 0.15:
        out = out[: rng.randrange(len(out) + 1)]
        what.append("truncate-stream")
    return out, "; ".join(what)


def make_case(rng: random.Random, samples: list[Sample]) -> Case:
    sample = rng.choice(samples)
    model = rng.choice(MODELS[sample.provider_dir])
    if sample.kind == "stream":
        body, what = mutate_stream(rng, sample.body, sse=not sample.name.endswith(".ndjson"))
        return Case(sample, model, body, 200, what)
    body, what = mutate_body(rng, sample.body)
    status = 200 if sample.kind == "response" else rng.choice([400, 401, 403, 404, 408, 413, 429, 500, 503, 529])
    return Case(sample, model, body, status, what)

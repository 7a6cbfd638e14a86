"""How far the pre-flight token estimate is from what providers counted, on recorded traffic.

Pairs each recorded request in tests/data/shared/fixtures/wire with the response of the same
recorded exchange (same cassette and interaction), reads the request into canonical messages with
the provider's own request reader, and compares `estimate_tokens` (and tiktoken, when installed,
for OpenAI models) with the input tokens the provider reported. Run: python -m bench.token_estimate_error
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from metis_core.adapters._common.token_estimate import estimate_tokens
from metis_core.adapters.token_count import tiktoken_count

WIRE = Path(__file__).resolve().parent.parent / "tests" / "data" / "shared" / "fixtures" / "wire"
_SOURCE = re.compile(r"(\S+\.yaml) @ commit \w+ — interaction #(\d+)")


def pairs() -> list[tuple[str, Path, Path]]:
    """(provider directory, request file, response file) of the same recorded exchange."""
    found: dict[tuple[str, str, str], dict[str, Path]] = {}
    for source in sorted(WIRE.glob("*/*.source.txt")):
        match = _SOURCE.search(source.read_text(encoding="utf-8"))
        if match is None:
            continue
        body = source.with_name(source.name.removesuffix(".source.txt"))
        kind = body.name.split("__", 1)[0]
        found.setdefault((source.parent.name, match.group(1), match.group(2)), {})[kind] = body
    out = []
    for (provider, _, _), files in sorted(found.items()):
        answer = files.get("response") or files.get("stream")
        if "request" in files and answer is not None:
            out.append((provider, files["request"], answer))
    return out


def _payloads(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return [json.loads(text)]
    found = []
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            found.append(json.loads(line[5:]))
    return found


def reported_input_tokens(provider: str, path: Path) -> int | None:
    """The input tokens the provider counted (cached and cache-write tokens included)."""
    best = None
    for payload in _payloads(path):
        usage = payload.get("usage") or (payload.get("message") or {}).get("usage") \
            or (payload.get("response") or {}).get("usage") or payload.get("usageMetadata")
        if not usage:
            continue
        if provider == "gemini":
            value = usage.get("promptTokenCount")
        elif provider == "anthropic":
            value = (usage.get("input_tokens") or 0) + (usage.get("cache_read_input_tokens") or 0) \
                + (usage.get("cache_creation_input_tokens") or 0)
        else:
            value = usage.get("prompt_tokens") or usage.get("input_tokens")
        if value:
            best = int(value)
    return best


def canonical(provider: str, body: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    if provider == "anthropic":
        from metis_core.adapters.anthropic.request_reader import read_request

        read = read_request(body)
        return read.messages, read.tools
    if provider == "gemini":
        from metis_core.adapters.gemini.request_reader import read_request as read_gemini

        got = read_gemini(body, model="gemini:gemini-2.5-flash")
        return got.messages, got.tools
    if provider == "openai_responses":
        from metis_core.adapters.openai_responses.request_reader import read_request as read_responses

        parsed = read_responses(body)
        return parsed.messages, parsed.tools
    from metis_core.adapters.openai_chat.request_reader import ChatRequestReader

    chat = ChatRequestReader(provider=provider).read(body)
    return chat.messages, chat.tools


def main() -> int:
    rows = []
    for provider, request, answer in pairs():
        reported = reported_input_tokens(provider, answer)
        if reported is None:
            continue
        body = json.loads(request.read_text(encoding="utf-8"))
        try:
            messages, tools = canonical(provider, body)
        except Exception as error:  # a request the readers cannot take is reported, not measured
            print(f"skipped {provider}/{request.name}: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        estimate = estimate_tokens(messages, tools)
        model = str(body.get("model", ""))
        counted = tiktoken_count(model, messages, tools) if provider.startswith("openai") else None
        rows.append((provider, request.name, reported, estimate, counted))
    print(f"{'provider':<17} {'request':<58} {'reported':>8} {'estimate':>8} {'error':>7} {'tiktoken':>8}")
    errors = []
    for provider, name, reported, estimate, counted in rows:
        relative = (estimate - reported) / reported
        errors.append(relative)
        shown = "-" if counted is None else str(counted)
        print(f"{provider:<17} {name[:58]:<58} {reported:>8} {estimate:>8} {relative:>+7.0%} {shown:>8}")
    if errors:
        absolute = [abs(e) for e in errors]
        print(f"\n{len(errors)} recorded exchanges: median |error| {statistics.median(absolute):.0%}, "
              f"mean error {statistics.mean(errors):+.0%}, worst under {min(errors):+.0%}, "
              f"worst over {max(errors):+.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

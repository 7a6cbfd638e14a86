"""Canonical -> wire translation of the 40-message conversation, per provider, against a hand-written mapping.

metis-core's figure is `adapter.to_wire(messages, tools, options)` (history repair, tool-id
mapping, capability-driven options and the lossy log included); the floor is bench/handwritten.py,
the least code that builds the same request. Both outputs are checked: the same tool calls with the
same arguments, the same number of tool results, and every user prompt present.
"""

from __future__ import annotations

from typing import Any

import orjson

from bench import handwritten
from bench.context import RunContext
from bench.figures import HANDWRITTEN, METIS, Figure, Target, with_floor
from bench.peers.metis import canonical_conversation, canonical_tools, options_for
from bench.scenarios import WrongAnswerError, conversation
from bench.timing import median, per_call_batches
from metis_core.adapters.registry import get_adapter

TARGET = Target("ratio_max", 2.0)
PROVIDERS = ("anthropic", "openai", "openai_responses", "gemini", "ollama", "openrouter")
EXPECTED_CALLS = sum(1 for turn in conversation() if turn.tool_call is not None)


def _walk(node: Any, calls: list[Any], results: list[Any]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, calls, results)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "tool_use":
        calls.append(node["input"])
    elif kind == "function_call":
        calls.append(orjson.loads(node["arguments"]))
    elif "functionCall" in node:
        calls.append(node["functionCall"]["args"])
    elif isinstance(node.get("function"), dict) and "arguments" in node["function"]:
        args = node["function"]["arguments"]
        calls.append(orjson.loads(args) if isinstance(args, str) else args)
    if kind in ("tool_result", "function_call_output") or "functionResponse" in node or node.get("role") == "tool":
        results.append(node)
    for value in node.values():
        if isinstance(value, dict | list):
            _walk(value, calls, results)


def check_wire(who: str, body: dict[str, Any]) -> None:
    """The request carries all 10 tool calls with their arguments, 10 results and every user prompt."""
    calls: list[Any] = []
    results: list[Any] = []
    _walk(body, calls, results)
    expected = [turn.tool_call[2] for turn in conversation() if turn.tool_call is not None]
    if calls != expected:
        raise WrongAnswerError(f"{who}: tool calls differ: {len(calls)} found, {len(expected)} expected")
    if len(results) != EXPECTED_CALLS:
        raise WrongAnswerError(f"{who}: {len(results)} tool results, expected {EXPECTED_CALLS}")
    dumped = orjson.dumps(body).decode()
    for turn in conversation():
        if turn.role == "user" and orjson.dumps(turn.text).decode()[1:-1] not in dumped:
            raise WrongAnswerError(f"{who}: user prompt {turn.text[:40]!r} is missing")


def run_provider(ctx: RunContext, provider: str) -> list[Figure]:
    sizes = ctx.sizes
    messages, tools = canonical_conversation(), canonical_tools()
    adapter = get_adapter(provider)
    options = options_for(provider)
    mapping = handwritten.MAPPINGS[provider]

    def metis() -> dict[str, Any]:
        return adapter.to_wire(messages, tools, options).body

    def floor() -> dict[str, Any]:
        return mapping(messages)

    check_wire(METIS, metis())
    check_wire(HANDWRITTEN, floor())
    timings: dict[str, list[float]] = {METIS: [], HANDWRITTEN: []}
    for _ in range(sizes.repeats):  # alternate, one batch each, so noise hits both
        timings[HANDWRITTEN] += per_call_batches(floor, number=sizes.translate_number, repeat=1)
        timings[METIS] += per_call_batches(metis, number=sizes.translate_number, repeat=1)
    check_wire(METIS, metis())
    row = f"canonical -> wire, 40 messages · {provider}"
    figures = [Figure("translate", row, name, median(values) * 1e6, "µs", len(values) * sizes.translate_number)
               for name, values in timings.items()]
    return with_floor(figures, TARGET, HANDWRITTEN)


def run(ctx: RunContext) -> list[Figure]:
    figures: list[Figure] = []
    for provider in PROVIDERS:
        figures += run_provider(ctx, provider)
    return figures

"""Ollama token counts and timings -> canonical Usage, and the stop-reason mapping.

Ollama has no prompt cache accounting: `prompt_eval_count` is all input, `eval_count` all output
(thinking included). Durations are nanoseconds; they go to provider_raw, not into Usage. Pricing is
not done here (local models are priced at 0 by the price table, via RequestContext.finish_usage).
"""

from __future__ import annotations

from typing import Any

from metis_core.messages import Usage

DURATION_FIELDS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
"""Nanosecond timings Ollama reports on the final chunk; kept verbatim in provider_raw."""


def usage_from_ollama(body: dict[str, Any]) -> Usage:
    """Counts are omitted (not 0) when Ollama skipped the work, e.g. a fully KV-cached prompt."""
    return Usage(
        input_tokens=_count(body.get("prompt_eval_count")),
        output_tokens=_count(body.get("eval_count")),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def timings_from_ollama(body: dict[str, Any]) -> dict[str, Any]:
    return {name: body[name] for name in DURATION_FIELDS if name in body}


def stop_reason_from_ollama(done_reason: str | None, *, has_tool_calls: bool) -> str:
    """Canonical stop reason. Ollama says "stop" both for end of turn and a hit stop sequence.

    Tool calls come back with done_reason "stop"; they mean the model wants them run, so tool_use.
    A missing done_reason (servers before mid-2024, as in the docs examples) counts as "stop".
    """
    if done_reason == "length":
        return "max_tokens"
    if has_tool_calls:
        return "tool_use"
    return "end_turn"

"""OutputPolicy: how hard to try for a valid structured answer (retry budgets, NL-to-format, recovery).

Plain settings with the defaults docs/structured-output.md explains; the driver reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_ATTEMPTS = 16
"""OpenWOP's envelope.retry.attempted caps `attempt` at 16; budgets are clamped to stay inside it."""


@dataclass(frozen=True, slots=True)
class OutputPolicy:
    """`max_retries`: corrective retries after a parse error or schema violation. `max_truncation_retries`:
    retries with the output budget doubled after a max_tokens stop (up to the model's limit).
    `nl_to_format`: after exhaustion, one free-form answer then one call that only coerces it.
    `recover`: lenient recovery (fences, prose, damaged JSON) before validation."""

    max_retries: int = 2
    max_truncation_retries: int = 2
    nl_to_format: bool = False
    recover: bool = True

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.max_truncation_retries < 0:
            raise ValueError("retry budgets cannot be negative")
        if 1 + self.max_retries + self.max_truncation_retries > MAX_ATTEMPTS:
            raise ValueError(f"at most {MAX_ATTEMPTS} attempts in all (OpenWOP caps envelope retries at 16)")

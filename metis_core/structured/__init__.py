"""Structured output: typed answers from any model, with recovery, corrective retries and refusals.

Sits between models/ and adapters/: it knows the canonical format and model capabilities, never a
provider's wire shape (each adapter's `structured.py` says how its API carries a schema) and never
the event bus (steps go to an observer the caller supplies; docs/structured-output.md).
"""

from metis_core.structured.policy import OutputPolicy
from metis_core.structured.recovery import Recovery, recover_json
from metis_core.structured.result import OutputAttempt, StructuredResult
from metis_core.structured.spec import OutputSpec, output_spec
from metis_core.structured.steps import OutputObserver, OutputStep

__all__ = [
    "OutputAttempt", "OutputObserver", "OutputPolicy", "OutputSpec", "OutputStep", "Recovery", "StructuredResult",
    "output_spec", "recover_json",
]

"""Kept for imports written before the scrubber moved below the agent: see events/redaction.py."""

from metis_core.events.redaction import redact

__all__ = ["redact"]

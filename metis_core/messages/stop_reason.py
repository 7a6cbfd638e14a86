"""`StopReason`: the canonical set of reasons a model stopped (docs/canonical-format.md).

A message stores its reason as a plain string (`metadata.stop_reason`), so a call never needs this
enum; readers that name the reasons (replays, reports) import it.
"""

from enum import StrEnum


class StopReason(StrEnum):
    """Why a model stopped: the canonical set every adapter maps its provider's reasons onto.

    `refusal` is the provider declining (a safety stop, a content filter, a `refusal` field), kept
    apart from `end_turn` so the record shows it. `metadata.stop_reason` stays a plain string so a
    reason added by a newer writer is still read (§10.3).
    """

    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    TOOL_USE = "tool_use"
    REFUSAL = "refusal"
    ERROR = "error"
    CANCELLED = "cancelled"

"""Prompt composition: the parts of a system prompt, their trust, and the record of what was composed.

Depends on messages and hashing only; the agent uses it and emits llm.prompt_composed, and the
exports translate that event (OpenWOP prompt.composed). Nothing below the agent imports it.
"""

from metis_core.prompts.composer import CompositionContext, PromptComposer, PromptSource
from metis_core.prompts.composition import Composition, PromptPart, compose

__all__ = ["Composition", "CompositionContext", "PromptComposer", "PromptPart", "PromptSource", "compose"]

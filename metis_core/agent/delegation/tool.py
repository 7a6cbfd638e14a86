"""The built-in `delegate` tool: hand a sub-task to a worker session on a tier's model.

Offered when `delegation.tiers` is configured. The worker's answer is the tool result; every
failure mode (docs/delegation.md) is an error result naming the mode, so the planner can retry on
another tier, give more context, or do the work itself.
"""

from __future__ import annotations

from typing import Any

from metis_core.agent.delegation.tiers import DELEGATE_TOOL_NAME, TIERS
from metis_core.agent.delegation.worker import Delegation, DelegationRequest
from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.messages import SideEffects, ToolDefinition

DESCRIPTION = (
    "Delegate one self-contained sub-task to a worker agent on a cheaper or stronger model and get its "
    "answer back. tier: fast (cheap, quick), balanced, deep (strongest). context_mode minimal sends the "
    "task text only (references are named, the worker may read them); explicit also sends the contents "
    "of the referenced workspace files. allowed_tools limits the worker's tools (default: all but "
    "delegate). Several delegate calls in one response run in parallel."
)


class DelegateTool:
    definition = ToolDefinition(
        name=DELEGATE_TOOL_NAME,
        description=DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "task": {"type": "string", "minLength": 1, "description": "What the worker must do, fully stated."},
                "tier": {"type": "string", "enum": list(TIERS)},
                "context_mode": {"type": "string", "enum": ["minimal", "explicit"],
                                 "description": "Default minimal."},
                "references": {"type": "array", "items": {"type": "string"}, "maxItems": 20,
                               "description": "Workspace-relative file paths."},
                "allowed_tools": {"type": "array", "items": {"type": "string"}, "maxItems": 64},
            },
            "required": ["task", "tier"],
            "additionalProperties": False,
        },
        side_effects=SideEffects.NONE,  # the worker's own tools ask for confirmation themselves
        requires_workspace=True,
    )

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        if context.session is None or context.call is None:
            return ToolOutcome.failure("execution_error", "delegate can only run inside a session's turn")
        if context.session.is_worker:
            return ToolOutcome.failure("permission_denied", "a worker cannot delegate further")
        request = DelegationRequest.from_input(tool_input)
        return await Delegation(self.runtime, context.session, context.call, request).run()

"""Tool inputs checked where a response is parsed (canonical format §5 invariant 4: ingress, then dispatch).

When the request offered tools, every tool_use of a COMPLETE answer is validated against the offered
definition of that name; what fails is recorded on the message (`metadata.tool_input_violations`,
keyed by tool_use id) and logged, so a malformed call is on the record before anything runs it. The
message itself is not altered and nothing is raised: the agent's dispatcher answers the model with
the errors (tool.input_invalid), and a direct caller reads them from the metadata.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from metis_core.messages import ContentBlock, ToolDefinition, ToolUseBlock

log = logging.getLogger("metis_core.adapters.tool_input")


def ingress_violations(
    content: Sequence[ContentBlock], tools: Sequence[ToolDefinition], *, message_id: str, model: str
) -> dict[str, list[str]] | None:
    """tool_use id -> its violations, for the calls that fail; None when all pass or no tools were offered."""
    if not tools:
        return None
    uses = [block for block in content if type(block) is ToolUseBlock]
    if not uses:
        return None
    from metis_core.messages.tool_input import tool_input_violations  # jsonschema: only once tools are offered

    found: dict[str, list[str]] = {}
    offered = {tool.name: tool for tool in tools}
    for block in uses:
        definition = offered.get(block.name)
        if definition is None:
            problems = [f"{block.name!r} was not offered to the model (offered: {', '.join(sorted(offered))})"]
        else:
            problems = tool_input_violations(definition, block.input)
        if problems:
            found[block.id] = problems
            log.warning("%s called %s with input that fails its schema: %s", model, block.name, "; ".join(problems),
                        extra={"message_id": message_id, "tool_use_id": block.id, "tool_name": block.name})
    return found or None

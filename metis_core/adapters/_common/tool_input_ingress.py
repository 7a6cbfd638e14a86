"""Tool inputs checked where a response is parsed (canonical format §5 invariant 4: ingress, then dispatch).

When the request offered tools, every tool_use of a COMPLETE answer is validated against the offered
definition of that name; what fails is recorded on the message (`metadata.tool_input_violations`,
keyed by tool_use id) and logged, so a malformed call is on the record before anything runs it. The
message itself is not altered and nothing is raised: the agent's dispatcher answers the model with
the errors (tool.input_invalid), and a direct caller reads them from the metadata.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from metis_core.messages import ContentBlock, ToolUseBlock

if TYPE_CHECKING:
    from metis_core.messages import ToolDefinition

log = logging.getLogger("metis_core.adapters.tool_input")


def ingress_violations(
    content: Sequence[ContentBlock], tools: Sequence[ToolDefinition], *, message_id: str, model: str,
    exempt: Collection[str] = (),
) -> dict[str, list[str]] | None:
    """tool_use id -> its violations, for the calls that fail; None when all pass or no tools were offered.
    Calls in `exempt` (to tools the provider itself defines, e.g. Responses' apply_patch) are not checked."""
    if not tools:
        return None
    found: dict[str, list[str]] = {}
    for block in content:
        if type(block) is not ToolUseBlock or block.id in exempt:
            continue
        name = block.name
        problems = None
        for tool in reversed(tools):  # the last of a name wins, as in a name -> tool dict (not built: one or two calls)
            if tool.name == name:
                problems = _violations()(tool, block.input)
                break
        if problems is None:
            offered = ", ".join(sorted({tool.name for tool in tools}))
            problems = [f"{name!r} was not offered to the model (offered: {offered})"]
        if problems:
            found[block.id] = problems
            log.warning("%s called %s with input that fails its schema: %s", model, name, "; ".join(problems),
                        extra={"message_id": message_id, "tool_use_id": block.id, "tool_name": name})
    return found or None


_checker: list[Callable[[ToolDefinition, Any], list[str]]] = []


def _violations() -> Callable[[ToolDefinition, Any], list[str]]:
    """`tool_input_violations`, imported on first use (it loads jsonschema: only once tools are offered)."""
    if not _checker:
        from metis_core.messages.tool_input import tool_input_violations

        _checker.append(tool_input_violations)
    return _checker[0]

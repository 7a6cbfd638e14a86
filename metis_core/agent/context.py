"""What a turn carries: its needs for routing, and the history ready for an adapter.

File-reference images (`ImageSource(kind="file_ref")`, a workspace path) are stored as references
and read into base64 only when a request is built, so the store does not hold image bytes twice
and adapters stay free of I/O.
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path

from metis_core.adapters._common.token_estimate import estimate_tokens
from metis_core.agent.tools.workspace import confine
from metis_core.errors import InvalidToolPathError, PathEscapeError
from metis_core.messages import (
    ImageBlock,
    ImageSource,
    Message,
    Role,
    ToolDefinition,
    ToolResultBlock,
)
from metis_core.routing.engine import TurnNeeds

log = logging.getLogger("metis_core.agent")


def has_images(messages: list[Message]) -> bool:
    for message in messages:
        for block in message.content:
            if isinstance(block, ImageBlock):
                return True
            if isinstance(block, ToolResultBlock) and any(isinstance(b, ImageBlock) for b in block.content):
                return True
    return False


def turn_needs(
    history: list[Message],
    tools: list[ToolDefinition],
    workspace: Path,
    user_text: str,
    hosted_tools: tuple[str, ...] = (),
) -> TurnNeeds:
    return TurnNeeds(
        hosted_tools=hosted_tools,
        has_images=has_images(history),
        has_tools=bool(tools),
        has_system_prompt=any(m.role is Role.SYSTEM for m in history),
        estimated_input_tokens=estimate_tokens(history, tools),
        user_text=user_text,
        workspace=str(workspace),
        tools_in_history=tuple(sorted({use.name for m in history for use in m.tool_uses()})),
    )


def resolve_file_refs(messages: list[Message], workspace: Path) -> list[Message]:
    """Copies of messages whose file_ref images are read (confined to the workspace) into base64."""
    resolved: list[Message] = []
    for message in messages:
        if not any(isinstance(b, ImageBlock) and b.source.kind == "file_ref" for b in message.content):
            resolved.append(message)
            continue
        blocks = []
        for block in message.content:
            if isinstance(block, ImageBlock) and block.source.kind == "file_ref":
                try:
                    data = confine(workspace, block.source.data).read_bytes()
                except (PathEscapeError, InvalidToolPathError, OSError) as exc:
                    log.warning("image %s not sent: %s", block.source.data, exc)
                    continue
                block = ImageBlock(source=ImageSource(kind="base64", data=base64.b64encode(data).decode()),
                                   media_type=block.media_type)
            blocks.append(block)
        resolved.append(message.model_copy(update={"content": blocks}))
    return resolved

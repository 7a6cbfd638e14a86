"""`Message`: a role plus ordered typed content blocks, with metadata.

A COMPLETE message is checked against the §5 invariants when it is built or loaded; PARTIAL,
CANCELLED and ERROR messages are not (a stream in progress may be incomplete). Reading tolerates
newer writers: an unknown block type is skipped with a warning and the message kept (§10.3).
"""

import logging
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator, model_validator

from metis_core.field_defaults import empty_list
from metis_core.ids import new_ulid
from metis_core.messages.blocks import (
    BLOCK_TYPES,
    ContentBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.messages.invariants import check_message
from metis_core.messages.metadata import MessageMetadata, MessageStatus
from metis_core.messages.schema_version import SCHEMA_VERSION

log = logging.getLogger("metis_core.messages")



class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_timestamp(value: datetime) -> str:
    """Always six fractional digits and a `Z`, so JSON round trips are exact and sortable."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Message(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str = Field(default_factory=new_ulid)
    session_id: str = ""
    role: Role
    content: list[ContentBlock] = Field(default_factory=empty_list)
    metadata: MessageMetadata = Field(default_factory=MessageMetadata)
    created_at: datetime = Field(default_factory=utc_now)
    schema_version: int = SCHEMA_VERSION

    @field_validator("content", mode="before")
    @classmethod
    def _skip_unknown_blocks(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        if not any(isinstance(block, dict) for block in value):
            return value  # block objects, as adapters and the agent build them: nothing to skip
        kept: list[Any] = []
        for block in value:
            block_type = block.get("type") if isinstance(block, dict) else None
            if isinstance(block, dict) and block_type not in BLOCK_TYPES:
                log.warning(
                    "skipping unknown content block type %r (written by a newer metis?)",
                    block_type,
                    extra={"block_type": block_type},
                )
                continue
            kept.append(block)
        return kept

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is UTC:
            return value  # what utc_now gives: astimezone would return an equal copy
        if value.tzinfo is None:
            raise ValueError("created_at must be timezone-aware (UTC)")
        return value.astimezone(UTC)

    @field_serializer("created_at", when_used="json")
    def _ts(self, value: datetime) -> str:
        return format_timestamp(value)

    @model_validator(mode="after")
    def _check_invariants(self) -> Self:
        if self.metadata.status is MessageStatus.COMPLETE:
            check_message(self)
        return self

    # --- convenience -----------------------------------------------------------------------

    @property
    def status(self) -> MessageStatus:
        return self.metadata.status

    def text(self) -> str:
        """All text blocks joined: what a user reads."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def thinking(self) -> list[ThinkingBlock]:
        return [b for b in self.content if isinstance(b, ThinkingBlock)]

    def content_hash(self) -> str:
        """SHA-256 of RFC 8785 JSON of `{role, content}`: what was said, not where it is stored.

        id, session_id, created_at, metadata and schema_version are left out, so the same
        exchange hashes the same in any session or store (see docs/canonical-format.md).
        """
        from metis_core.hashing import json_hash  # rfc8785 loads only where hashes are taken, not per call

        return json_hash(
            {"role": self.role.value, "content": [b.model_dump(mode="json") for b in self.content]}
        )

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes) -> Self:
        import orjson

        from metis_core.messages.migrations import migrate_message_dict

        return cls.model_validate(migrate_message_dict(orjson.loads(data)))


# Convenience constructors used throughout tests and the agent loop ----------------------------


def user_message(text: str, *, session_id: str = "", **extra: Any) -> Message:
    if type(text) is str and type(session_id) is str and not extra:
        # Built from its checked parts: a first call then never builds Message's validator (~1 MB).
        from metis_core.messages.prechecked import text_message  # it imports this module

        return text_message(Role.USER, text, session_id)
    return Message(role=Role.USER, session_id=session_id, content=[TextBlock(text=text)], **extra)


def system_message(text: str, *, session_id: str = "") -> Message:
    if type(text) is str and type(session_id) is str:
        from metis_core.messages.prechecked import text_message

        return text_message(Role.SYSTEM, text, session_id)
    return Message(role=Role.SYSTEM, session_id=session_id, content=[TextBlock(text=text)])


def tool_result_message(
    tool_use_id: str,
    content: str | list[Any],
    *,
    is_error: bool = False,
    session_id: str = "",
) -> Message:
    blocks = [TextBlock(text=content)] if isinstance(content, str) else content
    return Message(
        role=Role.TOOL,
        session_id=session_id,
        content=[ToolResultBlock(tool_use_id=tool_use_id, content=blocks, is_error=is_error)],
        metadata=MessageMetadata(parent_tool_use_id=tool_use_id),
    )

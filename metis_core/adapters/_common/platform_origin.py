"""Signed Claude thinking that travels between Anthropic direct, Vertex AI and Bedrock.

Anthropic signs Claude's thinking alike wherever Claude runs, so a signature from one Claude
platform is valid on the others for the same model (`claude_signature_travels`, Bedrock ids and
ARNs included). `restamp_origins` and `redacted_data` present such blocks to a translator in its
own terms; the caller's messages never change, and blocks no rule accepts are dropped and logged.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Final

from metis_core.messages import BlockOrigin, ContentBlock, Message, RedactedThinkingBlock, ThinkingBlock

CLAUDE_SIGNERS: Final[dict[str, str]] = {"anthropic": "messages", "vertex_anthropic": "messages",
                                         "bedrock": "converse"}
"""Provider -> API where Claude runs with signatures Anthropic documents as valid on the others."""

MESSAGES_API: Final = "messages"
CONVERSE_API: Final = "converse"

_BEDROCK_CLAUDE = r"(?:[a-z-]+\.)?anthropic\.(claude-[a-z0-9.-]+?)(?:-v\d+(?::[0-9a-z]+)*)?"
"""`anthropic.claude-sonnet-4-20250514-v1:0`, with an optional geography prefix (`us.`, `eu.`, `global.`).
This and `_CLAUDE` are compiled (by `re`, once) with the first thinking block that travels, not with the import."""
_CLAUDE = r"claude-[a-z0-9.@-]+"

OriginRule = Callable[[BlockOrigin], BlockOrigin | None]
"""An issuing origin -> the origin the translator should see, or None to leave the block as it is."""


def claude_model_key(model: str) -> str | None:
    """One spelling for a Claude model on every platform, or None when `model` names no Claude model.

    `claude-sonnet-4@20250514` (Vertex), `us.anthropic.claude-sonnet-4-20250514-v1:0` (a Bedrock
    inference profile) and its ARN all give `claude-sonnet-4-20250514`. An application inference
    profile ARN names no model, so it gives None. A metis model id (`bedrock:<id>`) gives its id's key.
    """
    provider, colon, rest = model.partition(":")
    name = rest if colon and provider in CLAUDE_SIGNERS else model  # a metis id: `bedrock:us.anthropic...`
    name = name.rsplit("/", 1)[-1] if name.startswith("arn:") else name
    bedrock = re.fullmatch(_BEDROCK_CLAUDE, name)
    if bedrock is not None:
        return bedrock.group(1)
    return name.replace("@", "-") if re.fullmatch(_CLAUDE, name) else None


def claude_signed(origin: BlockOrigin | None) -> bool:
    """True when Claude on a Claude platform issued the block: its signature is Anthropic's, valid wherever
    Claude runs (another model's reasoning on Bedrock, or one behind an application profile ARN, is not)."""
    return (origin is not None and CLAUDE_SIGNERS.get(origin.provider) == origin.api
            and claude_platform_model(f"{origin.provider}:{origin.model}"))


def claude_platform_model(model: str) -> bool:
    """True when a metis model id (`<provider>:<name>`) is Claude on a Claude platform, whose thinking
    Anthropic signs; a Bedrock id must name a Claude model (an application profile ARN does not)."""
    provider, _, name = model.partition(":")
    if provider not in CLAUDE_SIGNERS:
        return False
    return provider != "bedrock" or claude_model_key(name) is not None


def claude_signature_travels(origin: BlockOrigin | None, model: str) -> bool:
    """True when thinking signed at `origin` by a Claude platform is valid for `model` on another one."""
    if origin is None or not claude_signed(origin):
        return False
    key = claude_model_key(origin.model)
    return key is not None and key == claude_model_key(model)


def redacted_data(block: RedactedThinkingBlock, api: str) -> str:
    """The block's encrypted payload as `api` takes it.

    Messages carries Anthropic's opaque string; Converse carries the same string as a blob, which
    its JSON encodes in base64. A Converse payload that is not such a blob is returned unchanged,
    so the target rejects it by name rather than this adapter guessing.
    """
    source = block.origin.api if block.origin is not None else api
    if source == api:
        return block.data
    if api == CONVERSE_API:
        return base64.b64encode(block.data.encode()).decode("ascii")
    try:
        return base64.b64decode(block.data, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return block.data


def restamp_origins(messages: list[Message], rule: OriginRule) -> list[Message]:
    """Copies of `messages` with each thinking block the rule accepts stamped with the rule's origin
    (a redacted block's payload re-encoded for that origin's API)."""
    out: list[Message] = []
    for message in messages:
        content: list[ContentBlock] | None = None
        for index, block in enumerate(message.content):
            if not isinstance(block, ThinkingBlock | RedactedThinkingBlock) or block.origin is None:
                continue
            target = rule(block.origin)
            if target is None or target == block.origin:
                continue
            if content is None:
                content = list(message.content)
            update: dict[str, object] = {"origin": target}
            if isinstance(block, RedactedThinkingBlock):
                update["data"] = redacted_data(block, target.api)
            content[index] = block.model_copy(update=update)
        out.append(message if content is None else message.model_copy(update={"content": content}))
    return out

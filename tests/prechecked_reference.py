"""The general path the prechecked fast path is held to: each `prechecked` builder as its validating constructor.

A test runs a reader or parser twice, once as it is and once with its module's `prechecked` replaced by
`VALIDATING`, and compares `model_state` of what each gives: every field, fields_set and extras of
every model, with the random parts (message ids, clocks) blanked.
"""

from __future__ import annotations

import copy
import functools
import json
import pickle
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel

from metis_core.messages import (
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from metis_core.messages import prechecked as fast


def _message(role: Role, session_id: str, content: list[Any], metadata: MessageMetadata,
             message_id: str | None = None) -> Message:
    extra = {} if message_id is None else {"id": message_id}
    return Message(role=role, session_id=session_id, content=content, metadata=metadata, **extra)


def _usage(i: int, o: int, c: int, w: int, reasoning: int | None = None) -> Usage:
    extra = {} if reasoning is None else {"reasoning_tokens": reasoning}
    return Usage(input_tokens=i, output_tokens=o, cached_input_tokens=c, cache_creation_input_tokens=w, **extra)


def _price_usage(usage: Usage, latency_ms: int, cost: Any) -> None:
    usage.latency_ms = latency_ms
    if cost is not None:
        usage.cost_usd, usage.pricing_version = cost


VALIDATING = SimpleNamespace(
    text_block=lambda text: TextBlock(text=text),
    wire_text_block=lambda value: TextBlock(text=value),
    cited_text_block=lambda text, citations: TextBlock(text=text, citations=citations),
    canonical_blocks=fast.canonical_blocks,
    tool_use_block=lambda tool_id, name, tool_input: ToolUseBlock(id=tool_id, name=name, input=tool_input),
    thinking_block=lambda text, signature, origin: ThinkingBlock(text=text, signature=signature, origin=origin),
    routing_record=lambda mode, chosen_model, reason: RoutingDecisionRecord(mode=mode, chosen_model=chosen_model,
                                                                           reason=reason),
    token_count=fast.token_count,
    usage=_usage,
    price_usage=_price_usage,
    metadata=lambda **fields: MessageMetadata(**fields),
    default_metadata=lambda: MessageMetadata(),
    answer_metadata=lambda model, provider, routing, usage, status, stop_reason, provider_raw, violations: (
        MessageMetadata(model=model, provider=provider, routing=routing, usage=usage, status=status,
                        stop_reason=stop_reason, provider_raw=provider_raw, tool_input_violations=violations)),
    message=_message,
    answer_blocks=fast.answer_blocks,
    answer=lambda session_id, content, metadata, message_id: Message(
        id=message_id, role=Role.ASSISTANT, session_id=session_id, content=content, metadata=metadata),
    text_message=lambda role, text, session_id: Message(role=role, session_id=session_id,
                                                        content=[TextBlock(text=text)]),
)
"""Stands in for `metis_core.messages.prechecked` wherever a module imports it."""


def model_state(value: Any) -> Any:
    """Every field, fields_set, extra and private attribute of every model in `value`, and how it dumps,
    copies, pickles, compares and hashes (`behaviour`), message ids and clocks blanked."""
    if isinstance(value, BaseModel):
        fields = {k: model_state(v) for k, v in value.__dict__.items()}
        if isinstance(value, Message):
            fields["id"] = fields["created_at"] = None
        if isinstance(value, Usage):
            fields["latency_ms"] = 0
        return (type(value).__name__, fields, sorted(value.model_fields_set), model_state(value.__pydantic_extra__),
                list(value.__dict__), value.__pydantic_private__, behaviour(value))
    if isinstance(value, list | tuple):
        return [model_state(v) for v in value]
    if isinstance(value, dict):
        return {k: model_state(v) for k, v in value.items()}
    if isinstance(value, MessageStatus | Role | RoutingMode):
        return (type(value).__name__, value.value)
    return value


def _clockless(dumped: Any) -> Any:
    """A dump with every message's id and time and every usage's latency blanked (they differ run to run)."""
    if isinstance(dumped, list):
        return [_clockless(v) for v in dumped]
    if isinstance(dumped, dict):
        blank = {"latency_ms", "created_at", "id"} if "created_at" in dumped else {"latency_ms"}
        return {k: None if k in blank else _clockless(v) for k, v in dumped.items()}
    return dumped


def behaviour(model: BaseModel) -> tuple[Any, ...]:
    """How `model` dumps (Python and JSON), and whether its copies (shallow, deep, `model_copy` with an
    update, a pickle round trip) hold what it holds and compare equal, and what hashing it gives."""
    dumped = (_clockless(model.model_dump()), _clockless(json.loads(model.model_dump_json())))
    kept: list[tuple[Any, ...]] = []
    for copied in (copy.copy(model), copy.deepcopy(model), pickle.loads(pickle.dumps(model)), model.model_copy()):
        kept.append((copied == model, copied.__dict__ == model.__dict__,
                     copied.model_fields_set == model.model_fields_set, type(copied.model_fields_set).__name__,
                     copied.__pydantic_extra__ == model.__pydantic_extra__,
                     copied.__pydantic_private__ == model.__pydantic_private__))
    name = next(iter(type(model).model_fields))
    updated = model.model_copy(update={name: model.__dict__[name]})
    kept.append((updated == model, sorted(updated.model_fields_set)))
    try:
        hashed: Any = type(hash(model)).__name__
    except TypeError as error:
        hashed = str(error)
    return dumped, kept, hashed, type(model.model_fields_set).__name__


@functools.cache
def fast_modules() -> list[Any]:
    """Every module of the library that builds through `prechecked` (found by import, so a new one is not missed)."""
    import importlib
    import pkgutil

    import metis_core

    found = []
    for info in pkgutil.walk_packages(metis_core.__path__, "metis_core."):
        if info.name.startswith(("metis_core.cli", "metis_core.gateway.serve")):
            continue
        module = importlib.import_module(info.name)
        if getattr(module, "prechecked", None) is fast and module.__name__ != "metis_core.messages":
            found.append(module)
    return found


def validating_in(monkeypatch: Any, *modules: Any) -> None:
    """Put the general path in place of `prechecked` in each module that builds through it (all when none named)."""
    for module in modules or fast_modules():
        assert module.prechecked is fast, module.__name__
        monkeypatch.setattr(module, "prechecked", VALIDATING)

"""Which modules the compiled build (setup.py, METIS_COMPILE=1) turns into C extensions with mypyc,
and whether this process runs them.

Plain data and one check, importing nothing of metis_core: setup.py reads this file before the
package exists. The list is the gateway's hot path, by measured self time (docs/gateway.md, "The
compiled build"); a module leaves it only by a measurement, and joins it only if mypyc compiles it.
"""

from __future__ import annotations

import importlib
from importlib.machinery import EXTENSION_SUFFIXES

COMPILED_MODULES: tuple[str, ...] = (
    "metis_core.adapters._common.json_hashable",
    "metis_core.adapters._common.response_message",
    "metis_core.adapters._common.token_estimate",
    "metis_core.adapters._common.tool_ids",
    "metis_core.adapters.anthropic.adapter",
    "metis_core.adapters.anthropic.hosted",
    "metis_core.adapters.anthropic.request",
    "metis_core.adapters.anthropic.request_reader",
    "metis_core.adapters.anthropic.response",
    "metis_core.adapters.anthropic.usage",
    "metis_core.adapters.base",
    "metis_core.adapters.client",
    "metis_core.adapters.continuation",
    "metis_core.adapters.parse_guard",
    "metis_core.agent.call_events",
    "metis_core.agent.recording",
    "metis_core.events.dispatch_worker",
    "metis_core.events.trusted_event",
    "metis_core.gateway.app",
    "metis_core.gateway.call_record",
    "metis_core.gateway.continued_call",
    "metis_core.gateway.disconnect_watch",
    "metis_core.gateway.hosted_tool_asks",
    "metis_core.gateway.key_check",
    "metis_core.gateway.keys",
    "metis_core.gateway.quotas",
    "metis_core.gateway.record_writer",
    "metis_core.gateway.service",
    "metis_core.gateway.shapes.anthropic_messages",
    "metis_core.gateway.shapes.base",
    "metis_core.gateway.shapes.openai_chat",
    "metis_core.gateway.shapes.openai_responses",
    "metis_core.gateway.structured_call",
    "metis_core.ids",
    "metis_core.messages.invariants",
    "metis_core.messages.prechecked",
    "metis_core.models.fit",
    "metis_core.models.pricing",
    "metis_core.routing.fallback",
    "metis_core.routing.health",
    "metis_core.store.conversation_batch",
    "metis_core.store.message_rows",
    "metis_core.store.multi_row_insert",
    "metis_core.store.sessions",
    "metis_core.trace.event_rows",
    "metis_core.trace.store",
    "metis_core.transport.http",
    "metis_core.transport.owned_async",
    "metis_core.transport.wire",
)
"""Modules that define pydantic models (a metaclass mypyc cannot compile) stay interpreted, and so
do the async generators (which mypyc does not implement), each moved into a small module of its own
beside the module it serves: adapters/stream_response.py, gateway/app_generators.py, gateway/continued_stream.py,
adapters/client_streams.py, routing/fallback_stream.py, transport/stream_bodies.py. transport/http.py
and owned_async.py compile too: a transport failure is raised through `raise_detached`
(http.py), which clears the `__context__` a compiled coroutine would otherwise chain (the transport
exception, holding the request and its auth headers; tests/transport/test_owned_async.py)."""


def is_compiled(module: str) -> bool:
    """Whether `module` was imported from a C extension (a compiled build) rather than its .py."""
    origin = getattr(importlib.import_module(module), "__file__", None) or ""
    return origin.endswith(tuple(EXTENSION_SUFFIXES))


def build_name() -> str:
    """"compiled (mypyc)" when every listed module is a C extension, "pure Python" when none is."""
    compiled = [is_compiled(module) for module in COMPILED_MODULES]
    if all(compiled):
        return "compiled (mypyc)"
    if not any(compiled):
        return "pure Python"
    return "mixed: " + ", ".join(m for m, c in zip(COMPILED_MODULES, compiled, strict=True) if not c) + " interpreted"

"""`AdapterOptions`, `WireRequest` and `RequestContext` write their `__init__` out (the one `dataclass`
generates stays Python code in the compiled build): each must take the same arguments, in the same
order, as the generated one would, and leave the same fields, a default factory's value fresh per
instance. The reference is the generated `__init__` itself, made by `dataclasses.make_dataclass` from the
class's own fields."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, RequestContext, WireRequest
from metis_core.messages import RoutingDecisionRecord, RoutingMode, ToolDefinition

CLASSES = [AdapterOptions, WireRequest, RequestContext]


def reference_of(cls: type) -> type:
    """A dataclass with `cls`'s fields, defaults and factories, whose `__init__` is dataclasses' own."""
    specs = [(f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory,
                                                 init=f.init)) for f in dataclasses.fields(cls) if f.init]
    return dataclasses.make_dataclass(f"Reference{cls.__name__}", specs)


def fields_of(value: Any, names: list[str]) -> dict[str, Any]:
    """The fields; a fresh ToolIdMap (no equality of its own) as its type, a given one as itself."""
    found = {name: getattr(value, name) for name in names}
    return {name: (v if not isinstance(v, ToolIdMap) or v is GIVEN_MAP else "a fresh ToolIdMap")
            for name, v in found.items()}


@pytest.mark.parametrize("cls", CLASSES)
def test_the_parameters_are_the_init_fields_in_order_with_their_defaults(cls: type) -> None:
    ours = list(inspect.signature(cls).parameters.values())
    init_fields = [f for f in dataclasses.fields(cls) if f.init]
    assert [p.name for p in ours] == [f.name for f in init_fields]
    for parameter, field in zip(ours, init_fields, strict=True):
        if field.default is not dataclasses.MISSING:
            assert parameter.default == field.default, field.name
        elif field.default_factory is not dataclasses.MISSING:
            assert parameter.default is None, field.name  # None: the factory's fresh value
        else:
            assert parameter.default is inspect.Parameter.empty, field.name


ROUTING = RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="anthropic:m", reason="r")
TOOL = ToolDefinition(name="f", description="d", input_schema={"type": "object"})
GIVEN_MAP = ToolIdMap()
CALLS: list[tuple[type, tuple[Any, ...], dict[str, Any]]] = [
    (AdapterOptions, ("anthropic:m",), {}),
    (AdapterOptions, ("anthropic:m", 5, 0.5, 0.9, ["x"], "low", 100, "auto", False, {"name": "o", "schema": {}},
                      True, "sess_1", {"web_search": {}}, [{"type": "t"}], {"k": 1}), {}),
    (AdapterOptions, ("openai:gpt",), {"max_tokens": 7, "extra": {"a": 1}, "provider_tools": [{"type": "x"}],
                                      "session_id": "s", "stream": True}),
    (WireRequest, ("/v1/messages", {"model": "m"}), {}),
    (WireRequest, ("/p", {}, True, "GET", {"h": "v"}, {"q": "1"}, []), {}),
    (WireRequest, ("/p", {"a": 1}), {"headers": {"anthropic-version": "1"}, "method": "PUT"}),
    (RequestContext, ("anthropic:claude-x",), {"started_at": 1.5, "message_id": "msg"}),
    (RequestContext, ("openai:gpt", "sess", GIVEN_MAP, ROUTING, None, [TOOL], 2.5, "m2"), {}),
    (RequestContext, ("ollama:llama",), {"session_id": "s", "tools": (TOOL,), "started_at": 3.0, "message_id": "m3"}),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), CALLS)
def test_an_instance_holds_what_the_generated_init_would_leave(cls: type, args: tuple[Any, ...],
                                                               kwargs: dict[str, Any]) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    ours, reference = cls(*args, **kwargs), reference_of(cls)(*args, **kwargs)
    init_names = [f.name for f in dataclasses.fields(cls) if f.init]
    assert fields_of(ours, init_names) == fields_of(reference, init_names)
    for name in init_names:  # what was passed is kept, not copied
        given = kwargs.get(name, args[init_names.index(name)] if init_names.index(name) < len(args) else None)
        if isinstance(given, dict | list | ToolIdMap):
            assert getattr(ours, name) is given, name
    assert dataclasses.replace(ours) == ours and fields_of(dataclasses.replace(ours), names) == fields_of(ours, names)


@pytest.mark.parametrize("cls", CLASSES)
def test_a_factory_field_not_given_is_fresh_per_instance(cls: type) -> None:
    starts: dict[type, tuple[Any, ...]] = {AdapterOptions: ("anthropic:m",), WireRequest: ("/p", {}),
                                           RequestContext: ("anthropic:m",)}
    required = starts[cls]
    first, second = cls(*required), cls(*required)
    factories = [f.name for f in dataclasses.fields(cls) if f.init and f.default_factory is not dataclasses.MISSING]
    assert factories
    for name in factories:
        if name in ("started_at", "message_id"):
            continue  # a clock and an id: fresh, and not equal to an empty container
        assert getattr(first, name) is not getattr(second, name), name
        assert fields_of(first, [name]) == fields_of(reference_of(cls)(*required), [name]), name


def test_a_context_made_without_a_clock_or_id_reads_them_and_its_model_once() -> None:
    context = RequestContext("anthropic:claude-x")
    assert (context.provider, context.model_name) == ("anthropic", "claude-x")
    assert isinstance(context.started_at, float) and len(context.message_id) == 26
    assert RequestContext("anthropic:claude-x").message_id > context.message_id

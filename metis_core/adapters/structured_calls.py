"""ModelClient's structured calls: `complete` / `acomplete` / `stream` with `output=` drive a StructuredRun.

The run (structured/driver.py) decides every retry; this module only makes the calls it asks for,
through the same client path as any other call (capability check, transport retries, cassettes).
The adapter of the model's provider says how the schema travels (`Adapter.structured_plan`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from metis_core.adapters.base import AdapterOptions
from metis_core.messages import Message, MessageComplete, TextDelta, ToolDefinition, ToolUseInputDelta
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.models.model_id import parse_model_id
from metis_core.structured.driver import StructuredRequest, StructuredRun
from metis_core.structured.policy import OutputPolicy
from metis_core.structured.result import StructuredResult
from metis_core.structured.spec import OutputSpec, output_spec
from metis_core.structured.steps import OutputObserver
from metis_core.structured.stream import PartialOutput, PartialParser

if TYPE_CHECKING:
    from metis_core.adapters.client import ModelClient

OutputArg = type[BaseModel] | Mapping[str, Any] | OutputSpec
"""What `output=` takes: a pydantic model class, a JSON Schema dict, or an OutputSpec."""


@dataclass(slots=True)
class CallSettings:
    """The pass-through arguments of one structured call."""

    model: str | None
    options: AdapterOptions | None
    session_id: str
    capabilities: AdapterCapabilities | None
    policy: OutputPolicy | None
    observer: OutputObserver | None
    call_kwargs: dict[str, Any]


def start_run(client: ModelClient, messages: Sequence[Message], tools: Sequence[ToolDefinition] | None,
              output: OutputArg, settings: CallSettings) -> tuple[StructuredRun, str, AdapterCapabilities]:
    model_id = settings.model or (settings.options.model if settings.options is not None else "")
    provider = parse_model_id(model_id).provider
    caps = settings.capabilities or client.registry.capabilities(model_id)
    spec = output_spec(output)
    plan = client.adapter(provider).structured_plan(spec, caps, model_id)
    options = settings.options or AdapterOptions(model=model_id)
    run = StructuredRun(spec=spec, plan=plan, model=model_id, messages=list(messages), tools=list(tools or []),
                        options=options, max_output_tokens=caps.max_output_tokens, policy=settings.policy,
                        observer=settings.observer)
    return run, model_id, caps


def _kwargs(request: StructuredRequest, model_id: str, caps: AdapterCapabilities,
            settings: CallSettings) -> dict[str, Any]:
    return {"tools": request.tools, "options": request.options, "session_id": settings.session_id,
            "capabilities": caps, **settings.call_kwargs}


def complete_structured(client: ModelClient, messages: Sequence[Message], tools: Sequence[ToolDefinition] | None,
                        output: OutputArg, settings: CallSettings) -> StructuredResult[Any]:
    run, model_id, caps = start_run(client, messages, tools, output, settings)
    request = run.first_request()
    while True:
        answer = client.complete(request.messages, model_id, **_kwargs(request, model_id, caps, settings))
        step = run.take(answer)
        if isinstance(step, StructuredResult):
            return step
        request = step


async def acomplete_structured(client: ModelClient, messages: Sequence[Message],
                               tools: Sequence[ToolDefinition] | None, output: OutputArg,
                               settings: CallSettings) -> StructuredResult[Any]:
    run, model_id, caps = start_run(client, messages, tools, output, settings)
    request = run.first_request()
    while True:
        answer = await client.acomplete(request.messages, model_id, **_kwargs(request, model_id, caps, settings))
        step = run.take(answer)
        if isinstance(step, StructuredResult):
            return step
        request = step


def stream_structured(client: ModelClient, messages: Sequence[Message], tools: Sequence[ToolDefinition] | None,
                      output: OutputArg, settings: CallSettings) -> Iterator[PartialOutput]:
    """Partial values of each attempt as they arrive, then one final, strictly validated PartialOutput."""
    run, model_id, caps = start_run(client, messages, tools, output, settings)
    request = run.first_request()
    while True:
        attempt = len(run.attempts) + 1
        parser = PartialParser()
        final: Message | None = None
        for event in client.stream(request.messages, model_id, **_kwargs(request, model_id, caps, settings)):
            partial = _partial(parser, event, run)
            if partial is not None:
                yield PartialOutput(run.spec.partial(partial), attempt)
            if isinstance(event, MessageComplete):
                final = event.message
        assert final is not None  # every stream ends with message_complete or raises
        step = run.take(final)
        if isinstance(step, StructuredResult):
            yield PartialOutput(step.value, attempt, final=True, result=step)
            return
        request = step


async def astream_structured(client: ModelClient, messages: Sequence[Message],
                             tools: Sequence[ToolDefinition] | None, output: OutputArg,
                             settings: CallSettings) -> AsyncIterator[PartialOutput]:
    run, model_id, caps = start_run(client, messages, tools, output, settings)
    request = run.first_request()
    while True:
        attempt = len(run.attempts) + 1
        parser = PartialParser()
        final: Message | None = None
        async for event in client.astream(request.messages, model_id, **_kwargs(request, model_id, caps, settings)):
            partial = _partial(parser, event, run)
            if partial is not None:
                yield PartialOutput(run.spec.partial(partial), attempt)
            if isinstance(event, MessageComplete):
                final = event.message
        assert final is not None
        step = run.take(final)
        if isinstance(step, StructuredResult):
            yield PartialOutput(step.value, attempt, final=True, result=step)
            return
        request = step


def _partial(parser: PartialParser, event: object, run: StructuredRun) -> Any | None:
    if isinstance(event, TextDelta) and run.plan.tool is None:
        return parser.feed(event.text)
    if isinstance(event, ToolUseInputDelta) and run.plan.tool is not None:
        return parser.feed(event.partial_json)
    return None


def inbound_output(options: AdapterOptions) -> tuple[OutputSpec | None, AdapterOptions]:
    """The gateway seam: an inbound request's structured-output ask as an OutputSpec, and its options
    without it (the target model's own plan decides how the schema travels there).

    The request readers put what a client asked (OpenAI `response_format: json_schema`, Anthropic
    `output_config.format`, Gemini `responseJsonSchema`, Ollama `format`) in `response_format`; a bare
    JSON mode with no schema (Ollama `format: "json"`) is not a schema and gives None."""
    wanted = options.response_format
    if not wanted or not isinstance(wanted.get("schema"), Mapping):
        return None, options
    name = wanted.get("name")
    spec = output_spec(wanted["schema"], name=name if isinstance(name, str) else None)
    return spec, dataclasses.replace(options, response_format=None)

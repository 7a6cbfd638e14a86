"""Structured output through the gateway: a client's schema honoured on whichever model the call routes to.

An OpenAI `response_format` / `text.format`, an Anthropic `output_config.format` or a forced single
tool is taken out of the request and run by the same StructuredRun as `client.complete(output=...)`
(recovery, corrective retries, doubled budget, refusal), falling back along the members whose mode can
carry it as a plain call falls back.
Every attempt (a paused one continued first) is charged and recorded; the JSON goes back as one answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.continuation import MAX_CONTINUATIONS
from metis_core.adapters.structured_calls import inbound_output
from metis_core.agent.redaction import redact
from metis_core.agent.structured_turn import MemberRuns
from metis_core.errors import (
    CapabilityMismatchError,
    GatewayRequestError,
    MalformedResponseError,
    OutputRefusedError,
    OutputSchemaError,
    ToolSchemaError,
)
from metis_core.gateway.continued_call import continuable, joined
from metis_core.gateway.shapes.base import OUTPUT_REFUSAL
from metis_core.ids import new_tool_use_id
from metis_core.messages import (
    CompactionBlock,
    Message,
    MessageComplete,
    MessageStatus,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
    RedactedThinkingBlock,
    Role,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolDefinition,
    ToolUseBlock,
    ToolUseEnd,
    ToolUseStart,
    WholeBlock,
)
from metis_core.messages.call_spend import CallSpend
from metis_core.models.model_id import parse_model_id
from metis_core.routing.fallback import FallbackChain
from metis_core.structured.result import StructuredResult
from metis_core.structured.spec import OutputSpec, output_spec

if TYPE_CHECKING:
    from metis_core.gateway.call_budget import CallBudget
    from metis_core.gateway.call_record import CallRecord
    from metis_core.gateway.service import GatewayService
    from metis_core.gateway.shapes.base import InboundRequest

@dataclass(slots=True)
class StructuredAsk:
    """What the client asked for, taken out of its request."""

    spec: OutputSpec
    options: AdapterOptions
    """The request's options without the ask (the target's plan decides how the schema travels)."""
    tools: list[ToolDefinition]
    as_tool: str | None = None
    """The forced tool's name when the ask was an Anthropic forced single tool: answered as tool_use."""


def structured_ask(request: InboundRequest, *, forced_tool: bool) -> StructuredAsk | None:
    """The structured-output ask of an inbound request, or None. `forced_tool`: the shape treats one
    tool forced by `tool_choice` as a schema (Anthropic's documented way to get JSON). An output
    schema that is not JSON Schema is a GatewayRequestError (400)."""
    try:
        spec, options = inbound_output(request.options)
    except (OutputSchemaError, ToolSchemaError) as error:
        raise GatewayRequestError(f"the request's output schema cannot be used: {redact(str(error), 300)}") from None
    if spec is not None:
        return StructuredAsk(spec, options, list(request.tools))
    choice = options.tool_choice
    if forced_tool and isinstance(choice, dict) and len(request.tools) == 1 \
            and request.tools[0].name == choice.get("name"):
        tool = request.tools[0]
        try:
            spec = output_spec(tool.input_schema, name=tool.name)
        except (OutputSchemaError, ToolSchemaError):
            return None  # not a schema metis can validate against: the forced tool goes upstream as is
        return StructuredAsk(spec, dataclasses.replace(options, tool_choice=None), [], as_tool=tool.name)
    return None


def _capable(service: GatewayService, members: list[str], spec: OutputSpec) -> list[str]:
    """The members whose mode can carry the schema, in order (none: the last refusal is raised)."""
    refused: CapabilityMismatchError | None = None
    client = service.rt.client
    capable: list[str] = []
    for model in members:
        try:
            client.adapter(parse_model_id(model).provider).structured_plan(spec, client.registry.capabilities(model),
                                                                           model)
        except CapabilityMismatchError as error:
            refused = error
            continue
        capable.append(model)
    if not capable:
        assert refused is not None
        raise refused
    return capable


async def answer_structured(service: GatewayService, record: CallRecord, members: list[str], ask: StructuredAsk,
                            budget: CallBudget) -> Message:
    """Drive the structured run to its answer, charging and recording every attempt. Returns the answer
    to write back (a refusal too, flagged OUTPUT_REFUSAL); raises OutputValidationError on exhaustion
    and what the upstream call raised otherwise. The answer's usage is the sum of every attempt's.

    The call falls back along the capable members as a plain call does, each member starting its own
    run (its own plan: Claude's output_config, OpenAI's response_format ...); a corrective retry goes
    to the member that answered first (agent/structured_turn.py's MemberRuns). A paused answer is
    continued on the model that paused, from the request it was sent. Every attempt after the first
    holds its worst case in the budget again before it is sent (GatewayBudgetError when it does not fit).
    A run that ends without an answer after priced calls (exhausted, failed, cancelled) leaves one
    error / cancelled message carrying their summed usage on the record (`record.keep_spent`)."""
    capable = _capable(service, members, ask.spec)
    runs = MemberRuns(service.rt.client, ask.spec, list(record.request.messages), ask.options, None, record.output_step,
                      tools=ask.tools)
    spend = CallSpend()  # every attempt's usage, and how many calls the one stored answer stands for
    last: list[Message] = []  # the latest upstream answer, for the message a failed run keeps
    try:
        return await _run(service, record, capable, runs, ask, budget, spend, last)
    except BaseException as ending:
        if spend.calls and last:  # priced calls were made: the record keeps them whatever ended the run
            status = MessageStatus.CANCELLED if isinstance(ending, asyncio.CancelledError) else MessageStatus.ERROR
            record.keep_spent(_kept(record, last[-1], spend, status))
        raise


def _kept(record: CallRecord, last: Message, spend: CallSpend, status: MessageStatus) -> Message:
    """The one message a run without an answer stores: the last answer's content in `status`,
    carrying every completed call's usage (as a failed `metis run --schema` keeps it)."""
    kept = Message(role=Role.ASSISTANT, session_id=record.session_id, content=list(last.content),
                   metadata=last.metadata.model_copy(update={"status": status, "stop_reason": status.value,
                                                             "provider_raw": None}))
    spend.stamp(kept)
    return kept


async def _run(service: GatewayService, record: CallRecord, capable: list[str], runs: MemberRuns, ask: StructuredAsk,
               budget: CallBudget, spend: CallSpend, last: list[Message]) -> Message:
    request, client = record.request, service.rt.client
    paused_answers: list[Message] = []  # a paused answer is continued before the run judges it
    answered_by = ""
    attempts = 0
    while True:
        if attempts:
            budget.top_up(shape=record.shape, model=record.asked_model)
        attempts += 1
        if paused_answers:
            step = runs.sent[answered_by]
            events = FallbackChain(client, [answered_by], health=service.rt.health).astream(
                [*step.messages, *paused_answers], tools=step.tools, options=step.options, tool_ids=request.tool_ids,
                session_id=record.session_id, observer=record, stream=False)
        else:
            events = FallbackChain(client, runs.order(capable), health=service.rt.health).astream(
                [], tool_ids=request.tool_ids, session_id=record.session_id, observer=record, stream=False,
                request_for=runs.request_for)
        final: Message | None = None
        async for event in events:
            if event.type == "message_complete":
                final = event.message
        if final is None:
            raise MalformedResponseError("the upstream call ended without a final message",
                                         provider=record.model.partition(":")[0])
        answered_by = record.model
        usage = final.metadata.usage
        spend.add(usage)
        last[:] = [final]
        record.call_completed(final, service.charge(budget, final, more=True))
        if continuable(final) and len(paused_answers) < MAX_CONTINUATIONS:
            paused_answers.append(final)
            continue
        if paused_answers:  # judged whole: the paused answers and their continuation as one answer
            final, paused_answers = joined([*paused_answers, final], at_limit=False), []
        offered = {t.name for t in ask.tools}
        if any(b.name in offered for b in final.tool_uses()):
            # The client offered its own tools: a call of one is an answer (the schema binds the final text).
            return _answer(record, final, spend, list(final.content), "tool_use")
        try:
            taken = runs.take(answered_by, final)
        except OutputRefusedError as refused:
            return _answer(record, final, spend, [TextBlock(text=refused.refusal_text or "")], "refusal",
                           refusal=True)
        if isinstance(taken, StructuredResult):
            value = taken.value_json()
            if ask.as_tool is not None:
                block: TextBlock | ToolUseBlock = ToolUseBlock(id=new_tool_use_id(), name=ask.as_tool, input=value)
                return _answer(record, final, spend, [block], "tool_use")
            return _answer(record, final, spend, [TextBlock(text=orjson.dumps(value).decode())], "end_turn")


def _answer(record: CallRecord, final: Message, spend: CallSpend, content: list[Any], stop: str, *,
            refusal: bool = False) -> Message:
    metadata = final.metadata.model_copy(update={"stop_reason": stop, "provider_raw": None})
    if refusal:
        setattr(metadata, OUTPUT_REFUSAL, True)
    answer = Message(role=Role.ASSISTANT, session_id=record.session_id, metadata=metadata, content=content)
    spend.stamp(answer)
    return answer


def answer_events(answer: Message, *, text: bool = True) -> list[StreamEvent]:
    """The answer as one stream (the validated JSON as one text delta, or one whole tool call):
    partial objects are not streamed through the gateway, only the final, validated value.
    `text=False` leaves text out (a refusal already written in the shape's own refusal field)."""
    events: list[StreamEvent] = []
    for index, block in enumerate(answer.content):  # every block at its place: a writer numbers them as they come
        if isinstance(block, TextBlock) and text:
            events.append(TextDelta(index=index, text=block.text))
        elif isinstance(block, ThinkingBlock):
            events.append(ThinkingDelta(index=index, text=block.text))
        elif isinstance(block, RedactedThinkingBlock | ProviderToolCallBlock | ProviderToolResultBlock
                        | CompactionBlock):
            events.append(WholeBlock(index=index, block=block))
        elif isinstance(block, ToolUseBlock):
            events.append(ToolUseStart(index=index, id=block.id, name=block.name))
            events.append(ToolUseEnd(index=index, id=block.id, name=block.name, input=block.input))
    events.append(MessageComplete(message=answer, stop_reason=answer.metadata.stop_reason))
    return events

"""The structured-output driver: one state machine that turns model answers into a validated value.

`StructuredRun` holds no I/O: `first_request()` says what to send, `take(message)` reads an answer
and returns either the next request (a corrective retry, a doubled budget, the NL-to-format calls)
or the StructuredResult; refusals and exhaustion raise. The same machine serves `complete` and
`acomplete` (ModelClient loops over it). Each step goes to the observer as it happens (steps.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from metis_core.errors import OutputRefusedError, OutputValidationError
from metis_core.messages import Message, ToolDefinition, ToolUseBlock
from metis_core.messages.message import system_message, user_message
from metis_core.structured.plan import StructuredPlan, corrective_fragment, reformat_instructions
from metis_core.structured.policy import OutputPolicy
from metis_core.structured.recovery import Recovery, Unrecoverable, recover_json
from metis_core.structured.result import AttemptKind, OutputAttempt, StructuredResult
from metis_core.structured.spec import OutputInvalid, OutputSpec
from metis_core.structured.steps import (
    FailureReason,
    NlToFormatEngaged,
    OutputObserver,
    OutputRefused,
    OutputTruncated,
    RecoveryApplied,
    RetryAttempted,
    RetryExhausted,
)
from metis_core.structured.validation import validate_answer

if TYPE_CHECKING:
    from metis_core.adapters.base import AdapterOptions

DEFAULT_FIRST_BUDGET = 4096
"""Output budget a truncation retry doubles when the caller set none and the answer did not say how
many tokens it used (capped by the model's limit)."""


@dataclass(slots=True)
class StructuredRequest:
    """One call the driver wants made."""

    messages: list[Message]
    tools: list[ToolDefinition]
    options: AdapterOptions


class StructuredRun:
    """One structured answer in the making. Not thread-safe; one per call."""

    def __init__(self, *, spec: OutputSpec, plan: StructuredPlan, model: str, messages: list[Message],
                 tools: list[ToolDefinition], options: AdapterOptions, max_output_tokens: int,
                 policy: OutputPolicy | None = None, observer: OutputObserver | None = None) -> None:
        self.spec, self.plan, self.model = spec, plan, model
        self.policy = policy or OutputPolicy()
        self.observer = observer
        self.base_messages = list(messages)
        self.user_tools = list(tools)
        self.options = options
        self.limit = max_output_tokens
        self.max_tokens = options.max_tokens
        self.attempts: list[OutputAttempt] = []
        self.corrections = 0
        self.truncations = 0
        self.kind: AttemptKind = "constrained"
        self.correction: str | None = None
        self.free_form: str | None = None

    # --- requests ----------------------------------------------------------------------------

    def first_request(self) -> StructuredRequest:
        return self._constrained(self.base_messages)

    def _constrained(self, conversation: list[Message]) -> StructuredRequest:
        plan = self.plan
        messages = [system_message(plan.instructions)] if plan.instructions else []
        messages += conversation
        if self.correction is not None:
            messages.append(user_message(self.correction))
        tools = list(self.user_tools)
        changes: dict[str, Any] = {"max_tokens": self.max_tokens}
        if plan.response_format is not None:
            changes["response_format"] = plan.response_format
        if plan.tool is not None:
            tools.append(plan.tool)
            changes["tool_choice"] = {"name": plan.tool.name}
        if plan.extra:
            changes["extra"] = {**self.options.extra, **plan.extra}
        return StructuredRequest(messages, tools, dataclasses.replace(self.options, **changes))

    def _free_form(self) -> StructuredRequest:
        options = dataclasses.replace(self.options, response_format=None, max_tokens=self.max_tokens)
        return StructuredRequest(list(self.base_messages), list(self.user_tools), options)

    def _reformat(self, answer: str) -> StructuredRequest:
        self.correction = None
        conversation = [system_message(reformat_instructions(self.spec)), user_message(answer)]
        request = self._constrained(conversation)
        request.tools = [self.plan.tool] if self.plan.tool is not None else []
        return request

    # --- answers -----------------------------------------------------------------------------

    def take(self, message: Message) -> StructuredRequest | StructuredResult[Any]:
        """Read one answer: the next request to make, or the result. Raises on refusal or exhaustion."""
        stop = message.metadata.stop_reason
        usage = message.metadata.usage
        tokens = usage.output_tokens if usage is not None else None
        number = len(self.attempts) + 1
        kind = self.kind
        if stop == "refusal":
            return self._refused(message, number, tokens)
        if kind == "free-form":
            self.attempts.append(OutputAttempt(number, "ok", max_tokens=self.max_tokens, stop_reason=stop,
                                               output_tokens=tokens, kind=kind))
            self.kind = "reformat"
            return self._reformat(message.text())
        recovery: Recovery | None = None
        try:
            value, recovery = self._read(message, number, recover=stop != "max_tokens")
        except OutputInvalid as invalid:
            truncated = stop == "max_tokens"
            outcome: FailureReason = "truncation" if truncated else "parse-error" if invalid.parse_error \
                else "schema-violation"
            self.attempts.append(OutputAttempt(number, outcome, tuple(invalid.errors), None, self.max_tokens, stop,
                                               tokens, kind))
            if truncated:
                return self._truncated(tokens, partial=_salvageable(message.text()))
            return self._invalid(invalid)
        self.attempts.append(OutputAttempt(number, "ok", (), recovery, self.max_tokens, stop, tokens, kind))
        return StructuredResult(value=value, model=self.model, mode=self.plan.mode, message=message,
                                attempts=list(self.attempts), nl_to_format=kind == "reformat")

    def _read(self, message: Message, number: int, *, recover: bool) -> tuple[Any, Recovery | None]:
        """The validated answer. A cut-off answer is never repaired: a repaired prefix can validate
        while missing what the model had not written yet, so truncation is retried instead."""
        if self.plan.tool is not None:
            for block in message.content:
                if isinstance(block, ToolUseBlock) and block.name == self.plan.tool.name:
                    return self.spec.validate_python(block.input), None
        text = message.text()
        if not text.strip():
            raise OutputInvalid(["the answer was empty"], parse_error=True)
        value, recovery = validate_answer(self.spec, text, recover=recover and self.policy.recover)
        if recovery is not None:
            self._emit(RecoveryApplied(self.model, self.spec.name, number, recovery.path, recovery.byte_offset))
        return value, recovery

    def _refused(self, message: Message, number: int, tokens: int | None) -> StructuredRequest:
        text, category = refusal_details(message)
        self.attempts.append(OutputAttempt(number, "refusal", (), None, self.max_tokens, "refusal", tokens,
                                           self.kind))
        self._emit(OutputRefused(self.model, self.spec.name, text, category))
        self._emit(RetryExhausted(self.model, self.spec.name, number, "refusal", None))
        raise OutputRefusedError(self.model, text, safety_category=category, attempts=self.attempts)

    def _emit(self, step: Any) -> None:
        if self.observer is not None:
            self.observer(step)

    def _truncated(self, tokens: int | None, *, partial: bool) -> StructuredRequest:
        # Without a caller's budget the adapter or server chose one (Anthropic's default is up to
        # 16,384, Ollama's num_predict is the server's): a max_tokens stop used all of it, so the
        # answer's output tokens are that budget.
        current = self.max_tokens or tokens or min(DEFAULT_FIRST_BUDGET, self.limit)
        doubled = min(current * 2, self.limit)
        can_retry = self.truncations < self.policy.max_truncation_retries and doubled > current \
            and self.kind == "constrained"
        self._emit(OutputTruncated(self.model, self.spec.name, "max_tokens", partial, tokens,
                                   doubled if can_retry else None))
        if not can_retry:
            return self._exhausted("truncation", "the answer was cut off at the model's output limit")
        self.truncations += 1
        self.max_tokens = doubled
        self._emit(RetryAttempted(self.model, self.spec.name, len(self.attempts) + 1, "truncation",
                                  f"stopped at max_tokens={current}; retrying with {doubled}"))
        return self._constrained(self.base_messages)

    def _invalid(self, invalid: OutputInvalid) -> StructuredRequest:
        reason: FailureReason = "parse-error" if invalid.parse_error else "schema-violation"
        summary = "; ".join(invalid.errors)
        if self.kind != "constrained" or self.corrections >= self.policy.max_retries:
            return self._exhausted(reason, summary)
        self.corrections += 1
        self.correction = corrective_fragment(self.spec, invalid.errors, parse_error=invalid.parse_error)
        self._emit(RetryAttempted(self.model, self.spec.name, len(self.attempts) + 1, reason, summary))
        return self._constrained(self.base_messages)

    def _exhausted(self, reason: FailureReason, error: str) -> StructuredRequest:
        if self.policy.nl_to_format and self.kind == "constrained":
            self.kind = "free-form"
            self._emit(NlToFormatEngaged(self.model, self.spec.name, 1))
            return self._free_form()
        self._emit(RetryExhausted(self.model, self.spec.name, len(self.attempts), reason, error))
        raise OutputValidationError(self.model, self.spec.name, self.attempts, reason)


def _salvageable(text: str) -> bool:
    """Whether a cut-off answer still holds a recoverable JSON prefix (OpenWOP partialPayloadAvailable)."""
    try:
        recover_json(text)
    except Unrecoverable:
        return False
    return True


_NOT_CATEGORIES = frozenset({"stop", "STOP", "length", "end_turn", "refusal", "tool_calls"})


def refusal_details(message: Message) -> tuple[str | None, str | None]:
    """The provider's refusal text and safety category, from the answer and what its adapter kept raw:
    OpenAI's `refusal` text, Anthropic's `stop_details`, Gemini's finish reason, block reason and message."""
    raw = message.metadata.provider_raw or {}
    found = raw.get("stop_details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    category = details.get("category") or raw.get("block_reason") or raw.get("finish_reason")
    if not isinstance(category, str) or category in _NOT_CATEGORIES:
        category = None
    text = message.text() or details.get("explanation") or raw.get("finish_message")
    return (text if isinstance(text, str) and text else None), category

"""The one exception hierarchy of metis-core, rooted at `MetisError`.

Every class is named for what happened and carries the fields a caller needs to react
(provider, HTTP status, retry_after ...). Messages say what to do next. No exception here
ever holds an API key: provider errors are built from response bodies and status codes only,
and `ProviderError` scrubs every known key value and key shape from what it carries (a body may
echo the key it was sent), so `str`, `repr` and `.detail` are clean.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING

from metis_core.secret_scrub import scrub_secrets

if TYPE_CHECKING:
    from metis_core.events.envelope import Event


class MetisError(Exception):
    """Root of every error metis-core raises on purpose."""


# --- configuration -------------------------------------------------------------------------


class ConfigError(MetisError):
    """The configuration under METIS_HOME is missing, unreadable or invalid."""


class MissingAPIKeyError(ConfigError):
    """No API key is configured for a provider that needs one."""

    def __init__(self, provider: str, env_var: str | None) -> None:
        self.provider = provider
        self.env_var = env_var
        hint = f"set {env_var}" if env_var else "add a key for it in the config file"
        super().__init__(f"no API key for provider {provider!r}: {hint} (or run `metis demo` offline)")


class InsecureKeyFileError(ConfigError):
    """A file holding a secret is readable by other users."""

    def __init__(self, path: str, mode: int) -> None:
        self.path = path
        self.mode = mode
        super().__init__(
            f"{path} holds secrets but has mode {mode:04o}; run `chmod 600 {path}` and try again"
        )


class CompactionConfigError(ConfigError):
    """Compaction settings out of range (threshold outside (0, 1], a negative count); the message names the field."""


class PriceTableError(ConfigError):
    """The price table (built-in or a user override) is malformed; the message names the entry."""


# --- canonical format ----------------------------------------------------------------------


class ViolationsError(MetisError):
    """Base for errors that report every violation found, not just the first."""

    def __init__(self, subject: str, violations: Sequence[str]) -> None:
        self.violations = list(violations)
        lines = "\n".join(f"  - {v}" for v in self.violations)
        super().__init__(f"{subject}: {len(self.violations)} violation(s)\n{lines}")


class MessageInvariantError(ViolationsError):
    """A COMPLETE message breaks the invariants of canonical-message-format §5."""


class SessionInvariantError(ViolationsError):
    """A list of messages breaks a session-level invariant (tool_use/tool_result pairing)."""


class SchemaMigrationError(MetisError):
    """A stored message cannot be brought to the current schema version."""


class ToolSchemaError(MetisError):
    """A tool's input_schema uses a JSON Schema construct outside the supported subset."""

    def __init__(self, tool: str, construct: str, path: str, why: str = "") -> None:
        self.tool = tool
        self.construct = construct
        self.path = path
        extra = f": {why}" if why else ""
        super().__init__(
            f"tool {tool!r}: input_schema uses {construct!r} at {path}{extra}. "
            "See docs/tool-schema-subset.md for what every provider accepts."
        )


class ToolInputInvalidError(ViolationsError):
    """A tool_use input does not validate against the tool's schema."""

    def __init__(self, tool: str, violations: Sequence[str]) -> None:
        self.tool = tool
        super().__init__(f"input for tool {tool!r} is invalid", violations)


class ModelIdError(MetisError):
    """A model identifier is not of the form `<provider>:<model>`."""


class UnknownModelError(MetisError):
    """A model id, alias or chain member is not in the registry.

    `operator_hint` (where to add a model: the config file's path) ends the message for the person who
    runs metis; `without_operator_hint` is the part a gateway's client may see."""

    def __init__(self, message: str, *, operator_hint: str = "") -> None:
        self.without_operator_hint = message
        self.operator_hint = operator_hint
        super().__init__(f"{message} {operator_hint}" if operator_hint else message)


class AliasCycleError(MetisError):
    """Alias expansion came back to an alias it was already expanding."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = list(cycle)
        super().__init__(f"alias cycle: {' -> '.join(self.cycle)}; fix the aliases in your config")


class CapabilityMismatchError(MetisError):
    """A model cannot carry what a request or a session history needs."""

    def __init__(self, model: str, capability: str, reason: str) -> None:
        self.model = model
        self.capability = capability
        self.reason = reason
        super().__init__(f"cannot use {model}: {reason} (needs {capability})")


class CriticalBlockDropError(CapabilityMismatchError):
    """An adapter would drop a block its message marks critical (metadata.critical_blocks, §4.2.2)."""

    def __init__(self, adapter: str, message_id: str, block_index: int, block_type: str, reason: str) -> None:
        self.model, self.capability, self.reason = adapter, block_type, reason
        self.message_id, self.block_index = message_id, block_index
        MetisError.__init__(
            self,
            f"{adapter} cannot carry {block_type} block {block_index} of message {message_id}, which is marked "
            f"critical ({reason}); nothing was sent: pick a model that carries it, or unmark the block",
        )


class UnsupportedProviderError(MetisError):
    """No adapter is registered under that provider name."""


class UnreadableWireRequestError(MetisError):
    """A provider-format request (gateway inbound, import) has a shape metis cannot read canonically.

    The message names the field and what to send instead.
    """


# --- provider calls ------------------------------------------------------------------------


class ErrorClass(StrEnum):
    """The eight classes every provider failure is sorted into (llm.call_failed.error_class)."""

    RATE_LIMIT = "rate_limit"
    AUTH = "auth"
    SERVER_ERROR = "server_error"
    NETWORK = "network"
    CONTEXT_OVERFLOW = "context_overflow"
    INVALID_REQUEST = "invalid_request"
    CANCELLED = "cancelled"
    OTHER = "other"


RETRYABLE_CLASSES = frozenset({ErrorClass.RATE_LIMIT, ErrorClass.SERVER_ERROR, ErrorClass.NETWORK})


class ProviderError(MetisError):
    """A call to a provider failed. Carries what a caller needs to retry or fall back."""

    error_class: ErrorClass = ErrorClass.OTHER

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        provider_code: str | None = None,
        retry_count: int = 0,
    ) -> None:
        message = scrub_secrets(str(message))  # the one place a response body enters an exception
        provider_code = scrub_secrets(str(provider_code)) if provider_code else None
        request_id = scrub_secrets(str(request_id)) if request_id else None
        self.provider = provider
        self.status = status
        self.request_id = request_id
        self.retry_after = retry_after
        self.provider_code = provider_code
        self.retry_count = retry_count
        self.detail = message
        parts = [f"{provider}"]
        if status is not None:
            parts.append(f"HTTP {status}")
        if provider_code:
            parts.append(provider_code)
        head = " ".join(parts)
        tail = f" (request id {request_id})" if request_id else ""
        super().__init__(f"{head}: {message}{tail}")

    @property
    def retryable(self) -> bool:
        return self.error_class in RETRYABLE_CLASSES


class RateLimitError(ProviderError):
    error_class = ErrorClass.RATE_LIMIT


class AuthenticationError(ProviderError):
    error_class = ErrorClass.AUTH


class ServerError(ProviderError):
    """5xx, Anthropic 529 overloaded, or an error event inside a stream from the server side."""

    error_class = ErrorClass.SERVER_ERROR


class NetworkError(ProviderError):
    error_class = ErrorClass.NETWORK


class ContextOverflowError(ProviderError):
    error_class = ErrorClass.CONTEXT_OVERFLOW


class InvalidRequestError(ProviderError):
    error_class = ErrorClass.INVALID_REQUEST


class RequestCancelledError(ProviderError):
    error_class = ErrorClass.CANCELLED


class OtherProviderError(ProviderError):
    error_class = ErrorClass.OTHER


class MalformedResponseError(OtherProviderError):
    """A provider body or stream chunk could not be parsed; the raw excerpt is kept for diagnosis."""


class TruncatedStreamError(NetworkError):
    """A stream ended before its terminal event (connection drop or cut-off body)."""


ERROR_CLASS_TYPES: dict[ErrorClass, type[ProviderError]] = {
    ErrorClass.RATE_LIMIT: RateLimitError,
    ErrorClass.AUTH: AuthenticationError,
    ErrorClass.SERVER_ERROR: ServerError,
    ErrorClass.NETWORK: NetworkError,
    ErrorClass.CONTEXT_OVERFLOW: ContextOverflowError,
    ErrorClass.INVALID_REQUEST: InvalidRequestError,
    ErrorClass.CANCELLED: RequestCancelledError,
    ErrorClass.OTHER: OtherProviderError,
}


class AllModelsFailedError(MetisError):
    """Every member of a fallback chain failed or was benched; `errors` holds each failure."""

    def __init__(self, chain: Sequence[str], errors: Sequence[BaseException]) -> None:
        self.chain = list(chain)
        self.errors = list(errors)
        detail = "; ".join(f"{m}: {e}" for m, e in zip(self.chain, self.errors, strict=False))
        super().__init__(f"no model in the chain could answer ({detail})")


# --- events --------------------------------------------------------------------------------


class EventValidationError(MetisError):
    """An event's payload or sensitivity does not match the catalog (strict mode)."""


class EventBusOverflowError(MetisError):
    """The bus dispatch queue is full; the event was not enqueued."""


class FastPathHandlerError(MetisError):
    """A handler marked slow was registered on the fast path."""


class EventBusClosedError(MetisError):
    """emit() was called on a bus that has been shut down."""


class EventBusTimeoutError(MetisError, TimeoutError):
    """flush() or shutdown() gave up before every emitted event was dispatched."""


class BrokenCausalChainError(MetisError):
    """A parent_event_id points at an event that cannot be found (or the chain loops)."""

    def __init__(self, message: str, *, missing_event_id: str, walked: Sequence[Event] = ()) -> None:
        self.missing_event_id = missing_event_id
        self.walked = list(walked)
        super().__init__(message)


# --- storage -------------------------------------------------------------------------------


class StoreError(MetisError):
    """Base for persistence failures; messages name the database file."""


class DatabaseLockedError(StoreError):
    """Another process held the database longer than the busy timeout."""


class CorruptDatabaseError(StoreError):
    """The file is not a metis database, or SQLite reports it malformed."""


class SchemaVersionError(StoreError):
    """The database was written by a newer metis, or a backup's version does not match."""


class StorageFullError(StoreError):
    """The disk is full or the directory is read-only; nothing was half-written."""


class DatabaseConnectionError(StoreError):
    """The database server could not be reached, or the connection dropped mid-statement.

    Whatever transaction was open was rolled back by the server: nothing half-written is kept.
    """


class DatabaseDriverMissingError(StoreError):
    """A postgresql:// URL was given but psycopg is not installed (`pip install 'metis-core[postgres]'`)."""


class BackupError(StoreError):
    """A backup or restore was refused; the message says why and how to proceed."""


class SessionNotFoundError(StoreError):
    """No session with that id exists in the store."""


class UserNotFoundError(StoreError):
    """No user with that id is in the registry, and no gateway key names it."""


class SessionExistsError(StoreError):
    """An import or create names a session id that is already stored."""


class ExportError(MetisError):
    """A trace export could not be written; the message names the target and what to check."""


class EventLogIntegrityError(MetisError):
    """An exported event log fails verification: a hash, the chain, a schema or the expected head."""

    def __init__(self, message: str, *, line: int | None = None, sequence: int | None = None) -> None:
        super().__init__(message)
        self.line, self.sequence = line, sequence


class TraceIntegrityError(MetisError):
    """The stored trace fails `metis trace verify --store`: events point at parents that were never
    stored (and not pruned by retention)."""

    def __init__(self, message: str, *, missing_parents: int) -> None:
        super().__init__(message)
        self.missing_parents = missing_parents

# --- record and replay ---------------------------------------------------------------------


class CassetteError(MetisError):
    """Base for record/replay failures: a cassette that cannot be read or does not hold a call."""


class CassetteFormatError(CassetteError):
    """A cassette file is missing, not a metis cassette, or has a malformed line (named)."""


class CassetteMissError(CassetteError):
    """A replayed request has no recording; says which recorded request is closest and what differs."""

    def __init__(self, path: str, model: str, differences: Sequence[str], closest_index: int | None) -> None:
        self.path = path
        self.model = model
        self.differences = list(differences)
        self.closest_index = closest_index
        if closest_index is None:
            detail = "the cassette holds no calls"
        else:
            lines = "\n".join(f"  - {d}" for d in self.differences) or "  - (identical request, already used up)"
            detail = f"closest recorded request is call #{closest_index}; it differs by:\n{lines}"
        super().__init__(
            f"no recording in {path} for this {model} request; {detail}\n"
            "re-record the cassette (pytest --metis-record, metis run --record, or ModelClient(record=...)) "
            "if the change is intended"
        )


class ReplayError(MetisError):
    """A stored session cannot be replayed as asked (no user turns, a bad --turns range, no sessions match)."""


# --- tools and the agent loop --------------------------------------------------------------


class ToolError(MetisError):
    """A built-in tool refused or failed; the message is fed back to the model."""


class PathEscapeError(ToolError):
    """A path resolves outside the session's workspace (through `..` or a symlink)."""


class ToolModuleError(ToolError):
    """A module of Python tools (`--tools-from`, `tools:` in config) could not be loaded."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        super().__init__(f"cannot load tools from {path}: {problem}")


class PromptCompositionError(MetisError):
    """A prompt part is malformed (a template id or version the record cannot carry)."""


class InvalidToolPathError(ToolError):
    """A tool was given a path no file can have (a NUL byte in it)."""


class RoutingPolicyError(MetisError):
    """routing.yaml is invalid; the last known good policy stays in force."""


class McpServerError(ToolError):
    """An MCP server could not be started, reached or listed; `server` names it."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(f"MCP server {server!r}: {message}")


class McpSdkMissingError(ConfigError):
    """mcp_servers are configured but the `mcp` package is not installed."""

    def __init__(self) -> None:
        super().__init__("mcp_servers are configured but the MCP SDK is not installed; "
                         "run `pip install 'metis-core[mcp]'` or remove mcp_servers from config.yaml")


class MemoryEditError(ToolError):
    """A memory change cannot be applied as asked (no or several matching entries, an entry over the cap)."""


class SkillFormatError(ConfigError):
    """A SKILL.md is not in the skill format; the message names the file and what is wrong."""


class NoModelForTierError(MetisError):
    """A delegation tier names no model that can take the worker's turn."""


class LearningError(MetisError):
    """The learning layer (feedback, evaluator, pattern store) could not do what was asked."""


class FeedbackTargetError(LearningError):
    """Feedback names a session or turn the record does not hold."""


class EvaluationError(LearningError):
    """One evaluation could not produce a verdict; `failure_mode` is eval.failed's."""

    failure_mode = "judge_call_failed"


class RubricInvalidError(EvaluationError):
    """A rubric file failed to load or validate."""

    failure_mode = "rubric_invalid"


class EvalSubjectNotFoundError(EvaluationError):
    """The subject of an evaluation resolved to no events."""

    failure_mode = "subject_not_found"


class JudgeOutputInvalidError(EvaluationError):
    """The LLM judge answered with something that is not a valid verdict (after its retries)."""

    failure_mode = "judge_output_invalid"

    def __init__(self, message: str, *, cost_usd: Decimal = Decimal(0)) -> None:
        super().__init__(message)
        self.cost_usd = cost_usd
        """What the judge's attempts cost before it gave up."""


class JudgeCallFailedError(EvaluationError):
    """The LLM judge's model call failed (provider down, auth, budget)."""

    failure_mode = "judge_call_failed"

    def __init__(self, message: str, *, cost_usd: Decimal = Decimal(0)) -> None:
        super().__init__(message)
        self.cost_usd = cost_usd
        """What the judge's earlier attempts cost before the call that failed."""


# --- the gateway ---------------------------------------------------------------------------


class GatewayError(MetisError):
    """A gateway request was refused; `status` is the HTTP status the client gets.

    `kind` names the refusal (auth, quota, body ...) so each inbound shape can write its own error
    type; the message is safe to show the client: it never holds a key or an upstream secret.
    """

    status: int = 400
    kind: str = "invalid_request"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class GatewayRequestError(GatewayError):
    """The inbound body is not JSON, has wrong types, or asks for something metis cannot read."""


class GatewayBodyTooLargeError(GatewayError):
    """The inbound body is over the configured limit (`gateway.max_body_bytes`)."""

    status = 413
    kind = "too_large"


class GatewayAuthError(GatewayError):
    """No key, an unknown key, or a revoked or expired one (`reason` as gateway.auth_failed names it)."""

    status = 401
    kind = "auth"

    def __init__(self, message: str, *, reason: str = "invalid_token", key_id: str | None = None) -> None:
        self.reason = reason
        self.key_id = key_id
        super().__init__(message)


class GatewayScopeError(GatewayError):
    """A valid key whose scope does not cover what it was used for: a `model` key on `metis serve`,
    a `viewer` key on the gateway's model routes (`reason` is `insufficient_scope`)."""

    status = 403
    kind = "scope"

    def __init__(self, message: str, *, key_id: str) -> None:
        self.reason = "insufficient_scope"
        self.key_id = key_id
        super().__init__(message)


class GatewayModelNotAllowedError(GatewayError):
    """The key's allow-list does not cover the model asked for."""

    status = 403
    kind = "permission"


class GatewayUnknownModelError(GatewayError):
    """The `model` field names no model, alias or chain the registry knows."""

    status = 404
    kind = "not_found"


class GatewayQuotaError(GatewayError):
    """A spend budget, requests-per-minute or tokens-per-minute limit is reached."""

    status = 429
    kind = "rate_limit"


class GatewayBudgetError(GatewayQuotaError):
    """A call's worst-case cost does not fit what is left of a budget once spend and the reservations
    of calls in flight are counted; refused before any upstream traffic (docs/gateway.md "Budgets and
    reservations")."""


class GatewayUnpricedModelError(GatewayError):
    """A budgeted key asked for a model with no price, and no reservation for unpriced models is configured."""

    status = 403
    kind = "permission"


class GatewayKeyError(MetisError):
    """A key-management command named a key that does not exist or cannot take the change."""


# --- structured output (docs/structured-output.md) ------------------------------------------


class OutputSchemaError(MetisError):
    """An `output=` argument is not a pydantic model class, a JSON Schema dict or an OutputSpec."""


class OutputRefusedError(MetisError):
    """The provider refused to answer (OpenAI `refusal`, Anthropic refusal stop, Gemini safety block).

    Never retried: retrying a refusal with a changed prompt searches for a way around the filter."""

    def __init__(self, model: str, refusal_text: str | None, *, safety_category: str | None = None,
                 attempts: Sequence[object] = ()) -> None:
        self.model = model
        self.provider = model.partition(":")[0]
        refusal_text = scrub_secrets(refusal_text) if refusal_text else refusal_text  # provider text, like a body
        self.refusal_text = refusal_text
        self.safety_category = safety_category
        self.attempts = list(attempts)
        said = f": {refusal_text}" if refusal_text else ""
        super().__init__(f"{model} refused to give the structured answer{said}; "
                         "rephrase the request or use another model (refusals are not retried)")


class OutputValidationError(MetisError):
    """No attempt produced an answer that parses and validates against the output schema.

    `attempts` holds every attempt's record (OutputAttempt), each with its reason and validator errors."""

    def __init__(self, model: str, output_name: str, attempts: Sequence[object], final_reason: str) -> None:
        self.model = model
        self.output_name = output_name
        self.attempts = list(attempts)
        self.final_reason = final_reason
        reasons = "; ".join(f"attempt {i}: {a}" for i, a in enumerate(self.attempts, 1))
        super().__init__(f"{model} gave no valid {output_name!r} after {len(self.attempts)} attempt(s) ({reasons}); "
                         "raise the retry budget, enable nl_to_format, simplify the schema or pick a stronger model")


class ServeError(MetisError):
    """`metis serve` was asked for something it refuses (an open bind without a key, a bad request)."""


class ServeAccessKeyMissingError(ServeError):
    """`metis serve` (or `gateway serve --web`) was asked to bind beyond loopback while no active
    gateway key has the `admin` or `viewer` scope: the record would be open to the network."""


class ServeAccessError(ServeError):
    """A request to `metis serve` lacks a valid access token, or asks for more than its token allows."""


class ServeHostError(ServeError):
    """A request named a Host this server does not answer to (DNS rebinding, a misrouted name): 421."""

    status = 421


class ServeOriginError(ServeError):
    """A state-changing request or WebSocket handshake came from another site's page: 403."""

    status = 403


class ServeContentTypeError(ServeError):
    """A JSON API write was not sent as `application/json` (a CORS-simple body): 415."""

    status = 415


class StreamRequestError(ServeError):
    """A WebSocket or SSE subscription named something invalid (an unknown type, domain or sensitivity)."""


class ConsoleQueryError(MetisError):
    """A console API request named something invalid (a bad date, an unknown sort, column or bucket): 400."""

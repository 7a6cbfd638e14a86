"""The errors of the layers above a model call: events, storage, record and replay, tools and the
agent loop, learning, the gateway, structured output and `metis serve`.

They belong to the one hierarchy of errors.py, which re-exports every name here on first use
(`from metis_core.errors import GatewayError` works as before): a model call raises none of them,
so a process that only calls models never creates their classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from metis_core.errors import ConfigError, MetisError
from metis_core.secret_scrub import scrub_secrets

if TYPE_CHECKING:
    from metis_core.events.envelope import Event

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

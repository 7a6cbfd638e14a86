"""The one exception hierarchy of metis-core, rooted at `MetisError`.

Every class is named for what happened and carries the fields a caller needs to react
(provider, HTTP status, retry_after ...). Messages say what to do next. No exception here
ever holds an API key: provider errors are built from response bodies and status codes only,
and `ProviderError` scrubs every known key value and key shape from what it carries (a body may
echo the key it was sent), so `str`, `repr` and `.detail` are clean. The errors a model call can
raise are defined here; those of the layers above it (store, gateway, serve ...) in layer_errors.py,
loaded on first use of one of their names.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from metis_core.secret_scrub import scrub_secrets

if TYPE_CHECKING:
    from metis_core.layer_errors import *  # noqa: F403  (the names __getattr__ below gives)


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


def __getattr__(name: str) -> Any:
    """An error of layer_errors.py, imported on first use: a model call raises none of them."""
    if not name.startswith("__"):
        from metis_core import layer_errors

        value = getattr(layer_errors, name, None)
        if isinstance(value, type) and issubclass(value, MetisError):
            globals()[name] = value  # later lookups are plain attribute reads
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

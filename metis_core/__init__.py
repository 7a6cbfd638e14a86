"""metis-core: one canonical conversation across every model, with every action on the record.

The public names are importable from here. They are loaded on first use, so `import metis_core`
pulls in neither the HTTP stack nor any provider code until a call needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # canonical format
    **{
        name: "metis_core.messages"
        for name in (
            "BlockOrigin", "ContentBlock", "ImageBlock", "ImageSource", "Message", "MessageComplete",
            "MessageMetadata", "MessageStatus", "RedactedThinkingBlock", "Role", "RoutingDecisionRecord",
            "RoutingMode", "SideEffects", "StreamError", "StreamEvent", "TextBlock", "TextDelta",
            "ThinkingBlock", "ThinkingDelta", "ToolDefinition", "ToolResultBlock", "ToolUseBlock",
            "ToolUseEnd", "ToolUseInputDelta", "ToolUseStart", "Usage", "UsageUpdate", "check_message",
            "check_session", "user_message", "system_message", "tool_result_message",
        )
    },
    "AdapterCapabilities": "metis_core.models.capabilities",
    "ModelId": "metis_core.models.model_id",
    "parse_model_id": "metis_core.models.model_id",
    "new_ulid": "metis_core.ids",
    "new_tool_use_id": "metis_core.ids",
    "new_session_id": "metis_core.ids",
    "json_hash": "metis_core.hashing",
    "canonical_json": "metis_core.hashing",
    # events
    "Event": "metis_core.events.envelope",
    "Actor": "metis_core.events.envelope",
    "Sensitivity": "metis_core.events.envelope",
    # errors
    **{
        name: "metis_core.errors"
        for name in (
            "MetisError", "ConfigError", "MissingAPIKeyError", "InsecureKeyFileError",
            "MessageInvariantError", "SessionInvariantError", "SchemaMigrationError", "ToolSchemaError",
            "ToolInputInvalidError", "ModelIdError", "UnknownModelError", "AliasCycleError",
            "CapabilityMismatchError", "UnsupportedProviderError", "ErrorClass", "ProviderError",
            "RateLimitError", "AuthenticationError", "ServerError", "NetworkError",
            "ContextOverflowError", "InvalidRequestError", "RequestCancelledError",
            "OtherProviderError", "MalformedResponseError", "TruncatedStreamError",
            "AllModelsFailedError", "EventValidationError", "EventBusOverflowError",
            "FastPathHandlerError", "EventBusClosedError", "StoreError", "DatabaseLockedError",
            "CorruptDatabaseError", "SchemaVersionError", "StorageFullError", "BackupError",
            "SessionNotFoundError", "ToolError", "PathEscapeError", "RoutingPolicyError",
        )
    },
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'metis_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from metis_core.errors import *  # noqa: F403
    from metis_core.events.envelope import Actor, Event, Sensitivity  # noqa: F401
    from metis_core.messages import *  # noqa: F403
    from metis_core.models.capabilities import AdapterCapabilities  # noqa: F401

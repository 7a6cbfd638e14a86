# ruff: noqa: F401, I001
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
    "BlockOrigin": "metis_core.messages",
    "Citation": "metis_core.messages",
    "CompactionBlock": "metis_core.messages",
    "ContentBlock": "metis_core.messages",
    "ImageBlock": "metis_core.messages",
    "ImageSource": "metis_core.messages",
    "Message": "metis_core.messages",
    "MessageComplete": "metis_core.messages",
    "MessageMetadata": "metis_core.messages",
    "MessageStatus": "metis_core.messages",
    "ProviderToolCallBlock": "metis_core.messages",
    "ProviderToolResultBlock": "metis_core.messages",
    "RedactedThinkingBlock": "metis_core.messages",
    "Role": "metis_core.messages",
    "RoutingDecisionRecord": "metis_core.messages",
    "RoutingMode": "metis_core.messages",
    "StopReason": "metis_core.messages",
    "SideEffects": "metis_core.messages",
    "StreamError": "metis_core.messages",
    "StreamEvent": "metis_core.messages",
    "TextBlock": "metis_core.messages",
    "TextDelta": "metis_core.messages",
    "ThinkingBlock": "metis_core.messages",
    "ThinkingDelta": "metis_core.messages",
    "ToolDefinition": "metis_core.messages",
    "ToolResultBlock": "metis_core.messages",
    "ToolUseBlock": "metis_core.messages",
    "ToolUseEnd": "metis_core.messages",
    "ToolUseInputDelta": "metis_core.messages",
    "ToolUseStart": "metis_core.messages",
    "Usage": "metis_core.messages",
    "UsageUpdate": "metis_core.messages",
    "WholeBlock": "metis_core.messages",
    "CitationDelta": "metis_core.messages",
    "check_message": "metis_core.messages",
    "check_session": "metis_core.messages",
    "user_message": "metis_core.messages",
    "system_message": "metis_core.messages",
    "tool_result_message": "metis_core.messages",
    "check_tool_schema": "metis_core.messages.tool_schema",
    "normalize_schema": "metis_core.messages.schema_normalize",
    "NormalizedSchema": "metis_core.messages.schema_normalize",
    "SchemaChange": "metis_core.messages.schema_normalize",
    "tool": "metis_core.agent.tools.python_tool",
    "PythonTool": "metis_core.agent.tools.python_tool",
    "load_tool_module": "metis_core.agent.tools.python_tool",
    "ToolContext": "metis_core.agent.tools.base",
    "ToolOutcome": "metis_core.agent.tools.base",
    "ToolRegistry": "metis_core.agent.tools.registry",
    "validate_tool_input": "metis_core.messages.tool_input",
    "tool_input_violations": "metis_core.messages.tool_input",
    "new_ulid": "metis_core.ids",
    "new_tool_use_id": "metis_core.ids",
    "new_session_id": "metis_core.ids",
    "json_hash": "metis_core.hashing",
    "canonical_json": "metis_core.hashing",
    "AdapterCapabilities": "metis_core.models.capabilities",
    "ModelId": "metis_core.models.model_id",
    "parse_model_id": "metis_core.models.model_id",
    "ModelRegistry": "metis_core.models.registry",
    "ModelInfo": "metis_core.models.registry",
    "default_registry": "metis_core.models.registry",
    "PriceTable": "metis_core.models.pricing",
    "ModelPrice": "metis_core.models.pricing",
    "price_usage": "metis_core.models.pricing",
    "default_price_table": "metis_core.models.pricing",
    "MetisConfig": "metis_core.config",
    "load_config": "metis_core.config",
    "metis_home": "metis_core.config",
    "get_adapter": "metis_core.adapters.registry",
    "Adapter": "metis_core.adapters.base",
    "AdapterOptions": "metis_core.adapters.base",
    "RequestContext": "metis_core.adapters.base",
    "WireRequest": "metis_core.adapters.base",
    "StreamTranslator": "metis_core.adapters.base",
    "ToolIdMap": "metis_core.adapters._common.tool_ids",
    "ModelClient": "metis_core.adapters.client",
    "RetryPolicy": "metis_core.transport.retry",
    "Event": "metis_core.events.envelope",
    "Actor": "metis_core.events.envelope",
    "Sensitivity": "metis_core.events.envelope",
    "EventBus": "metis_core.events.bus",
    "BusMode": "metis_core.events.bus",
    "EventFilter": "metis_core.events.filters",
    "Subscription": "metis_core.events.subscription",
    "SubscriptionHandle": "metis_core.events.subscription",
    "slow": "metis_core.events.subscription",
    "CATALOG": "metis_core.events.catalog",
    "PAYLOAD_REGISTRY": "metis_core.events.catalog",
    "AUDIT_EVENT_TYPES": "metis_core.events.catalog",
    "make_event": "metis_core.events.catalog",
    "catalog_json_schema": "metis_core.events.catalog",
    "walk_to_root": "metis_core.events.causality",
    "build_tree": "metis_core.events.causality",
    "CausalTree": "metis_core.events.causality",
    "EventRecorder": "metis_core.events.recorder",
    "SessionStore": "metis_core.store.sessions",
    "SharedDatabase": "metis_core.store.backend",
    "TraceStore": "metis_core.trace.store",
    "BackupResult": "metis_core.trace.backup",
    "backup": "metis_core.trace.backup",
    "restore": "metis_core.trace.backup",
    "PurgeResult": "metis_core.trace.retention",
    "export_audit": "metis_core.trace.audit",
    "HealthTracker": "metis_core.routing.health",
    "HealthPolicy": "metis_core.routing.health",
    "FallbackChain": "metis_core.routing.fallback",
    "RoutingEngine": "metis_core.routing.engine",
    "NoRoutableModelError": "metis_core.routing.engine",
    "Runtime": "metis_core.agent.runtime",
    "TurnLimits": "metis_core.agent.turn",
    "McpServerConfig": "metis_core.agent_config",
    "DelegationConfig": "metis_core.agent_config",
    "MemoryConfig": "metis_core.agent_config",
    "SkillsConfig": "metis_core.agent_config",
    "export_otel": "metis_core.export",
    "export_openwop": "metis_core.export",
    "export_event_log": "metis_core.export",
    "verify_event_log": "metis_core.export",
    "ExportOptions": "metis_core.export",
    "ExportSummary": "metis_core.export",
    "check_fits": "metis_core.models.fit",
    "HttpTransport": "metis_core.transport.http",
    "MetisError": "metis_core.errors",
    "OutputRefusedError": "metis_core.errors",
    "OutputSchemaError": "metis_core.errors",
    "OutputValidationError": "metis_core.errors",
    "OutputPolicy": "metis_core.structured.policy",
    "OutputSpec": "metis_core.structured.spec",
    "output_spec": "metis_core.structured.spec",
    "StructuredResult": "metis_core.structured.result",
    "OutputAttempt": "metis_core.structured.result",
    "PartialOutput": "metis_core.structured.stream",
    "recover_json": "metis_core.structured.recovery",
    "ConfigError": "metis_core.errors",
    "MissingAPIKeyError": "metis_core.errors",
    "InsecureKeyFileError": "metis_core.errors",
    "PriceTableError": "metis_core.errors",
    "CompactionConfigError": "metis_core.errors",
    "ViolationsError": "metis_core.errors",
    "MessageInvariantError": "metis_core.errors",
    "SessionInvariantError": "metis_core.errors",
    "SchemaMigrationError": "metis_core.errors",
    "ToolSchemaError": "metis_core.errors",
    "ToolInputInvalidError": "metis_core.errors",
    "ModelIdError": "metis_core.errors",
    "UnknownModelError": "metis_core.errors",
    "AliasCycleError": "metis_core.errors",
    "CapabilityMismatchError": "metis_core.errors",
    "UnsupportedProviderError": "metis_core.errors",
    "UnreadableWireRequestError": "metis_core.errors",
    "ErrorClass": "metis_core.errors",
    "ProviderError": "metis_core.errors",
    "RateLimitError": "metis_core.errors",
    "AuthenticationError": "metis_core.errors",
    "ServerError": "metis_core.errors",
    "NetworkError": "metis_core.errors",
    "ContextOverflowError": "metis_core.errors",
    "InvalidRequestError": "metis_core.errors",
    "RequestCancelledError": "metis_core.errors",
    "OtherProviderError": "metis_core.errors",
    "MalformedResponseError": "metis_core.errors",
    "TruncatedStreamError": "metis_core.errors",
    "AllModelsFailedError": "metis_core.errors",
    "EventValidationError": "metis_core.errors",
    "EventBusOverflowError": "metis_core.errors",
    "FastPathHandlerError": "metis_core.errors",
    "EventBusClosedError": "metis_core.errors",
    "EventBusTimeoutError": "metis_core.errors",
    "BrokenCausalChainError": "metis_core.errors",
    "StoreError": "metis_core.errors",
    "DatabaseLockedError": "metis_core.errors",
    "CorruptDatabaseError": "metis_core.errors",
    "SchemaVersionError": "metis_core.errors",
    "StorageFullError": "metis_core.errors",
    "DatabaseConnectionError": "metis_core.errors",
    "DatabaseDriverMissingError": "metis_core.errors",
    "BackupError": "metis_core.errors",
    "SessionNotFoundError": "metis_core.errors",
    "SessionExistsError": "metis_core.errors",
    "ToolError": "metis_core.errors",
    "PathEscapeError": "metis_core.errors",
    "ToolModuleError": "metis_core.errors",
    "InvalidToolPathError": "metis_core.errors",
    "RoutingPolicyError": "metis_core.errors",
    "ExportError": "metis_core.errors",
    "GatewayError": "metis_core.errors",
    "GatewayRequestError": "metis_core.errors",
    "GatewayBodyTooLargeError": "metis_core.errors",
    "GatewayAuthError": "metis_core.errors",
    "GatewayScopeError": "metis_core.errors",
    "GatewayModelNotAllowedError": "metis_core.errors",
    "GatewayUnknownModelError": "metis_core.errors",
    "GatewayQuotaError": "metis_core.errors",
    "GatewayBudgetError": "metis_core.errors",
    "GatewayUnpricedModelError": "metis_core.errors",
    "GatewayKeyError": "metis_core.errors",
    "ServeHostError": "metis_core.errors",
    "ServeOriginError": "metis_core.errors",
    "ServeContentTypeError": "metis_core.errors",
    "McpServerError": "metis_core.errors",
    "McpSdkMissingError": "metis_core.errors",
    "MemoryEditError": "metis_core.errors",
    "SkillFormatError": "metis_core.errors",
    "NoModelForTierError": "metis_core.errors",
    "EventLogIntegrityError": "metis_core.errors",
    "TraceIntegrityError": "metis_core.errors",
    "UserNotFoundError": "metis_core.errors",
    "CriticalBlockDropError": "metis_core.errors",
    "PromptCompositionError": "metis_core.errors",
    "ServeError": "metis_core.errors",
    "ServeAccessError": "metis_core.errors",
    "ServeAccessKeyMissingError": "metis_core.errors",
    "StreamRequestError": "metis_core.errors",
    "ConsoleQueryError": "metis_core.errors",
    "PromptComposer": "metis_core.prompts",
    "PromptPart": "metis_core.prompts",
    "Composition": "metis_core.prompts",
    "NamedProvider": "metis_core.provider_dsn",
    "reprice": "metis_core.models.repricing",
    "Repricing": "metis_core.models.repricing",
    "CassetteError": "metis_core.errors",
    "CassetteFormatError": "metis_core.errors",
    "CassetteMissError": "metis_core.errors",
    "ReplayError": "metis_core.errors",
    "LearningError": "metis_core.errors",
    "FeedbackTargetError": "metis_core.errors",
    "EvaluationError": "metis_core.errors",
    "RubricInvalidError": "metis_core.errors",
    "EvalSubjectNotFoundError": "metis_core.errors",
    "JudgeOutputInvalidError": "metis_core.errors",
    "JudgeCallFailedError": "metis_core.errors",
    "LearningLoop": "metis_core.learning.loop",
    "LearningSettings": "metis_core.learning.settings",
    "PatternAdvisor": "metis_core.routing.pattern_slot",
    "PatternRecommendation": "metis_core.routing.pattern_slot",
    "RouteSuggestion": "metis_core.agent.route_advice",
    "Cassette": "metis_core.cassettes.cassette",
    "Scrubber": "metis_core.cassettes.scrub",
    "replay_session": "metis_core.replay.session_replay",
    "ReplayReport": "metis_core.replay.session_replay",
    "replay_sessions": "metis_core.replay.batch",
    "BatchReport": "metis_core.replay.batch",
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
    from metis_core.messages import (
        BlockOrigin,
        Citation,
        CompactionBlock,
        ContentBlock,
        ImageBlock,
        ImageSource,
        Message,
        MessageComplete,
        MessageMetadata,
        MessageStatus,
        ProviderToolCallBlock,
        ProviderToolResultBlock,
        RedactedThinkingBlock,
        Role,
        RoutingDecisionRecord,
        RoutingMode,
        StopReason,
        SideEffects,
        StreamError,
        StreamEvent,
        TextBlock,
        TextDelta,
        ThinkingBlock,
        ThinkingDelta,
        ToolDefinition,
        ToolResultBlock,
        ToolUseBlock,
        ToolUseEnd,
        ToolUseInputDelta,
        ToolUseStart,
        Usage,
        UsageUpdate,
        WholeBlock,
        CitationDelta,
        check_message,
        check_session,
        user_message,
        system_message,
        tool_result_message,
    )
    from metis_core.messages.tool_schema import check_tool_schema
    from metis_core.messages.schema_normalize import normalize_schema, NormalizedSchema, SchemaChange
    from metis_core.agent.tools.python_tool import tool, PythonTool, load_tool_module
    from metis_core.agent.tools.base import ToolContext, ToolOutcome
    from metis_core.agent.tools.registry import ToolRegistry
    from metis_core.messages.tool_input import validate_tool_input, tool_input_violations
    from metis_core.ids import new_ulid, new_tool_use_id, new_session_id
    from metis_core.hashing import json_hash, canonical_json
    from metis_core.models.capabilities import AdapterCapabilities
    from metis_core.models.model_id import ModelId, parse_model_id
    from metis_core.models.registry import ModelRegistry, ModelInfo, default_registry
    from metis_core.models.pricing import PriceTable, ModelPrice, price_usage, default_price_table
    from metis_core.models.repricing import reprice, Repricing
    from metis_core.config import MetisConfig, load_config, metis_home
    from metis_core.provider_dsn import NamedProvider
    from metis_core.prompts import PromptComposer, PromptPart, Composition
    from metis_core.adapters.registry import get_adapter
    from metis_core.adapters.base import Adapter, AdapterOptions, RequestContext, WireRequest, StreamTranslator
    from metis_core.adapters._common.tool_ids import ToolIdMap
    from metis_core.adapters.client import ModelClient
    from metis_core.transport.retry import RetryPolicy
    from metis_core.events.envelope import Event, Actor, Sensitivity
    from metis_core.events.bus import EventBus, BusMode
    from metis_core.events.filters import EventFilter
    from metis_core.events.subscription import Subscription, SubscriptionHandle, slow
    from metis_core.events.catalog import CATALOG, PAYLOAD_REGISTRY, AUDIT_EVENT_TYPES, make_event, catalog_json_schema
    from metis_core.events.causality import walk_to_root, build_tree, CausalTree
    from metis_core.events.recorder import EventRecorder
    from metis_core.store.sessions import SessionStore
    from metis_core.store.backend import SharedDatabase
    from metis_core.trace.store import TraceStore
    from metis_core.trace.backup import BackupResult, backup, restore
    from metis_core.trace.retention import PurgeResult
    from metis_core.trace.audit import export_audit
    from metis_core.routing.health import HealthTracker, HealthPolicy
    from metis_core.routing.fallback import FallbackChain
    from metis_core.routing.engine import RoutingEngine, NoRoutableModelError
    from metis_core.routing.pattern_slot import PatternAdvisor, PatternRecommendation
    from metis_core.agent.route_advice import RouteSuggestion
    from metis_core.learning.loop import LearningLoop
    from metis_core.learning.settings import LearningSettings
    from metis_core.agent.runtime import Runtime
    from metis_core.agent.turn import TurnLimits
    from metis_core.agent_config import DelegationConfig, McpServerConfig, MemoryConfig, SkillsConfig
    from metis_core.export import (
        ExportOptions,
        ExportSummary,
        export_event_log,
        export_openwop,
        export_otel,
        verify_event_log,
    )
    from metis_core.models.fit import check_fits
    from metis_core.transport.http import HttpTransport
    from metis_core.structured.policy import OutputPolicy
    from metis_core.structured.spec import OutputSpec, output_spec
    from metis_core.structured.result import StructuredResult, OutputAttempt
    from metis_core.structured.stream import PartialOutput
    from metis_core.structured.recovery import recover_json
    from metis_core.errors import (
        MetisError,
        OutputRefusedError,
        OutputSchemaError,
        OutputValidationError,
        ConfigError,
        MissingAPIKeyError,
        InsecureKeyFileError,
        PriceTableError,
        CompactionConfigError,
        ViolationsError,
        MessageInvariantError,
        SessionInvariantError,
        SchemaMigrationError,
        ToolSchemaError,
        ToolInputInvalidError,
        ModelIdError,
        UnknownModelError,
        AliasCycleError,
        CapabilityMismatchError,
        UnsupportedProviderError,
        UnreadableWireRequestError,
        ErrorClass,
        ProviderError,
        RateLimitError,
        AuthenticationError,
        ServerError,
        NetworkError,
        ContextOverflowError,
        InvalidRequestError,
        RequestCancelledError,
        OtherProviderError,
        MalformedResponseError,
        TruncatedStreamError,
        AllModelsFailedError,
        EventValidationError,
        EventBusOverflowError,
        FastPathHandlerError,
        EventBusClosedError,
        EventBusTimeoutError,
        BrokenCausalChainError,
        StoreError,
        DatabaseLockedError,
        CorruptDatabaseError,
        SchemaVersionError,
        StorageFullError,
        DatabaseConnectionError,
        DatabaseDriverMissingError,
        BackupError,
        SessionNotFoundError,
        SessionExistsError,
        ToolError,
        PathEscapeError,
        ToolModuleError,
        InvalidToolPathError,
        RoutingPolicyError,
        GatewayError,
        GatewayRequestError,
        GatewayBodyTooLargeError,
        GatewayAuthError,
        GatewayScopeError,
        GatewayModelNotAllowedError,
        GatewayUnknownModelError,
        GatewayQuotaError,
        GatewayBudgetError,
        GatewayUnpricedModelError,
        GatewayKeyError,
        ServeHostError,
        ServeOriginError,
        ServeContentTypeError,
        ExportError,
        McpServerError,
        McpSdkMissingError,
        MemoryEditError,
        SkillFormatError,
        NoModelForTierError,
        PromptCompositionError,
        ServeError,
        ServeAccessError,
        ServeAccessKeyMissingError,
        StreamRequestError,
        ConsoleQueryError,
        CriticalBlockDropError,
        EventLogIntegrityError,
        TraceIntegrityError,
        UserNotFoundError,
        CassetteError,
        LearningError,
        FeedbackTargetError,
        EvaluationError,
        RubricInvalidError,
        EvalSubjectNotFoundError,
        JudgeOutputInvalidError,
        JudgeCallFailedError,
        CassetteFormatError,
        CassetteMissError,
        ReplayError,
    )
    from metis_core.cassettes.cassette import Cassette
    from metis_core.cassettes.scrub import Scrubber
    from metis_core.replay.session_replay import replay_session, ReplayReport
    from metis_core.replay.batch import replay_sessions, BatchReport

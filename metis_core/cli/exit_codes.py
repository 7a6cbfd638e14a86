"""The exit codes a script can rely on, and which failure maps to which (docs/cli.md).

One place decides the number for every kind of failure; commands raise MetisError subclasses
and never pick numbers themselves. It does not print anything (failures.py does).
"""

from __future__ import annotations

import sys
from enum import IntEnum

from metis_core.errors import (
    AliasCycleError,
    AllModelsFailedError,
    CapabilityMismatchError,
    ConfigError,
    EventLogIntegrityError,
    ExportError,
    FeedbackTargetError,
    GatewayKeyError,
    JudgeCallFailedError,
    MetisError,
    ModelIdError,
    NoModelForTierError,
    OutputRefusedError,
    OutputSchemaError,
    OutputValidationError,
    ProviderError,
    ReplayError,
    RoutingPolicyError,
    SchemaMigrationError,
    ServeAccessKeyMissingError,
    ServeError,
    StoreError,
    ToolModuleError,
    TraceIntegrityError,
    UnknownModelError,
    UnsupportedProviderError,
)


class UsageProblem(MetisError):
    """What the user typed cannot be run as given (exit 2); the message says how to write it."""


class ExitCode(IntEnum):
    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    CONFIGURATION = 3
    """Configuration is invalid, or a provider's API key is missing."""
    PROVIDER = 4
    """A provider answered with an error, or could not be reached."""
    REFUSED = 5
    """A capability check or the router refused (e.g. a swap to a model that cannot read images)."""
    STORAGE = 6
    INTEGRITY = 7
    """A record does not verify: an event log's hash chain, payload hashes or schemas are broken."""
    CANCELLED = 130
    """Ctrl-C (128 + SIGINT), as shells report it."""


def _is_routing_refusal(error: BaseException) -> bool:
    """A NoRoutableModelError, without importing the router: unless it is loaded, none was raised
    (listing commands never load it, and stay quick)."""
    engine = sys.modules.get("metis_core.routing.engine")
    return engine is not None and isinstance(error, engine.NoRoutableModelError)


def exit_code_for(error: BaseException) -> ExitCode:
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.CANCELLED
    if isinstance(error, ServeAccessKeyMissingError):
        return ExitCode.CONFIGURATION  # an open bind needs an access key issued first
    if isinstance(error, UsageProblem | UnknownModelError | ModelIdError | AliasCycleError | ToolModuleError
                  | OutputSchemaError | GatewayKeyError | FeedbackTargetError | ReplayError | ExportError
                  | ServeError):
        return ExitCode.USAGE
    if isinstance(error, ConfigError | RoutingPolicyError | NoModelForTierError | UnsupportedProviderError):
        return ExitCode.CONFIGURATION
    if isinstance(error, ProviderError | AllModelsFailedError | OutputValidationError | JudgeCallFailedError):
        return ExitCode.PROVIDER
    if isinstance(error, CapabilityMismatchError | OutputRefusedError) or _is_routing_refusal(error):
        return ExitCode.REFUSED
    if isinstance(error, EventLogIntegrityError | TraceIntegrityError):
        return ExitCode.INTEGRITY
    if isinstance(error, StoreError | SchemaMigrationError):
        return ExitCode.STORAGE
    return ExitCode.UNEXPECTED

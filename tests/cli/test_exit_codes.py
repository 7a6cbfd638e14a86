"""The exit code each kind of failure maps to (docs/cli.md), and the `@model` prefix grammar."""

from __future__ import annotations

import pytest

from metis_core.cli.exit_codes import ExitCode, UsageProblem, exit_code_for
from metis_core.cli.failures import clarify
from metis_core.cli.turn_execution import split_override
from metis_core.config import load_config
from metis_core.errors import (
    AllModelsFailedError,
    BackupError,
    CapabilityMismatchError,
    ConfigError,
    EventLogIntegrityError,
    InvalidRequestError,
    MetisError,
    MissingAPIKeyError,
    RateLimitError,
    SessionNotFoundError,
    UnknownModelError,
)
from metis_core.routing.engine import NoRoutableModelError, PolicyVerdict


@pytest.mark.parametrize(("error", "code"), [
    (UsageProblem("nothing after @x"), ExitCode.USAGE),
    (UnknownModelError("unknown model"), ExitCode.USAGE),
    (MissingAPIKeyError("anthropic", "ANTHROPIC_API_KEY"), ExitCode.CONFIGURATION),
    (ConfigError("bad yaml"), ExitCode.CONFIGURATION),
    (InvalidRequestError("bad", provider="openai", status=400), ExitCode.PROVIDER),
    (RateLimitError("slow down", provider="anthropic", status=429), ExitCode.PROVIDER),
    (AllModelsFailedError(["a:b"], [RuntimeError("x")]), ExitCode.PROVIDER),
    (CapabilityMismatchError("ollama:llama3", "supports_images", "images in history"), ExitCode.REFUSED),
    (NoRoutableModelError([]), ExitCode.REFUSED),
    (SessionNotFoundError("no session"), ExitCode.STORAGE),
    (BackupError("exists"), ExitCode.STORAGE),
    (EventLogIntegrityError("broken at line 4", line=4, sequence=3), ExitCode.INTEGRITY),
    (MetisError("something else"), ExitCode.UNEXPECTED),
    (RuntimeError("a bug"), ExitCode.UNEXPECTED),
    (KeyboardInterrupt(), ExitCode.CANCELLED),
])  # fmt: skip
def test_each_failure_has_its_documented_exit_code(error: BaseException, code: ExitCode) -> None:
    assert exit_code_for(error) == code


def test_a_routing_refusal_caused_only_by_missing_keys_becomes_a_missing_key_error() -> None:
    config = load_config()
    missing = PolicyVerdict("global_default", "rejected", "openai:gpt-4o", "no API key configured for openai",
                            validation_failure="not_configured")
    clarified = clarify(NoRoutableModelError([missing]), config)
    assert isinstance(clarified, MissingAPIKeyError) and clarified.env_var == "OPENAI_API_KEY"
    images = PolicyVerdict("manual_sticky", "rejected", "ollama:llama3", "cannot read images",
                           validation_failure="no_vision_support")
    mixed = NoRoutableModelError([images, missing])
    assert clarify(mixed, config) is mixed


@pytest.mark.parametrize(("typed", "expected"), [
    ("@gpt-4o explain this", ("gpt-4o", "explain this")),
    ("  @anthropic:claude-haiku-4-5   hi\nthere", ("anthropic:claude-haiku-4-5", "hi\nthere")),
    ("mail me@example.com", (None, "mail me@example.com")),
    ("plain text", (None, "plain text")),
])  # fmt: skip
def test_a_leading_at_model_is_split_off_the_message(typed: str, expected: tuple[str | None, str]) -> None:
    assert split_override(typed) == expected


def test_an_at_model_with_nothing_after_it_is_a_usage_problem() -> None:
    with pytest.raises(UsageProblem, match="nothing to send after @gpt-4o"):
        split_override("@gpt-4o   ")

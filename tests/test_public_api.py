"""The names the specs give are importable from metis_core itself, and importing it stays light."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import metis_core
from metis_core.adapters.registry import provider_keys

SPEC_NAMES = [
    "Message", "TextBlock", "ToolUseBlock", "ToolResultBlock", "ImageBlock", "ThinkingBlock",
    "RedactedThinkingBlock", "Usage", "ToolDefinition", "AdapterCapabilities", "StreamEvent", "Event",
    "EventBus", "EventFilter", "Subscription", "SubscriptionHandle", "Sensitivity", "Actor", "TraceStore",
    "SessionStore", "MessageMetadata", "RoutingDecisionRecord", "RoutingMode", "MessageStatus", "Role",
    "SideEffects", "get_adapter", "make_event", "AUDIT_EVENT_TYPES", "PAYLOAD_REGISTRY",
]


def test_spec_names_are_importable_from_the_package() -> None:
    for name in SPEC_NAMES:
        assert getattr(metis_core, name) is not None, name


def test_every_error_class_is_exported() -> None:
    import metis_core.errors

    for module in ("errors.py", "layer_errors.py"):  # the layers' errors are re-exported by errors.py too
        source = Path(metis_core.__file__).with_name(module).read_text()
        for name in re.findall(r"^class ([A-Za-z]+)", source, re.MULTILINE):
            assert getattr(metis_core, name).__name__ == name
            assert getattr(metis_core.errors, name) is getattr(metis_core, name)


def test_every_public_name_resolves() -> None:
    assert all(getattr(metis_core, name) is not None for name in metis_core.__all__)


def test_get_adapter_returns_each_providers_adapter() -> None:
    for provider in provider_keys():
        adapter = metis_core.get_adapter(provider)
        assert adapter.provider == provider


def test_import_pulls_in_no_http_stack_or_provider_code() -> None:
    code = ("import sys, metis_core; heavy = [m for m in ('httpx', 'pydantic', 'orjson', 'anthropic', 'openai') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""

"""Cold start stays lean: what a first call loads must not pay one-off costs it does not need.

These guard the import-time work measured in bench/ against quiet regressions, in a
fresh interpreter each: a model field whose default factory is a builtin makes pydantic parse the
builtin's text signature, which compiles the tokenizer's regular expressions (~1.7 ms per process).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from metis_core.events.envelope import Actor, Event
from metis_core.messages import (
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ToolResultBlock,
)

FIRST_CALL_PATH = """
import sys, tokenize
import metis_core.adapters.client, metis_core.adapters.anthropic.adapter, metis_core.adapters.openai_chat.adapter
from metis_core.config import load_config
from metis_core.models.pricing import default_price_table
from metis_core.models.registry import default_registry
load_config(); default_registry(); default_price_table()
compile_cache = getattr(tokenize, "_compile", None)
print(-1 if compile_cache is None else compile_cache.cache_info().currsize)
"""


def test_the_first_call_path_builds_its_models_without_compiling_the_tokenizer(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", FIRST_CALL_PATH], capture_output=True, text=True, check=False,
                          env={"METIS_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-600:]
    compiled = int(done.stdout.strip().splitlines()[-1])
    if compiled < 0:
        pytest.skip("this Python's tokenize has no cached _compile to inspect")
    assert compiled == 0, (
        "something on the first-call path made pydantic read a builtin's signature (a model field with "
        "default_factory=list or dict?); use metis_core.field_defaults.empty_list / empty_dict"
    )


def test_list_and_dict_defaults_are_fresh_for_every_instance() -> None:
    partial = MessageMetadata(status=MessageStatus.PARTIAL)  # a COMPLETE message may not be empty
    first = Message(role=Role.ASSISTANT, metadata=partial)
    second = Message(role=Role.ASSISTANT, metadata=partial.model_copy())
    first.content.append(TextBlock(text="only mine"))
    assert second.content == []
    result = ToolResultBlock(tool_use_id="tu_1")
    result.content.append(TextBlock(text="x"))
    assert ToolResultBlock(tool_use_id="tu_2").content == []
    record = RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="a:b", reason="r")
    record.alternatives_considered.append("c:d")
    assert RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="a:b", reason="r").alternatives_considered == []
    event = Event(session_id="s", type="session.started", actor=Actor.SYSTEM)
    event.payload["k"] = 1
    assert Event(session_id="s", type="session.started", actor=Actor.SYSTEM).payload == {}


CALL_PATH_MODULES = """
import sys
import metis_core.adapters.client, metis_core.adapters.anthropic.adapter, metis_core.adapters.openai_chat.adapter
print(sorted(name for name in sys.modules if name.endswith("request_reader")))
"""


def test_a_call_path_loads_no_request_reader() -> None:
    # Readers turn wire requests back into canonical ones (proxies, imports); a call never needs them.
    done = subprocess.run([sys.executable, "-c", CALL_PATH_MODULES], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-600:]
    assert done.stdout.strip() == "[]"


FIRST_CALL = """
import json, sys
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.client import ModelClient
from metis_core.messages import user_message
client = ModelClient(base_urls={"anthropic": URL}, api_keys={"anthropic": "sk-test-not-a-key"})
options = AdapterOptions(model="anthropic:claude-sonnet-4-5", max_tokens=64)
answer = client.complete([user_message("Say hello.")], options=options)
from metis_core.config import DefaultsConfig, MetisConfig, ProviderConfig, SessionsConfig
from metis_core.models.registry import ModelInfo, ModelRegistry
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.messages import Message, MessageMetadata, RoutingDecisionRecord, TextBlock, Usage
deferred = [MetisConfig, ProviderConfig, DefaultsConfig, SessionsConfig, ModelInfo, AdapterCapabilities, Message,
            MessageMetadata, RoutingDecisionRecord, TextBlock, Usage]
print(json.dumps({"text": answer.text(), "priced": str(answer.metadata.usage.cost_usd),
                  "price_tables": len(client.prices._tables),
                  "registries": sum(isinstance(o, ModelRegistry) for o in __import__("gc").get_objects()),
                  "modules": sorted(sys.modules), "built": [m.__name__ for m in deferred if m.__pydantic_complete__]}))
"""
NOT_FOR_A_CALL = ("yaml", "difflib", "metis_core.agent_config", "metis_core.models.price_schema",
                  "metis_core.models.registry_schema", "metis_core.provider_dsn", "metis_core.agent",
                  "metis_core.store", "metis_core.trace", "metis_core.cassettes", "metis_core.structured",
                  "metis_core.routing", "metis_core.cli", "metis_core.gateway", "metis_core.learning", "rfc8785",
                  "metis_core.layer_errors", "metis_core.messages.schema_changes", "metis_core.adapters.client_streams",
                  "metis_core.adapters.stream_gate", "metis_core.adapters.whole_answer_stream",
                  "metis_core.adapters.anthropic.stream", "metis_core.adapters.anthropic.errors",
                  "metis_core.adapters.stream_response", "metis_core.transport.framing",
                  "metis_core.transport.stream_bodies", "metis_core.messages.tools",
                  "metis_core.adapters.openai_chat.errors", "asyncio", "concurrent.futures",
                  "metis_core.messages.migrations", "metis_core.messages.stop_reason", "metis_core.messages.stream",
                  "metis_core.adapters._common.assembler", "metis_core.adapters.openai_chat.stream")
"""Modules a first model call (no config.yaml) has no use for: each was once on its path or is one import away.
(rich and importlib.resources' readers are loaded by httpx and certifi, as on the floor's call.)"""


def test_a_first_call_loads_only_what_it_uses_and_builds_no_schema_it_does_not_validate(tmp_path: Path) -> None:
    # With no config.yaml and the bundled data in its checked prepared form, nothing is validated but the
    # call itself: config, registry, capability, price and message models stay unbuilt (defer_build; the message,
    # its answer and the model's capabilities are made from checked parts), so a call builds no pydantic schema
    # (the first costs ~3 MB of RSS), and YAML is never imported.
    repo_root = str(Path(__file__).resolve().parent.parent)
    if repo_root not in sys.path:  # `bench` is a top-level folder of the repository (as in tests/bench)
        sys.path.insert(0, repo_root)
    from bench.scenarios import call_answer
    from bench.server import serve_in_thread

    env = {"METIS_HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    with serve_in_thread() as url:
        runs = []
        for _ in range(2):  # the first run may parse and check the bundled YAML and store its prepared form
            done = subprocess.run([sys.executable, "-c", FIRST_CALL.replace("URL", repr(url))], capture_output=True,
                                  text=True, check=False, env=env, timeout=120)
            assert done.returncode == 0, done.stderr[-800:]
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    second = runs[1]
    assert second["text"] == call_answer().text and second["priced"] not in ("None", "")
    assert second["price_tables"] == 1  # today's version of the price table, not every version's
    assert second["registries"] == 1  # the price table folds ids through the client's registry, not a second one
    loaded = [m for m in second["modules"] if any(m == name or m.startswith(name + ".") for name in NOT_FOR_A_CALL)]
    assert loaded == []
    assert second["built"] == []


IMPORT_COMPILES = """
import re
import httpx, orjson, pydantic
class Answer(pydantic.BaseModel):  # what pydantic compiles for any model (bench/coldstart.py's reference) is not ours
    text: str
before = set(re._cache)
import metis_core.adapters.client, metis_core.adapters.anthropic.adapter, metis_core.adapters.openai_chat.adapter
print(sorted(str(key[1]) for key in re._cache if key not in before))
"""


def test_the_call_path_compiles_no_regular_expression_at_import() -> None:
    # Patterns a call may use (Claude model keys, Anthropic tool-id rules) go through re's own cache when first
    # matched: module-level re.compile costs every process ~0.1 ms a pattern, used or not.
    done = subprocess.run([sys.executable, "-c", IMPORT_COMPILES], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-600:]
    assert done.stdout.strip() == "[]"


CALL_PATH_CLASSES = """
import dataclasses, enum, json, sys
import pydantic
import metis_core.adapters.client, metis_core.adapters.anthropic.adapter, metis_core.adapters.openai_chat.adapter
kinds = {"dataclass": dataclasses.is_dataclass, "model": lambda c: issubclass(c, pydantic.BaseModel),
         "enum": lambda c: issubclass(c, enum.Enum)}
print(json.dumps({kind: sorted(name for module in list(sys.modules.values()) if module.__name__.startswith("metis_core")
                               for name, value in vars(module).items() if isinstance(value, type)
                               and value.__module__ == module.__name__ and test(value))
                  for kind, test in kinds.items()}))
"""
CALL_PATH_DATACLASSES = ["AdapterOptions", "RequestContext", "RetryPolicy", "WireRequest", "WireResponse"]
"""Stream events (messages/stream.py) and the assembler load with the first stream: an answer body is read
directly into canonical blocks."""
CALL_PATH_MODELS = ["AdapterCapabilities", "BlockOrigin", "Citation", "CompactionBlock", "ExtraCallUsage", "ImageBlock",
                    "ImageSource", "Message", "MessageMetadata", "ProviderToolCallBlock", "ProviderToolResultBlock",
                    "RedactedThinkingBlock", "RoutingDecisionRecord", "TextBlock", "ThinkingBlock", "ToolResultBlock",
                    "ToolUseBlock", "Usage", "UsageDetails"]
CALL_PATH_ENUMS = ["ErrorClass", "MessageStatus", "Role", "RoutingMode"]
"""A message keeps its stop reason as a plain string: StopReason (messages/stop_reason.py) is for readers."""


def test_the_call_path_builds_only_the_classes_listed_here() -> None:
    # Each class costs every process at import (bench/: ~2.4M instructions a 5-field dataclass, ~1.4M a deferred
    # pydantic model plus its fields, ~0.9M a 5-member enum): one that only streams, errors or tools use
    # (WireChunk, ToolDefinition, DroppedBlock as a dataclass) belongs off this path; a new one here is a choice.
    done = subprocess.run([sys.executable, "-c", CALL_PATH_CLASSES], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-600:]
    built = json.loads(done.stdout.strip().splitlines()[-1])
    assert built == {"dataclass": CALL_PATH_DATACLASSES, "model": CALL_PATH_MODELS, "enum": CALL_PATH_ENUMS}


def test_a_dropped_block_is_an_immutable_value() -> None:
    from metis_core.adapters._common.lossy import DroppedBlock

    drop = DroppedBlock("s1", "m1", 2, "image", "openai/chat_completions", "no images")
    assert drop == DroppedBlock("s1", "m1", 2, "image", "openai/chat_completions", "no images")
    assert drop != DroppedBlock("s1", "m1", 3, "image", "openai/chat_completions", "no images")
    assert len({drop, DroppedBlock("s1", "m1", 2, "image", "openai/chat_completions", "no images")}) == 1
    assert (drop.block_index, drop.block_type, drop.reason) == (2, "image", "no images")
    with pytest.raises(AttributeError, match="immutable"):
        drop.reason = "other"


def test_a_request_context_equals_only_itself() -> None:
    # One call's own state (id map, start time, the coming message's id): no field-by-field __eq__ is built for it.
    import copy

    from metis_core.adapters.base import RequestContext

    context = RequestContext("anthropic:claude-sonnet-4-5")
    assert context == context
    assert copy.copy(context) != context

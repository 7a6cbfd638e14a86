"""Cold start stays lean: what a first call loads must not pay one-off costs it does not need.

These guard the import-time work measured in bench/ (issue 9) against quiet regressions, in a
fresh interpreter each: a model field whose default factory is a builtin makes pydantic parse the
builtin's text signature, which compiles the tokenizer's regular expressions (~1.7 ms per process).
"""

from __future__ import annotations

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

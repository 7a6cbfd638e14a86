"""Named providers from METIS_PROVIDER_<NAME> DSNs: parsing, laziness, secrecy, and two OpenAI-compatible
servers on 127.0.0.1 side by side through ModelClient, each with its own key, tool ids and errors."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cli.replay_server import OPENAI, ReplayServer, Reply

from metis_core import ModelClient, ToolIdMap, load_config, tool_result_message, user_message
from metis_core.config import MetisConfig
from metis_core.errors import (
    AuthenticationError,
    ConfigError,
    MissingAPIKeyError,
    NetworkError,
    UnknownModelError,
)
from metis_core.messages import Message
from metis_core.models.registry import ModelRegistry
from metis_core.provider_dsn import NamedProvider
from metis_core.transport.retry import RetryPolicy

KEY_A, KEY_B = "sk-dsn-A-LEAKCHECK-0a1b", "sk-dsn-B-LEAKCHECK-9f8e"


def config_with(**dsns: str) -> MetisConfig:
    return load_config(environ={f"METIS_PROVIDER_{name.upper()}": value for name, value in dsns.items()})


@pytest.mark.parametrize(("dsn", "kind", "url", "key"), [
    ("openai_compatible://k1@127.0.0.1:8001/v1", "openai_compatible", "http://127.0.0.1:8001/v1", "k1"),
    ("openai://sk%2Fwith%40chars@api.example.com/v1/", "openai", "https://api.example.com/v1", "sk/with@chars"),
    ("anthropic://k@gateway.internal:8443", "anthropic", "https://gateway.internal:8443", "k"),
    ("ollama://localhost:11434", "ollama", "http://localhost:11434", None),
    ("ollama+https://box.lan", "ollama", "https://box.lan", None),
    ("openai_compatible+http://k@10.0.0.5:8000/v1", "openai_compatible", "http://10.0.0.5:8000/v1", "k"),
    ("gemini://k@[::1]:9000", "gemini", "http://[::1]:9000", "k"),
])  # fmt: skip
def test_a_dsn_names_kind_endpoint_and_key(dsn: str, kind: str, url: str, key: str | None) -> None:
    named = config_with(work=dsn).named_provider("work")
    assert named is not None and (named.name, named.kind, named.base_url) == ("work", kind, url)
    assert (named.api_key.get_secret_value() if named.api_key else None) == key


@pytest.mark.parametrize(("name", "dsn", "problem"), [
    ("work", "sk-LEAKCHECK-secret", "not a DSN"),
    ("work", "mistral://sk-LEAKCHECK@h", "unknown provider kind 'mistral'"),
    ("work", "openai+ftp://sk-LEAKCHECK@h", "unknown transport"),
    ("work", "openai://sk-LEAKCHECK@", "host is missing"),
    ("work", "openai://sk-LEAKCHECK@h:99999", "port must be a number"),
    ("openai", "openai://sk-LEAKCHECK@h", "is a built-in provider"),
])  # fmt: skip
def test_a_bad_dsn_is_a_config_error_naming_the_variable_never_the_value(name: str, dsn: str, problem: str) -> None:
    config = config_with(**{name: dsn})
    with pytest.raises(ConfigError) as info:
        if name == "openai":
            config.named_providers()
        else:
            config.named_provider(name)
    message = str(info.value)
    assert f"METIS_PROVIDER_{name.upper()}" in message and problem in message and "LEAKCHECK" not in message


def test_dsns_are_read_lazily_by_name_and_all_at_once_on_request() -> None:
    config = config_with(good="openai_compatible://127.0.0.1:1/v1", broken="nonsense")
    assert config.named_provider("good") is not None  # the broken one is not read until named
    assert config.named_provider("absent") is None and config.provider_kind("absent") == "absent"
    with pytest.raises(ConfigError, match="METIS_PROVIDER_BROKEN"):
        config.named_providers()


def test_the_key_never_shows_in_repr_str_logs_or_errors(caplog: pytest.LogCaptureFixture) -> None:
    config = config_with(work=f"anthropic://{KEY_A}@gw.example.com", nokey="anthropic://gw.example.com")
    named = config.named_provider("work")
    assert isinstance(named, NamedProvider)
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("metis_core.test").info("named %s %r key %s", named, config.named_providers(),
                                                  config.api_key("work"))
    for text in (repr(named), str(named), repr(config), caplog.text, repr(config.api_key("work"))):
        assert KEY_A not in text
    assert config.require_api_key("work") is not None
    with pytest.raises(MissingAPIKeyError, match="METIS_PROVIDER_NOKEY"):
        config.require_api_key("nokey")


def test_a_named_provider_serves_its_kinds_models_in_the_registry() -> None:
    config = config_with(work="openai://k@api.example.com/v1", box="openai_compatible://127.0.0.1:1/v1")
    registry = ModelRegistry.load(config)
    assert registry.get("work:gpt-4o").catalog_id == "openai:gpt-4o"
    assert registry.capabilities("work:gpt-4o") == registry.capabilities("openai:gpt-4o")
    assert registry.get("box:anything-at-all").from_provider_defaults  # openai_compatible takes any name
    with pytest.raises(UnknownModelError):
        registry.get("work:no-such-model")
    with pytest.raises(UnknownModelError, match="unknown provider"):
        registry.get("nobody:gpt-4o")


@pytest.fixture
def servers() -> Iterator[tuple[ReplayServer, ReplayServer]]:
    a, b = ReplayServer().start(), ReplayServer().start()
    yield a, b
    a.stop()
    b.stop()


def two_server_client(servers: tuple[ReplayServer, ReplayServer], home: Path) -> ModelClient:
    a, b = servers
    environ = {"METIS_PROVIDER_LOCAL_A": f"openai_compatible://{KEY_A}@{a.base_url.removeprefix('http://')}/v1",
               "METIS_PROVIDER_LOCAL_B": f"openai_compatible://{KEY_B}@{b.base_url.removeprefix('http://')}/v1"}
    return ModelClient(config=load_config(home, environ=environ), prices=None)


def test_two_compatible_servers_side_by_side_each_get_their_own_key_and_report_their_name(
    servers: tuple[ReplayServer, ReplayServer], tmp_path: Path
) -> None:
    a, b = servers
    a.script(OPENAI, Reply.recording("openai_chat", "stream__tool_call_single.sse"),
             Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    b.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    client = two_server_client(servers, tmp_path)
    ids = ToolIdMap()
    history: list[Message] = [user_message("weather in NYC?", session_id="sess_dsn")]
    called = [e for e in client.stream(history, "local_a:llama-3", tool_ids=ids, session_id="sess_dsn")][-1]
    answer = called.message  # type: ignore[union-attr]
    assert answer.metadata.provider == "local_a" and answer.metadata.model == "local_a:llama-3"
    use = answer.tool_uses()[0]
    assert ids.provider_id("local_a", use.id) == "call_4XzlGBLtUe9dy3GVNV4jhq7h"
    result = tool_result_message(use.id, "72F", session_id="sess_dsn")
    history += [answer, result]

    last_b = list(client.stream(history, "local_b:qwen", tool_ids=ids, session_id="sess_dsn"))[-1]
    last_a = list(client.stream(history, "local_a:llama-3", tool_ids=ids, session_id="sess_dsn"))[-1]
    assert last_b.message.metadata.provider == "local_b"  # type: ignore[union-attr]
    assert last_a.message.metadata.provider == "local_a"  # type: ignore[union-attr]

    (first_a, again_a), (first_b,) = a.requests, b.requests
    assert first_a.headers["authorization"] == again_a.headers["authorization"] == f"Bearer {KEY_A}"
    assert first_b.headers["authorization"] == f"Bearer {KEY_B}"
    assert (first_a.body["model"], first_b.body["model"]) == ("llama-3", "qwen")
    # The call A issued goes back to A under A's own id; B, another server, gets a derived one.
    call_id_on = {name: r.body["messages"][1]["tool_calls"][0]["id"] for name, r in (("a", again_a), ("b", first_b))}
    assert call_id_on["a"] == "call_4XzlGBLtUe9dy3GVNV4jhq7h" != call_id_on["b"]
    assert first_b.body["messages"][2]["tool_call_id"] == call_id_on["b"]
    assert client.adapter("local_a").provider == "local_a" and client.adapter("local_b").provider == "local_b"
    assert KEY_A not in repr(client) and KEY_B not in repr(client)


def test_an_error_from_a_named_server_names_that_server_and_not_its_key(
    servers: tuple[ReplayServer, ReplayServer], tmp_path: Path
) -> None:
    a, _ = servers
    a.script(OPENAI, Reply.recording("openai_chat", "error__401_invalid_api_key.json", status=401))
    client = two_server_client(servers, tmp_path)
    with pytest.raises(AuthenticationError) as info:
        client.complete([user_message("hi", session_id="s")], "local_a:llama-3")
    assert info.value.provider == "local_a"
    assert KEY_A not in str(info.value)


def test_an_unreachable_named_server_is_a_network_error_for_that_name(tmp_path: Path) -> None:
    environ = {"METIS_PROVIDER_GONE": "openai_compatible://127.0.0.1:9/v1"}
    client = ModelClient(config=load_config(tmp_path, environ=environ), prices=None,
                         http_client=httpx.Client(timeout=1), retry=RetryPolicy(max_retries=0))
    with pytest.raises(NetworkError) as info:
        client.complete([user_message("hi", session_id="s")], "gone:m")
    assert info.value.provider == "gone"


def test_a_named_ollama_server_replays_its_own_thinking_and_not_another_servers() -> None:
    from session_samples import assistant

    from metis_core.adapters.base import AdapterOptions
    from metis_core.adapters.ollama.request import API
    from metis_core.adapters.registry import named_adapter_class
    from metis_core.messages import BlockOrigin, TextBlock, ThinkingBlock

    config = config_with(box="ollama://127.0.0.1:11434", other="ollama://127.0.0.1:11435")
    registry = ModelRegistry.load(config)
    thought = ThinkingBlock(text="let me think", origin=BlockOrigin(provider="box", api=API, model="qwen3"))
    history = [user_message("hi", session_id="s"),
               assistant("s", [thought, TextBlock(text="hello")], provider="box"),
               user_message("again", session_id="s")]
    for name, replayed in (("box", True), ("other", False)):
        adapter = named_adapter_class("ollama", name)(registry)
        assert adapter.provider == name
        body = adapter.to_wire(history, [], AdapterOptions(model=f"{name}:qwen3")).body
        assert ("thinking" in body["messages"][1]) is replayed, name

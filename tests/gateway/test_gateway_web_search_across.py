"""An OpenAI client's web search on Claude: its settings carried where they mean something, the rest
named in a WARN line, and Claude's citations back as the OpenAI shapes' `url_citation` annotations.

The upstream serves recorded Anthropic web-search traffic (a body with citations, and pydantic-ai's
live streamed search); the official `openai` SDK is the client, Chat Completions and Responses,
streamed and not. Each annotation must span exactly the text Claude's citation supports.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import openai
import pytest
from adapters.hosted.wire_oracle import anthropic_message
from cli.replay_server import ANTHROPIC, OPENAI, Reply
from fixture_files import read_bytes
from pydantic import SecretStr

from metis_core.adapters.gemini.hosted import hosted_tool_definitions

from .gateway_harness import GatewayHarness

MODEL = "anthropic:claude-haiku-4-5"
BODY = json.loads(read_bytes("anthropic", "response__hosted_web_search_citations.json"))
LIVE = read_bytes("anthropic", "stream__hosted_web_search_live.sse")
WHERE = {"city": "San Francisco", "region": "California", "country": "US", "timezone": "America/Los_Angeles"}
CLAUDE_TOOL = {"type": "web_search_20250305", "name": "web_search", "user_location": {"type": "approximate", **WHERE}}


def client_of(gateway: GatewayHarness) -> openai.OpenAI:
    _, token = gateway.issue()
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)


def expected_annotations(content: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(url, title, the cited block's text) of every citation in Claude's answer, in order."""
    return [(c["url"], c.get("title") or "", block["text"]) for block in content if block["type"] == "text"
            for c in block.get("citations") or () if c.get("url")]


def read_back(text: str, annotations: list[Any]) -> list[tuple[str, str, str]]:
    """What each url_citation annotation points at in `text`."""
    out = []
    for a in annotations:
        cite = a.url_citation if hasattr(a, "url_citation") else a
        out.append((cite.url, cite.title, text[cite.start_index:cite.end_index]))
    return out


def not_carried(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "was not carried" in r.getMessage()]


def test_chat_web_search_options_reach_claude_as_its_tool_with_the_location(
        gateway: GatewayHarness, caplog: pytest.LogCaptureFixture) -> None:
    gateway.upstream.script(ANTHROPIC, Reply(200, json.dumps(BODY).encode(), "application/json"))
    caplog.set_level(logging.INFO, logger="metis_core.gateway")
    answer = client_of(gateway).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What happened in the news today?"}],
        web_search_options={"search_context_size": "high",
                            "user_location": {"type": "approximate", "approximate": WHERE}})  # type: ignore[typeddict-item]
    [sent] = gateway.upstream.bodies(ANTHROPIC)
    assert sent["tools"] == [CLAUDE_TOOL]
    assert "web_search_options" not in sent
    [warning] = not_carried(caplog)
    assert "search_context_size" in warning
    message = answer.choices[0].message
    assert message.content == "".join(b["text"] for b in BODY["content"] if b["type"] == "text")
    assert message.annotations and all(a.type == "url_citation" for a in message.annotations)
    assert read_back(message.content, message.annotations) == expected_annotations(BODY["content"])


def test_a_streamed_chat_answer_from_claude_search_carries_its_annotations(gateway: GatewayHarness) -> None:
    gateway.upstream.script(ANTHROPIC, Reply(200, LIVE, "text/event-stream"))
    with client_of(gateway).chat.completions.stream(
            model=MODEL, messages=[{"role": "user", "content": "news?"}], web_search_options={}) as stream:
        final = stream.get_final_completion()
    assert gateway.upstream.bodies(ANTHROPIC)[0]["tools"] == [{"type": "web_search_20250305", "name": "web_search"}]
    recorded = anthropic_message(LIVE)["content"]
    message = final.choices[0].message
    assert message.content == "".join(b["text"] for b in recorded if b["type"] == "text")
    assert message.annotations
    assert read_back(message.content, message.annotations) == expected_annotations(recorded)


def test_a_responses_web_search_tool_reaches_claude_with_location_and_domains(
        gateway: GatewayHarness, caplog: pytest.LogCaptureFixture) -> None:
    gateway.upstream.script(ANTHROPIC, Reply(200, json.dumps(BODY).encode(), "application/json"))
    caplog.set_level(logging.INFO, logger="metis_core.gateway")
    tool = {"type": "web_search", "search_context_size": "low", "user_location": {"type": "approximate", **WHERE},
            "filters": {"allowed_domains": ["npr.org", "abcnews.go.com"]}}
    response = client_of(gateway).responses.create(model=MODEL, input="news?", tools=[tool])  # type: ignore[list-item]
    [sent] = gateway.upstream.bodies(ANTHROPIC)
    assert sent["tools"] == [{**CLAUDE_TOOL, "allowed_domains": ["npr.org", "abcnews.go.com"]}]
    assert ["search_context_size" in w for w in not_carried(caplog)] == [True]
    found = []
    for item in response.output:
        for part in item.content:  # type: ignore[union-attr]
            found += read_back(part.text, part.annotations)  # type: ignore[union-attr]
    assert found == expected_annotations(BODY["content"])


def test_a_streamed_responses_answer_adds_each_annotation_as_an_event(gateway: GatewayHarness) -> None:
    gateway.upstream.script(ANTHROPIC, Reply(200, LIVE, "text/event-stream"))
    with client_of(gateway).responses.stream(model=MODEL, input="news?",
                                              tools=[{"type": "web_search_preview"}]) as stream:
        added = [e.annotation for e in stream if e.type == "response.output_text.annotation.added"]
        final = stream.get_final_response()
    recorded = anthropic_message(LIVE)["content"]
    text = final.output_text
    assert text == "".join(b["text"] for b in recorded if b["type"] == "text")
    [item] = final.output
    annotations = item.content[0].annotations  # type: ignore[union-attr]
    assert read_back(text, annotations) == expected_annotations(recorded)
    assert [a.url for a in added] == [a.url for a in annotations]  # type: ignore[union-attr]


def test_gemini_takes_the_search_without_settings_it_has_no_field_for(caplog: pytest.LogCaptureFixture) -> None:
    """Google Search grounding is asked as `googleSearch`; Claude's location and domains are named, not sent."""
    caplog.set_level(logging.WARNING, logger="metis_core.adapters.gemini")
    tools = hosted_tool_definitions({"web_search": {"user_location": {"type": "approximate", **WHERE},
                                                    "allowed_domains": ["npr.org"]}}, "gemini:gemini-2.5-flash")
    assert tools == [{"googleSearch": {}}]
    [warning] = [r.getMessage() for r in caplog.records]
    assert "allowed_domains" in warning and "user_location" in warning


GEMINI_MODEL = "gemini:gemini-2.5-pro"
GEMINI_STREAM = read_bytes("gemini", "stream__hosted_google_search_grounding.sse")


def with_gemini(gateway: GatewayHarness) -> None:
    """The harness's upstream also answers as Gemini (before the first call)."""
    client = gateway.runtime.client
    client._base_urls["gemini"] = gateway.upstream.base_url
    client._api_keys["gemini"] = SecretStr("gemini-upstream-SECRET-0004")
    assert gateway.runtime.configured_providers is not None
    gateway.runtime.configured_providers.add("gemini")


def test_an_openai_web_search_on_gemini_is_google_search_grounding_with_annotations(
        gateway: GatewayHarness, caplog: pytest.LogCaptureFixture) -> None:
    with_gemini(gateway)
    path = f"/v1beta/models/{GEMINI_MODEL.partition(':')[2]}:streamGenerateContent?alt=sse"
    gateway.upstream.script(path, Reply(200, GEMINI_STREAM, "text/event-stream"))
    caplog.set_level(logging.INFO)
    with client_of(gateway).chat.completions.stream(
            model=GEMINI_MODEL, messages=[{"role": "user", "content": "What is the weather in San Francisco today?"}],
            web_search_options={"user_location": {"type": "approximate", "approximate": WHERE}}) as stream:
        final = stream.get_final_completion()
    [sent] = gateway.upstream.bodies(path)
    assert sent["tools"] == [{"googleSearch": {}}]
    assert any("user_location" in r.getMessage() for r in caplog.records
               if r.levelno == logging.WARNING and r.name == "metis_core.adapters.gemini")
    message = final.choices[0].message
    assert message.content and message.annotations
    chunks = [json.loads(line[6:]) for line in GEMINI_STREAM.decode().splitlines() if line.startswith("data: ")]
    sources = {c["web"]["uri"] for chunk in chunks for cand in chunk.get("candidates", ())
               for c in (cand.get("groundingMetadata") or {}).get("groundingChunks", ())}
    assert {a.url_citation.url for a in message.annotations} <= sources
    assert all(0 <= a.url_citation.start_index < a.url_citation.end_index <= len(message.content)
               for a in message.annotations)


def test_openai_own_web_search_keeps_its_exact_annotations(gateway: GatewayHarness) -> None:
    """Within OpenAI's API the ask goes as sent, and the answer's url_citations come back with their own spans
    (they used to be left out): a recorded gpt-5-mini web search through a Responses client, and a Chat client."""
    recorded = json.loads(read_bytes("openai_responses", "response__hosted_web_search_call.json"))
    [part] = [p for item in recorded["output"] if item["type"] == "message" for p in item["content"]]
    path = "/v1/responses"
    gateway.upstream.script(path, *[Reply(200, json.dumps(recorded).encode(), "application/json")] * 2)
    client = client_of(gateway)
    response = client.responses.create(model="openai_responses:gpt-5-mini", input="tech news?",
                                       tools=[{"type": "web_search"}])
    assert gateway.upstream.bodies(path)[0]["tools"] == [{"type": "web_search"}]
    [item] = [i for i in response.output if i.type == "message"]
    assert [a.to_dict() for a in item.content[0].annotations] == part["annotations"]  # type: ignore[union-attr]
    assert item.content[0].text == part["text"]  # type: ignore[union-attr]
    chat = client.chat.completions.create(model="openai_responses:gpt-5-mini",
                                          messages=[{"role": "user", "content": "tech news?"}])
    message = chat.choices[0].message
    assert read_back(message.content or "", message.annotations or []) == [
        (a["url"], a["title"], part["text"][a["start_index"]:a["end_index"]]) for a in part["annotations"]]


def test_a_responses_answer_is_one_message_item_streamed_or_not(gateway: GatewayHarness) -> None:
    """Claude's many text blocks (each cited fragment its own) are one message item with one output_text,
    annotations spanning each fragment, whether the client streams or not (as OpenAI answers)."""
    gateway.upstream.script(ANTHROPIC, Reply(200, json.dumps(BODY).encode(), "application/json"))
    whole = client_of(gateway).responses.create(model=MODEL, input="news?", tools=[{"type": "web_search_preview"}])
    texts = [b["text"] for b in BODY["content"] if b["type"] == "text"]
    assert len(texts) > 1
    [item] = whole.output
    [part] = item.content  # type: ignore[union-attr]
    assert part.text == whole.output_text == "".join(texts)  # type: ignore[union-attr]
    assert read_back(part.text, part.annotations) == expected_annotations(BODY["content"])  # type: ignore[union-attr]


SEARCH_CHAT = "response__web_search_annotations.json"


def test_an_openai_search_models_annotations_reach_openai_clients_with_their_own_spans(
        gateway: GatewayHarness) -> None:
    """gpt-4o-search-preview's recorded answer, through the gateway to the Chat and the Responses shape:
    the same url_citations, each spanning the very characters OpenAI's did."""
    recorded = json.loads(read_bytes("openai_chat", SEARCH_CHAT))["choices"][0]["message"]
    expected = [(a["url_citation"]["url"], a["url_citation"]["title"],
                 recorded["content"][a["url_citation"]["start_index"]:a["url_citation"]["end_index"]])
                for a in recorded["annotations"]]
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", SEARCH_CHAT), Reply.recording("openai_chat",
                                                                                                 SEARCH_CHAT))
    client = client_of(gateway)
    chat = client.chat.completions.create(model="openai:gpt-4o", messages=[{"role": "user", "content": "news?"}])
    message = chat.choices[0].message
    assert message.content == recorded["content"]
    assert read_back(message.content, message.annotations or []) == expected
    response = client.responses.create(model="openai:gpt-4o", input="news?")
    [item] = response.output
    [part] = item.content  # type: ignore[union-attr]
    assert read_back(part.text, part.annotations) == expected  # type: ignore[union-attr]

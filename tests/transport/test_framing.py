"""SSE and NDJSON framing over real recorded bodies, fed whole and split at every byte."""

from __future__ import annotations

import pytest
from fixture_files import read_bytes

from metis_core.transport.framing import NDJSONDecoder, SSEDecoder, WireChunk, decode_all


def feed_bytewise(body: bytes, decoder: SSEDecoder | NDJSONDecoder) -> list[WireChunk]:
    out: list[WireChunk] = []
    for i in range(len(body)):
        out += decoder.feed(body[i : i + 1])
    return out + decoder.finish()


@pytest.mark.parametrize(
    ("provider", "name"),
    [
        ("anthropic", "stream__tool_use_with_whitespace_padding.sse"),
        ("gemini", "stream__text.sse"),
        ("openrouter", "stream__reasoning_details_deltas.sse"),
        ("openai_responses", "stream__text.sse"),
    ],
)
def test_sse_framing_is_independent_of_how_bytes_are_split(provider: str, name: str) -> None:
    body = read_bytes(provider, name)
    whole = decode_all(body, "sse")
    assert whole and all(chunk.data for chunk in whole)
    assert feed_bytewise(body, SSEDecoder()) == whole


def test_gemini_crlf_events_are_separated() -> None:
    body = read_bytes("gemini", "stream__text.sse")
    assert b"\r\n\r\n" in body
    chunks = decode_all(body, "sse")
    assert all(c.data.startswith("{") and c.event is None for c in chunks)


def test_openrouter_comment_lines_are_skipped() -> None:
    body = read_bytes("openrouter", "stream__reasoning_details_deltas.sse")
    assert b": OPENROUTER PROCESSING" in body
    chunks = decode_all(body, "sse")
    assert not any("OPENROUTER PROCESSING" in c.data for c in chunks)
    assert chunks[-1].data == "[DONE]"


def test_sse_event_names_and_multiline_data() -> None:
    body = b"\xef\xbb\xbfevent: a\ndata: line1\ndata: line2\n\nid: 7\nretry: 10\ndata: {}\r\n\r\n"
    assert decode_all(body, "sse") == [WireChunk(data="line1\nline2", event="a"), WireChunk(data="{}")]


def test_sse_event_without_trailing_blank_line_is_flushed_at_finish() -> None:
    assert decode_all(b"data: tail", "sse") == [WireChunk(data="tail")]


def test_lf_crlf_and_lone_cr_endings_mix_and_split_anywhere() -> None:
    body = b"event: a\r\ndata: x\r\n\r\ndata: y\rdata: z\r\r: keep\ndata: w\n\n"
    expected = [WireChunk(data="x", event="a"), WireChunk(data="y\nz"), WireChunk(data="w")]
    assert decode_all(body, "sse") == expected
    assert feed_bytewise(body, SSEDecoder()) == expected


def test_multibyte_characters_split_across_chunks_survive() -> None:
    body = "data: {\"t\": \"✓ é\"}\n\n".encode()
    assert feed_bytewise(body, SSEDecoder()) == [WireChunk(data='{"t": "✓ é"}')]


def test_ndjson_lines_split_anywhere() -> None:
    body = read_bytes("ollama", "stream__generate.ndjson")
    whole = decode_all(body, "ndjson")
    assert len(whole) > 3 and all(c.data.startswith("{") for c in whole)
    assert feed_bytewise(body, NDJSONDecoder()) == whole


def test_a_bom_split_across_chunks_is_dropped_once() -> None:
    body = b"\xef\xbb\xbfdata: a\n\ndata: \xef\xbb\xbfb\n\n"
    expected = [WireChunk(data="a"), WireChunk(data="\ufeffb")]
    assert decode_all(body, "sse") == expected
    assert feed_bytewise(body, SSEDecoder()) == expected


def test_a_crlf_split_by_an_empty_chunk_and_a_body_ending_in_cr_frame_as_lf() -> None:
    decoder = SSEDecoder()
    out = decoder.feed(b"data: a\r") + decoder.feed(b"") + decoder.feed(b"\n\r\ndata: b\r")
    assert out + decoder.finish() == [WireChunk(data="a"), WireChunk(data="b")]

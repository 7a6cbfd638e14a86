"""The stream assembler: canonical events in order, and a final message that is never corrupt."""

from __future__ import annotations

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.base import RequestContext
from metis_core.messages import MessageComplete, MessageStatus, StreamError, ToolUseEnd, Usage


def make() -> MessageAssembler:
    return MessageAssembler(RequestContext(model="anthropic:claude-sonnet-4-6", session_id="s"), api="messages")


def test_blocks_keep_order_and_tool_input_surfaces_whole_at_the_end() -> None:
    asm = make()
    asm.thinking(0, "hmm")
    asm.thinking_signature(0, "sig")
    asm.text(1, "Hello ")
    asm.text(1, "world")
    start = asm.tool_start(2, "toolu_1", "read_file")
    asm.tool_input(2, '{"path": ')
    asm.tool_input(2, '"a.txt"}')
    end = asm.tool_end(2)
    asm.set_usage(Usage(input_tokens=3, output_tokens=5))
    events = asm.complete("tool_use")
    assert isinstance(end, ToolUseEnd) and end.input == {"path": "a.txt"} and end.id == start.id
    final = events[-1]
    assert isinstance(final, MessageComplete)
    message = final.message
    assert message.status is MessageStatus.COMPLETE
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    thinking = message.content[0]
    assert thinking.signature == "sig" and thinking.origin.model == "claude-sonnet-4-6"
    assert message.text() == "Hello world"
    assert message.metadata.stop_reason == "tool_use"


def test_tool_input_cut_off_at_max_tokens_gives_partial_never_complete() -> None:
    asm = make()
    asm.text(0, "writing")
    asm.tool_start(1, "toolu_1", "write_file")
    asm.tool_input(1, '{"path": "a.txt", "content": "unfinis')
    events = asm.complete("max_tokens")
    assert any(isinstance(e, StreamError) for e in events)
    final = events[-1]
    assert isinstance(final, MessageComplete)
    assert final.message.status is MessageStatus.PARTIAL
    assert [b.type for b in final.message.content] == ["text"]  # broken tool_use not kept


def test_stream_that_fails_keeps_what_arrived() -> None:
    asm = make()
    asm.text(0, "partial answer")
    events = asm.fail("network", "connection dropped", retryable=True)
    assert isinstance(events[0], StreamError) and events[0].retryable
    final = events[-1]
    assert isinstance(final, MessageComplete)
    assert final.message.status is MessageStatus.PARTIAL and final.message.text() == "partial answer"
    assert asm.complete("end_turn") == []  # a stream ends once


def test_stream_that_fails_before_any_content_is_an_error_message() -> None:
    events = make().fail("server_error", "overloaded")
    assert events[-1].message.status is MessageStatus.ERROR  # type: ignore[union-attr]


def test_a_tool_call_without_a_name_never_reaches_the_message() -> None:
    from metis_core.adapters._common.assembler import MessageAssembler
    from metis_core.adapters.base import RequestContext
    from metis_core.messages import MessageComplete

    assembler = MessageAssembler(RequestContext(model="openai:gpt-4.1"), api="chat_completions")
    assembler.tool_start(0, "call_1", "")
    assembler.tool_input(0, '{"q": 1}')
    assembler.tool_start(1, "call_2", "lookup")
    assembler.tool_input(1, "{}")
    final = assembler.complete("tool_use")[-1]
    assert isinstance(final, MessageComplete)
    assert [b.name for b in final.message.tool_uses()] == ["lookup"]
    assert final.message.metadata.provider_raw["nameless_tool_calls"] == 1

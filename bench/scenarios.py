"""What every benchmark sends and expects back: the conversation, the answers and the stream script.

The same 40-message tool conversation is built once per representation (canonical metis
Messages, OpenAI chat dicts, Anthropic dicts, Pydantic AI messages live with their peer), and the
expected answer (text, tool call, usage) is what every implementation's result is checked against.
Pure data and stdlib only: the local server imports this module, so it never imports metis_core.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MESSAGES = 40
CYCLES = 9
"""Each cycle: user asks, assistant answers with text + a tool call, tool result, assistant text."""
STREAM_EVENTS = 2_000
TOOL_FRAGMENTS = 200

ANTHROPIC_MODEL = "claude-sonnet-4-5"
OPENAI_MODEL = "gpt-4o"
GEMINI_MODEL = "gemini-2.5-flash"
OLLAMA_MODEL = "llama3.1"
OPENROUTER_MODEL = "openai/gpt-4o"
MAX_TOKENS = 1024

SYSTEM_PROMPT = "You are a careful coding assistant. Read files before you change them."


def tool_core(n: int) -> str:
    """A fixed 26-character ULID body, so provider ids (toolu_<core>, call_<core>) are deterministic."""
    return f"01JBENCH{n:018d}"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    schema: dict[str, Any]


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "read_file",
        "Read a UTF-8 text file from the workspace.",
        {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Workspace-relative path"}},
            "required": ["path"],
        },
    ),
    ToolSpec(
        "search",
        "Search the workspace for a regular expression.",
        {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression"},
                "max_results": {"type": "integer", "description": "Cap on matches returned"},
            },
            "required": ["pattern"],
        },
    ),
    ToolSpec(
        "write_file",
        "Write a UTF-8 text file in the workspace.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Workspace-relative path"},
                "content": {"type": "string", "description": "The whole new content"},
            },
            "required": ["path", "content"],
        },
    ),
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the conversation, independent of any library's types."""

    role: str  # system | user | assistant | tool
    text: str = ""
    tool_call: tuple[str, str, dict[str, Any]] | None = None  # (core id, name, arguments)
    tool_result: tuple[str, str, str] | None = None  # (core id, tool name, output)


def conversation() -> list[Turn]:
    """The 40-message tool conversation: system, 9 full cycles, then ask / call / result."""
    turns = [Turn("system", SYSTEM_PROMPT)]
    call = 0

    def cycle(i: int, *, closing_text: bool) -> None:
        nonlocal call
        call += 1
        name = TOOLS[i % len(TOOLS)].name
        args: dict[str, Any] = (
            {"path": f"src/module_{i}.py"}
            if name == "read_file"
            else {"pattern": f"def handler_{i}\\(", "max_results": 20}
            if name == "search"
            else {"path": f"src/module_{i}.py", "content": f"def handler_{i}():\n    return {i}\n"}
        )
        turns.append(Turn("user", f"Step {i}: please look at module {i} and tell me what handler_{i} does."))
        turns.append(Turn("assistant", f"I will use {name} for step {i}.", tool_call=(tool_core(call), name, args)))
        output = f"def handler_{i}():\n    return {i}\n" * 4
        turns.append(Turn("tool", tool_result=(tool_core(call), name, output)))
        if closing_text:
            turns.append(Turn("assistant", f"handler_{i} returns {i}; nothing else happens in module {i}."))

    for i in range(CYCLES):
        cycle(i, closing_text=True)
    cycle(CYCLES, closing_text=False)
    assert len(turns) == MESSAGES, len(turns)
    return turns


# --- expected answers -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """What a call must yield, whoever made it: the text, the one tool call and the token counts."""

    text: str
    tool_name: str
    tool_args: dict[str, Any]
    input_tokens: int
    output_tokens: int


def call_answer() -> Answer:
    """The answer every non-streaming call gets: a sentence and one write_file call."""
    return Answer(
        text="I read module 9; here is the change I propose.",
        tool_name="write_file",
        tool_args={"path": "src/module_9.py", "content": "def handler_9():\n    return 10\n"},
        input_tokens=1234,
        output_tokens=567,
    )


@dataclass(frozen=True, slots=True)
class StreamScript:
    """A long streamed answer: text fragments, then one tool call whose JSON arrives in pieces."""

    answer: Answer
    tool_fragments: tuple[str, ...]

    def text_fragments(self, count: int) -> list[str]:
        """The answer text cut into exactly `count` fragments (providers differ in framing events)."""
        text = self.answer.text
        step, extra = divmod(len(text), count)
        out, start = [], 0
        for i in range(count):
            end = start + step + (1 if i < extra else 0)
            out.append(text[start:end])
            start = end
        return out

    @property
    def tool_json(self) -> str:
        return "".join(self.tool_fragments)


def stream_script(text_chars: int = 9_000) -> StreamScript:
    """The streamed answer: ~9 kB of text, then write_file with ~1.6 kB of JSON in 200 pieces."""
    sentence = "The handler reads its configuration, validates it, and returns the parsed result. "
    text = (sentence * (text_chars // len(sentence) + 1))[:text_chars]
    body = "".join(f"def handler_{i}(value):\n    return value * {i}\n\n" for i in range(40))
    args = {"path": "src/handlers.py", "content": body}
    encoded = json.dumps(args, separators=(",", ":"))
    step, extra = divmod(len(encoded), TOOL_FRAGMENTS)
    fragments, start = [], 0
    for i in range(TOOL_FRAGMENTS):
        end = start + step + (1 if i < extra else 0)
        fragments.append(encoded[start:end])
        start = end
    answer = Answer(text=text, tool_name="write_file", tool_args=args, input_tokens=1234, output_tokens=2345)
    return StreamScript(answer=answer, tool_fragments=tuple(fragments))


# --- result checking --------------------------------------------------------------------------


class WrongAnswerError(AssertionError):
    """An implementation returned something other than the expected answer: its figure is void."""


def check_answer(who: str, expected: Answer, text: str, tool_name: str, tool_args: Any, usage: tuple[int, int]) -> None:
    """Raise WrongAnswerError naming the first field that differs."""
    if isinstance(tool_args, str):
        tool_args = json.loads(tool_args)
    got = {"text": text, "tool_name": tool_name, "tool_args": tool_args, "usage": usage}
    want = {
        "text": expected.text,
        "tool_name": expected.tool_name,
        "tool_args": expected.tool_args,
        "usage": (expected.input_tokens, expected.output_tokens),
    }
    for key, value in want.items():
        if got[key] != value:
            shown = repr(got[key])
            raise WrongAnswerError(f"{who}: wrong {key}: got {shown[:120]}, expected {repr(value)[:120]}")

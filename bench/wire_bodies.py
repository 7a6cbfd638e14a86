"""Non-streaming response bodies in each provider's exact wire format, built from an `Answer`.

Shapes follow the recorded traffic in shared/fixtures/wire (field names, nesting, id prefixes,
usage blocks); values come from the answer so every client's parse can be checked. Bodies only:
routing requests to them is the server's job, and stream bodies live in wire_streams.py.
"""

from __future__ import annotations

import json
from typing import Any

from bench.scenarios import ANTHROPIC_MODEL, GEMINI_MODEL, OLLAMA_MODEL, OPENAI_MODEL, Answer, tool_core

CREATED = 1_767_225_600
ANSWER_CALL = tool_core(999)


def _dump(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def anthropic_message(answer: Answer) -> bytes:
    return _dump({
        "model": f"{ANTHROPIC_MODEL}-20250929",
        "id": "msg_01BenchAnthropicMessage01",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "text", "text": answer.text},
            {
                "type": "tool_use",
                "id": f"toolu_{ANSWER_CALL}",
                "name": answer.tool_name,
                "input": answer.tool_args,
                "caller": {"type": "direct"},
            },
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": answer.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": answer.output_tokens,
            "service_tier": "standard",
        },
    })


def openai_usage(answer: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": answer.output_tokens,
        "total_tokens": answer.input_tokens + answer.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def openai_chat_completion(answer: Answer, model: str = OPENAI_MODEL) -> bytes:
    return _dump({
        "id": "chatcmpl-BenchOpenAIChatCompletion01",
        "object": "chat.completion",
        "created": CREATED,
        "model": f"{model}-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": answer.text,
                    "tool_calls": [
                        {
                            "id": f"call_{ANSWER_CALL}",
                            "type": "function",
                            "function": {"name": answer.tool_name, "arguments": json.dumps(answer.tool_args)},
                        }
                    ],
                    "refusal": None,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": openai_usage(answer),
        "service_tier": "default",
        "system_fingerprint": "fp_bench01",
    })


def responses_usage(answer: Answer) -> dict[str, Any]:
    return {
        "input_tokens": answer.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": answer.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": answer.input_tokens + answer.output_tokens,
    }


def responses_output(answer: Answer) -> list[dict[str, Any]]:
    return [
        {
            "id": "msg_bench0001",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": answer.text, "annotations": [], "logprobs": []}],
        },
        {
            "id": "fc_bench0001",
            "type": "function_call",
            "status": "completed",
            "arguments": json.dumps(answer.tool_args),
            "call_id": f"call_{ANSWER_CALL}",
            "name": answer.tool_name,
        },
    ]


def responses_object(answer: Answer, *, status: str = "completed", output: list[Any] | None = None) -> dict[str, Any]:
    return {
        "id": "resp_bench0001",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": f"{OPENAI_MODEL}-2024-08-06",
        "output": responses_output(answer) if output is None else output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": responses_usage(answer) if status == "completed" else None,
        "user": None,
        "metadata": {},
    }


def openai_response(answer: Answer) -> bytes:
    return _dump(responses_object(answer))


def gemini_usage(answer: Answer) -> dict[str, Any]:
    return {
        "promptTokenCount": answer.input_tokens,
        "candidatesTokenCount": answer.output_tokens,
        "totalTokenCount": answer.input_tokens + answer.output_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": answer.input_tokens}],
    }


def gemini_response(answer: Answer) -> bytes:
    return _dump({
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"text": answer.text},
                        {"functionCall": {"name": answer.tool_name, "args": answer.tool_args}},
                    ],
                    "role": "model",
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": gemini_usage(answer),
        "modelVersion": GEMINI_MODEL,
        "responseId": "BenchGeminiResponse01",
    })


def ollama_final_fields(answer: Answer) -> dict[str, Any]:
    return {
        "done_reason": "stop",
        "done": True,
        "total_duration": 182242375,
        "load_duration": 41295167,
        "prompt_eval_count": answer.input_tokens,
        "prompt_eval_duration": 24573166,
        "eval_count": answer.output_tokens,
        "eval_duration": 115959084,
    }


def ollama_chat(answer: Answer) -> bytes:
    return _dump({
        "model": OLLAMA_MODEL,
        "created_at": "2026-01-01T00:00:00.000000Z",
        "message": {
            "role": "assistant",
            "content": answer.text,
            "tool_calls": [{"function": {"name": answer.tool_name, "arguments": answer.tool_args}}],
        },
        **ollama_final_fields(answer),
    })

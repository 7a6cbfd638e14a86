"""OpenAI Chat Completions bodies generated in code: the chunk stream and the error object.

Framing follows the API with `stream_options.include_usage`: `data:` lines only, a role chunk,
content delta chunks, a finish chunk, a final chunk with `choices: []` and the usage, then
`data: [DONE]`. No fixture is read.
"""

from __future__ import annotations

import json
import time
from typing import Any

from metis_core.ids import new_ulid


def _data(payload: dict[str, Any] | str) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


def completion_stream(model: str, *, text: str, prompt_tokens: int) -> bytes:
    completion_id = "chatcmpl-" + new_ulid()[-24:]
    created = int(time.time())

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        return _data({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                      "system_fingerprint": "fp_demo0000", "choices": choices, **extra})

    parts = [chunk([{"index": 0, "delta": {"role": "assistant", "content": "", "refusal": None},
                     "logprobs": None, "finish_reason": None}])]
    for i, word in enumerate(text.split(" ")):
        piece = word if i == 0 else " " + word
        parts.append(chunk([{"index": 0, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}]))
    parts.append(chunk([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]))
    completion_tokens = max(1, len(text) // 4)
    parts.append(chunk([], usage={
        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    }))
    parts.append(_data("[DONE]"))
    return b"".join(parts)


def error_body(message: str, param: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": param,
                                 "code": None}}, indent=4).encode() + b"\n"

"""Exact input-token counts where a provider or a local tokenizer gives them; None elsewhere.

Anthropic's `/v1/messages/count_tokens` and Gemini's `:countTokens` count the request exactly as it
would be sent (free calls, no model run); for OpenAI models `tiktoken` counts locally when installed
(`pip install 'metis-core[tokens]'`; imported on first use). Callers fall back to the ~4-characters
heuristic (`_common/token_estimate.py`) when the answer is None. docs/context.md states its error.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import orjson

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.errors import MetisError
from metis_core.messages import Message, ToolDefinition
from metis_core.models.model_id import parse_model_id

if TYPE_CHECKING:
    from metis_core.adapters.client import ModelClient

log = logging.getLogger("metis_core.adapters.token_count")
_COUNTED_FIELDS = frozenset({"model", "messages", "system", "tools", "tool_choice", "thinking"})
"""What Anthropic's count_tokens takes of a Messages request (max_tokens, stream and sampling are refused)."""
_TIKTOKEN_PROVIDERS = frozenset({"openai", "openai_responses"})
_PER_MESSAGE = 3
_REPLY_PRIMER = 3
"""OpenAI chat framing: tokens around each message, and the ones priming the reply (OpenAI cookbook)."""


async def count_input_tokens(client: ModelClient, model: str, messages: Sequence[Message],
                             tools: Sequence[ToolDefinition] = ()) -> int | None:
    """The exact input tokens of this request for `model`, or None when nothing can count them here."""
    provider = parse_model_id(model).provider
    if provider in _TIKTOKEN_PROVIDERS:
        return tiktoken_count(model, messages, tools)
    if provider not in ("anthropic", "gemini") or client.cassette is not None:
        return None  # a replayed session has no recorded count to answer with
    adapter = client.adapter(provider)
    options = AdapterOptions(model=model)
    try:
        request = adapter.to_wire(list(messages), list(tools), options, ToolIdMap())
        if provider == "anthropic":
            path = request.path + "/count_tokens"
            body: dict[str, Any] = {k: v for k, v in request.body.items() if k in _COUNTED_FIELDS}
            field = "input_tokens"
        else:
            path = request.path.replace(":generateContent", ":countTokens")
            body = {"generateContentRequest": {"model": f"models/{options.model_name}", **request.body}}
            field = "totalTokens"
        headers = {"content-type": "application/json", **request.headers,
                   **client._auth_headers(provider, adapter)}
        response = await client._transport.asend("POST", client.base_url(provider) + path, orjson.dumps(body),
                                                 headers, provider=provider)
        if not 200 <= response.status < 300:
            log.debug("token count for %s answered HTTP %s; using the estimate", model, response.status)
            return None
        value = response.json(provider).get(field)
    except MetisError as error:  # counting is an aid: a failure leaves the estimate in charge
        log.debug("token count for %s failed (%s); using the estimate", model, type(error).__name__)
        return None
    return int(value) if isinstance(value, int) else None


def tiktoken_count(model: str, messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> int | None:
    """OpenAI chat input tokens counted with tiktoken (None when it is not installed or lacks the encoding)."""
    encoding = _encoding(parse_model_id(model).name if ":" in model else model)
    if encoding is None:
        return None
    total = _REPLY_PRIMER
    for message in messages:
        total += _PER_MESSAGE + len(encoding.encode(message.role.value))
        for block in message.content:
            total += len(encoding.encode(_block_text(block)))
    if tools:
        total += len(encoding.encode(orjson.dumps([t.model_dump(mode="json", include={"name", "description",
                                                                                   "input_schema"}) for t in tools]
                                                  ).decode()))
    return total


def _block_text(block: Any) -> str:
    if hasattr(block, "text") and isinstance(block.text, str):
        return str(block.text)
    if callable(getattr(block, "text", None)):
        return str(block.text())
    if hasattr(block, "input"):
        return orjson.dumps(block.input).decode() + str(getattr(block, "name", ""))
    return ""


@cache
def _encoding(model_name: str) -> Any:
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        return tiktoken.encoding_for_model(model_name)
    except KeyError:
        try:
            return tiktoken.get_encoding("o200k_base")  # the encoding of every current OpenAI model
        except Exception as error:  # no cached encoding file and no network: fall back to the estimate
            log.debug("tiktoken has no encoding for %s: %s", model_name, error)
            return None
    except Exception as error:  # the encoding file could not be fetched (offline)
        log.debug("tiktoken could not load the encoding of %s: %s", model_name, error)
        return None

"""Canonical -> request for an OpenAI-compatible server: the OpenAI chat body, quirks from capabilities.

Every quirk is a capability flag the base builder already honours: `tool_id_style: alnum9`
(Mistral wants exactly 9 alphanumerics), `supports_stream_usage: false` (no stream_options),
`supports_developer_role` (default false here: always `system`) and `max_tokens_field`. What is
specific here is the reason logged when thinking cannot be replayed, and the message's
`extra_content` (Gemini's thought signature) sent back to the model that answered, and only there.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters.openai_chat.request import ChatRequestBuilder
from metis_core.adapters.openai_compatible.stream import EXTRA_KEY
from metis_core.messages import Message


class CompatibleRequestBuilder(ChatRequestBuilder):
    thinking_drop_reason = (
        "OpenAI-compatible servers take no thinking in the history (DeepSeek rejects reasoning_content there)"
    )

    def wire_assistant(self, message: Message) -> dict[str, Any] | None:
        wire = super().wire_assistant(message)
        raw = message.metadata.provider_raw
        extra = raw.get(EXTRA_KEY) if raw is not None else None
        if wire is not None and extra and message.metadata.model == self.options.model:
            wire[EXTRA_KEY] = extra  # a signature is valid only for the model that made it
        return wire

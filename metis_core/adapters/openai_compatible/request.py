"""Canonical -> request for an OpenAI-compatible server: the OpenAI chat body, quirks from capabilities.

Every quirk is a capability flag the base builder already honours: `tool_id_style: alnum9`
(Mistral wants exactly 9 alphanumerics), `supports_stream_usage: false` (no stream_options),
`supports_developer_role` (default false here: always `system`) and `max_tokens_field`. What is
specific here is only the reason logged when thinking cannot be replayed.
"""

from __future__ import annotations

from metis_core.adapters.openai_chat.request import ChatRequestBuilder


class CompatibleRequestBuilder(ChatRequestBuilder):
    thinking_drop_reason = (
        "OpenAI-compatible servers take no thinking in the history (DeepSeek rejects reasoning_content there)"
    )

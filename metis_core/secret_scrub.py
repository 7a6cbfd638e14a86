"""Takes secrets out of text that came from outside before it goes into an exception or event.

A provider error body may echo the key it was sent (some 401s do). `scrub_secrets` replaces the
exact value of every key the library has revealed for sending (`remember_secret`, called where a
key becomes a header) and anything shaped like a well-known key format. It is applied in one
place for errors, `ProviderError.__init__`, and for stream error events in the assembler. It does
not redact personal data (events/redaction.py does) and imports nothing of ours.
"""

from __future__ import annotations

import re
import threading
from functools import cache

REDACTED = "[redacted key]"
MIN_SECRET_LENGTH = 6
"""Shorter values are not scrubbed: replacing them would mangle ordinary text."""


@cache
def _key_shapes() -> re.Pattern[str]:
    """Compiled on the first error, not at import: importing metis stays cheap."""
    return re.compile(
        r"sk-ant-[A-Za-z0-9_\-]{8,}"  # Anthropic
        r"|sk-or-v1-[A-Za-z0-9]{16,}"  # OpenRouter
        r"|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"  # OpenAI
        r"|AIza[0-9A-Za-z_\-]{30,}"  # Google
        r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids
        r"|ABSK[A-Za-z0-9+/=]{32,}"  # Bedrock API keys
        r"|(?<=Bearer )[A-Za-z0-9._~+/=\-]{16,}"  # an echoed Authorization header
    )


_known: frozenset[str] = frozenset()
_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Add a secret value that must never appear in an error (idempotent; short values ignored)."""
    global _known
    if value is None or len(value) < MIN_SECRET_LENGTH or value in _known:
        return
    with _lock:
        _known = _known | {value}


def scrub_secrets(text: str) -> str:
    """`text` with every remembered secret and every well-known key shape replaced by REDACTED."""
    for secret in sorted(_known, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _key_shapes().sub(REDACTED, text)

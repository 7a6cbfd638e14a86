"""Heuristic scrubbing for text that goes into pseudonymous or shared event fields (v1: regular expressions).

What the spec's v1 names (§10 open question): common API key and token formats, e-mail addresses
and paths that name a user (home directories on Linux, macOS and Windows). Used for provider error
messages (`error_message_redacted`) and, under trace sharing, the user's message
(`turn.started.user_message_text_redacted`); secret_scrub adds the configured keys' exact values.
A safety net, not a guarantee.
"""

from __future__ import annotations

import re

from metis_core.secret_scrub import scrub_secrets

KEY = "[key]"
_PATTERNS = [
    (re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"), KEY),                      # Anthropic
    (re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-]{8,}"), KEY),                  # OpenAI, Stripe-style
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), KEY),                         # Google
    (re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), KEY),                       # AWS access key ids
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), KEY),                      # GitHub tokens
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), KEY),
    (re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), KEY),                       # GitLab
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), KEY),                   # Slack
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), "[token]"),  # JWT
    (re.compile(r"(?i)bearer\s+[A-Za-z0-9._\-]{8,}"), "Bearer [token]"),
    (re.compile(r"(?i)\b(api[_-]?key|secret|password|token)(\s*[=:]\s*)[^\s,;\"']{6,}"), r"\1\2[key]"),
    (re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"), "[email]"),
    (re.compile(r"/(home|Users)/[^/\s]+"), r"/\1/[user]"),
    (re.compile(r"(?i)\b([A-Z]):\\Users\\[^\\\s]+"), r"\1:\\Users\\[user]"),
]


def redact(text: str, limit: int = 2000) -> str:
    """`text` with keys, tokens, e-mail addresses and user names in paths replaced, cut to `limit`.

    Then the exact values of every key the library has sent (secret_scrub) go too, whatever their shape.
    """
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return scrub_secrets(text)[:limit]

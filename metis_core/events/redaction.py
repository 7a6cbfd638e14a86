"""Heuristic scrubbing for text that goes into pseudonymous event fields (v1: regular expressions).

Removes what most often leaks through provider error messages: API keys and bearer tokens, e-mail
addresses and absolute home paths. It is a safety net, not a guarantee (spec open question).
"""

from __future__ import annotations

import re

_PATTERNS = [
    (re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-]{8,}"), "[key]"),
    (re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"), "[key]"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), "[key]"),
    (re.compile(r"(?i)bearer\s+[A-Za-z0-9._\-]{8,}"), "Bearer [token]"),
    (re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"), "[email]"),
    (re.compile(r"/(home|Users)/[^/\s]+"), r"/\1/[user]"),
]


def redact(text: str, limit: int = 2000) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text[:limit]

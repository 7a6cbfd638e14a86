"""The security scan every created, imported or loaded skill goes through.

A skill body is instructions the model will follow, so it is checked for prompt injection
(overriding the system or the user), exfiltration (sending files, environment or secrets off the
machine, fetching and running code) and embedded secrets. `blocked` skills never load; `warning`
ones load and are flagged by `metis skills list`. Regular expressions: a net, not a proof.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

ScanVerdict = Literal["clean", "warning", "blocked"]

_BLOCKING: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("prompt injection: overrides earlier instructions",
     re.compile(r"\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|system)\s+"
                r"(instructions|prompts?|rules|messages)", re.I)),
    ("prompt injection: hides actions from the user",
     re.compile(r"\b(do\s+not|don't|never)\s+(tell|inform|show|mention\s+to)\s+the\s+user", re.I)),
    ("exfiltration: pipes a download into a shell",
     re.compile(r"\b(curl|wget)\b[^\n|]*\|\s*(ba|z)?sh\b", re.I)),
    ("exfiltration: posts data to a remote host",
     re.compile(r"\bcurl\b[^\n]*\s(-d|--data(-binary|-raw)?|-F|--form|-T|--upload-file)\b[^\n]*https?://", re.I)),
    ("exfiltration: reads credentials",
     re.compile(r"(~|\$HOME)/\.(ssh|aws|gnupg|netrc|docker/config)|\bid_(rsa|ed25519)\b|/etc/shadow", re.I)),
    ("exfiltration: sends the environment or secrets out",
     re.compile(r"\b(env|printenv|secrets?|api[_ ]?keys?|tokens?|credentials)\b[^\n]{0,60}\b(to|into)\s+"
                r"(https?://|a\s+(remote|webhook|url|server))", re.I)),
)
_SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("secret: an API key", re.compile(r"\b(sk-ant-|sk-|rk-)[A-Za-z0-9_\-]{16,}")),
    ("secret: a Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}")),
    ("secret: an AWS access key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("secret: a GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}")),
    ("secret: a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)
_WARNING: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("network: contacts a URL", re.compile(r"\b(curl|wget|Invoke-WebRequest|requests\.(get|post))\b", re.I)),
    ("role change: tells the model who it is", re.compile(r"\byou are now\b|\bact as (an? )?(unrestricted|jailbroken)",
                                                           re.I)),
    ("obfuscation: long base64 run", re.compile(r"[A-Za-z0-9+/]{120,}={0,2}")),
    ("destructive: removes files recursively", re.compile(r"\brm\s+-[a-z]*r[a-z]*f?\b\s+(/|~|\$HOME)", re.I)),
)


@dataclass(frozen=True, slots=True)
class ScanResult:
    verdict: ScanVerdict
    findings: list[str] = field(default_factory=list)


def scan_skill(text: str) -> ScanResult:
    """The verdict for a skill's whole SKILL.md (front matter included) and what was found."""
    blocking = [name for name, pattern in (*_BLOCKING, *_SECRETS) if pattern.search(text)]
    warnings = [name for name, pattern in _WARNING if pattern.search(text)]
    if blocking:
        return ScanResult("blocked", blocking + warnings)
    return ScanResult("warning" if warnings else "clean", warnings)

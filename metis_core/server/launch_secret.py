"""`LaunchSecret`: what makes a keyless browser on loopback the local user, and a foreign page not.

Each launch makes a random cookie value and one-time link tokens. `metis serve` prints
`/launch?token=<token>`; opening it sets a `SameSite=Strict; HttpOnly; Path=/` cookie and redirects
to `/`. A page on another site cannot read or send that cookie. Neither value ever goes into an
event, a log line or an answer body; their `repr` hides them.
"""

from __future__ import annotations

import hmac
import secrets
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

LAUNCH_PATH = "/launch"
MAX_PENDING_LINKS = 16


@dataclass(repr=False)
class LaunchSecret:
    """The per-launch cookie and its pending one-time link tokens. `on_redeemed` gets a fresh link
    token each time one is used, so the terminal can show the next link (another browser)."""

    cookie_name: str = field(default_factory=lambda: "metis_local_" + secrets.token_hex(4))
    _cookie_value: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    _pending: list[str] = field(default_factory=list)
    on_redeemed: Callable[[str], object] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __repr__(self) -> str:
        return f"LaunchSecret(cookie_name={self.cookie_name!r}, pending={len(self._pending)})"

    def new_link_token(self) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._pending = [*self._pending[-(MAX_PENDING_LINKS - 1):], token]
        return token

    def link(self, base_url: str) -> str:
        """A fresh one-time link to the web view (`base_url` is `http://host:port`)."""
        return f"{base_url.rstrip('/')}{LAUNCH_PATH}?token={self.new_link_token()}"

    def redeem(self, token: str | None) -> bool:
        """Use up a link token: True (once) when it is pending."""
        if not token:
            return False
        with self._lock:
            found = next((t for t in self._pending if hmac.compare_digest(t.encode(), token.encode())), None)
            if found is None:
                return False
            self._pending.remove(found)
        if self.on_redeemed is not None:
            self.on_redeemed(self.new_link_token())
        return True

    def set_cookie_header(self) -> bytes:
        return (f"{self.cookie_name}={self._cookie_value}; Path=/; HttpOnly; SameSite=Strict").encode("latin-1")

    def holds_cookie(self, cookie_header: str | None) -> bool:
        """Whether a Cookie header carries this launch's cookie."""
        if not cookie_header or self.cookie_name not in cookie_header:
            return False
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(cookie_header)
        except CookieError:  # a malformed Cookie header holds no cookie of ours
            return False
        morsel = jar.get(self.cookie_name)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), self._cookie_value.encode())


def announce_links(secret: LaunchSecret, base_url: str, write: Callable[[str], object]) -> None:
    """Write the first one-time link now, and each next one as the last is used, but only to a
    terminal: a link written to a log file would be a way in for whoever reads the log."""
    write(f"web view (this link works once, in one browser): {secret.link(base_url)}\n")
    if sys.stderr.isatty() or sys.stdout.isatty():
        secret.on_redeemed = lambda token: write(
            f"link used; for another browser: {base_url.rstrip('/')}{LAUNCH_PATH}?token={token}\n")

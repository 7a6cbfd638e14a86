"""The httpx clients metis creates for itself: the same clients, minus a cookie jar pass that finds nothing.

After every response httpx hands the cookie jar an email-style copy of all the headers to look
for `Set-Cookie`, whether or not there is one: ~75 µs a call on our benchmark machine, about
as much as translating a 40-message history. Provider APIs rarely set cookies (some gateways do,
for load-balancer affinity), so these clients run the jar only when a response carries
`Set-Cookie` or `Set-Cookie2`: every cookie a server sets is still stored and sent back exactly
as before. Clients a caller passes in are never replaced or altered. (Async calls go through
aiohttp by default, transport/owned_async.py; `MetisAsyncClient` serves `async_http="httpx"`.)
"""

from __future__ import annotations

from typing import Any

import httpx

_SET_COOKIE_HEADERS = ("set-cookie", "set-cookie2")


class SetCookieOnlyJar(httpx.Cookies):
    """`httpx.Cookies` that skips extraction for responses without a cookie header."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if any(name in headers for name in _SET_COOKIE_HEADERS):
            super().extract_cookies(response)


class _SetCookieOnlyCookies:
    """The `cookies` property both clients share: a `SetCookieOnlyJar`, kept when a caller sets new cookies."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._metis_cookies = SetCookieOnlyJar(super().cookies)  # type: ignore[misc]

    @property
    def cookies(self) -> httpx.Cookies:
        return self._metis_cookies

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        self._metis_cookies = SetCookieOnlyJar(cookies)


class MetisClient(_SetCookieOnlyCookies, httpx.Client):
    """`httpx.Client` whose `cookies` is a `SetCookieOnlyJar` (see the module docstring)."""


class MetisAsyncClient(_SetCookieOnlyCookies, httpx.AsyncClient):
    """`httpx.AsyncClient` whose `cookies` is a `SetCookieOnlyJar` (see the module docstring)."""

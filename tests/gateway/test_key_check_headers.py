"""`token_in_headers` (one pass over the ASGI headers) reads what two `Headers.get` calls read."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers

from metis_core.gateway.key_check import presented_token, token_in_headers


def through_starlette(raw: list[tuple[bytes, bytes]]) -> str | None:
    """The reading as it was, through Starlette's Headers."""
    headers = Headers(raw=raw)
    auth = headers.get("authorization")
    if auth and auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return headers.get("x-api-key") or None


CASES = {
    "bearer": [(b"host", b"h"), (b"authorization", b"Bearer mk_abc")],
    "bearer in any case, padded": [(b"authorization", b"bEaReR   mk_abc  ")],
    "empty bearer is none, x-api-key not read": [(b"authorization", b"Bearer   "), (b"x-api-key", b"mk_x")],
    "basic falls back to x-api-key": [(b"authorization", b"Basic dXNlcg=="), (b"x-api-key", b"mk_x")],
    "x-api-key only": [(b"content-type", b"application/json"), (b"x-api-key", b"mk_x")],
    "empty x-api-key": [(b"x-api-key", b"")],
    "neither": [(b"host", b"h")],
    "no headers": [],
    "the first of repeated headers": [(b"x-api-key", b"first"), (b"authorization", b"Bearer one"),
                                      (b"authorization", b"Bearer two"), (b"x-api-key", b"second")],
    "latin-1 bytes": [(b"authorization", b"Bearer mk_\xe9\xa0")],
    "empty authorization, x-api-key": [(b"authorization", b""), (b"x-api-key", b"mk_y")],
    "bearer without a space": [(b"authorization", b"Bearermk_abc"), (b"x-api-key", b"mk_y")],
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_pass_reads_what_starlettes_headers_read(case: str) -> None:
    raw = CASES[case]
    assert token_in_headers(raw) == through_starlette(raw)


def test_presented_token_reads_the_connection_scope() -> None:
    from starlette.requests import HTTPConnection

    scope = {"type": "http", "headers": [(b"x-api-key", b"mk_k")]}
    assert presented_token(HTTPConnection(scope)) == "mk_k"

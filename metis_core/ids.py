"""Identifiers: monotonic ULIDs, tool-use ids, session ids.

ULIDs from `new_ulid()` are strictly increasing within this process even when many are made
inside one millisecond (the random part is incremented, as the ULID spec's monotonic mode says),
so sorting ids sorts by creation. python-ulid parses and validates; generation is ours because it
is on the hot path of every event (monotonic step plus a table-driven base32 encoding).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable

from mypy_extensions import mypyc_attr

_RANDOM_BITS = 80
_RANDOM_MAX = (1 << _RANDOM_BITS) - 1

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = [high + low for high in _CROCKFORD for low in _CROCKFORD]
"""Every 10-bit value as its two Crockford characters: 13 lookups encode a whole ULID."""
_PAIR_SHIFTS = tuple(range(120, -1, -10))
_TAIL_MAX = 0x3FF

TOOL_USE_PREFIX = "tu_"
SESSION_PREFIX = "sess_"


def encode_ulid(value: int) -> str:
    """Crockford base32 of a 128-bit value, 26 characters (the hot path of every id we make).

    The 26 characters carry 130 bits whose two leading bits are zero: 13 pairs of 10 bits, read
    through a table (~0.8 µs, against ~2 µs through `base64.b32encode`, which is Python code).
    """
    pairs = _PAIRS
    return "".join([pairs[(value >> shift) & 0x3FF] for shift in _PAIR_SHIFTS])


class UlidGenerator:
    """Monotonic ULIDs: a new millisecond draws fresh randomness, the same one increments it.

    If the 80-bit random part would overflow inside one millisecond (after ~2^79 ids), the
    generator moves to the next millisecond instead of failing as the spec's reference does:
    ids stay unique and strictly increasing, and the clock catches up within a millisecond.
    """

    def __init__(
        self,
        clock_ms: Callable[[], int] | None = None,
        random_bits: Callable[[], int] | None = None,
    ) -> None:
        self._clock_ms = clock_ms
        """None: the wall clock, read inline (a call to a function of our own costs ~10 % of an id)."""
        # Start below 2^79 so that many increments fit in one millisecond.
        self._random_bits = random_bits or _RandomDraws().next
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0
        self._prefix = ""
        """The last id's first 24 characters: its time and random part but the low 10 bits."""
        self._clock_head: tuple[int, str] = (-1, "")
        """(milliseconds >> 10, the first 8 characters of their encoding)."""
        self._tail = _TAIL_MAX
        """The last id's low 10 bits (its last two characters); at _TAIL_MAX the next id takes the long way."""

    def _now_ms(self) -> int:
        clock = self._clock_ms
        return time.time_ns() // 1_000_000 if clock is None else clock()

    def _step(self, now_ms: int) -> int:
        """The next id's value, its text's prefix and tail kept; called under the lock."""
        if now_ms > self._last_ms:
            self._last_ms = now_ms
            self._last_random = self._random_bits()
        else:  # same millisecond, or the clock stepped back: keep the last time, step by one
            self._last_random += 1
            if self._last_random > _RANDOM_MAX:
                self._last_ms += 1
                self._last_random = 0
        ms, r = self._last_ms, self._last_random
        pairs = _PAIRS
        if ms >> 10 != self._clock_head[0]:  # the time's first 8 characters change once a second
            self._clock_head = (ms >> 10, pairs[ms >> 40] + pairs[(ms >> 30) & 0x3FF] + pairs[(ms >> 20) & 0x3FF]
                                + pairs[(ms >> 10) & 0x3FF])
        # written out, not a loop: a comprehension is a function call of its own in Python 3.11
        self._prefix = (self._clock_head[1] + pairs[ms & 0x3FF] + pairs[r >> 70] + pairs[(r >> 60) & 0x3FF]
                        + pairs[(r >> 50) & 0x3FF] + pairs[(r >> 40) & 0x3FF] + pairs[(r >> 30) & 0x3FF]
                        + pairs[(r >> 20) & 0x3FF] + pairs[(r >> 10) & 0x3FF])
        self._tail = r & _TAIL_MAX
        return (ms << _RANDOM_BITS) | r

    def new_int(self) -> int:
        with self._lock:
            return self._step(self._now_ms())

    def forget_last(self) -> None:
        """Start the next id from fresh randomness (in a forked child: its parent's last id is not its own)."""
        self._lock = threading.Lock()
        self._last_ms = -1

    def new(self) -> str:
        """`encode_ulid(self.new_int())`, made from the last id's text where it can be. Within one
        millisecond the monotonic step adds one to the random part, which changes only the last two
        characters 1,023 times in 1,024: then the id is the kept 24-character prefix plus one lookup.
        A new millisecond, or a carry past those two characters, encodes the whole id."""
        with self._lock:
            clock = self._clock_ms  # `_now_ms` inlined: this runs for every event
            now_ms = time.time_ns() // 1_000_000 if clock is None else clock()
            if now_ms <= self._last_ms and self._tail < _TAIL_MAX:
                self._tail += 1
                self._last_random += 1
                return self._prefix + _PAIRS[self._tail]
            self._step(now_ms)
            return self._prefix + _PAIRS[self._tail]


@mypyc_attr(native_class=False)  # compiled (setup.py), a native class could not sit in _LIVE_DRAWS' WeakSet
class _RandomDraws:
    """79-bit draws from os.urandom, read 64 draws at a time: one system call where there were 64 (each
    new millisecond draws once). Called under the generator's lock, so the buffer needs none of its own."""

    __slots__ = ("__weakref__", "buffer", "offset")

    def __init__(self) -> None:
        self.buffer = b""
        self.offset = 0
        _LIVE_DRAWS.add(self)

    def forget(self) -> None:
        """Drop the draws read so far (a forked child must not reuse its parent's)."""
        self.buffer, self.offset = b"", 0

    def next(self) -> int:
        if self.offset >= len(self.buffer):
            self.buffer, self.offset = os.urandom(640), 0
        start = self.offset
        self.offset = start + 10
        return int.from_bytes(self.buffer[start:start + 10], "big") >> 1


_LIVE_DRAWS: weakref.WeakSet[_RandomDraws] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked worker (gunicorn's preload, multiprocessing's fork) would otherwise replay its parent's
    buffered draws, and ids made in the same millisecond on both sides would collide."""
    for draws in list(_LIVE_DRAWS):
        draws.forget()
    _default.forget_last()


_default = UlidGenerator()
os.register_at_fork(after_in_child=_after_fork_in_child)


def new_ulid() -> str:
    """A 26-character ULID, strictly greater than every ULID this process made before."""
    return _default.new()


def _parse(value: str) -> int:
    # python-ulid validates and decodes; imported here because it costs ~35 ms at import time
    # (it reads its own package metadata) and no call path needs it.
    from ulid import ULID

    return int(ULID.from_str(value))


def ulid_timestamp_ms(ulid: str) -> int:
    """The millisecond timestamp encoded in a ULID (prefixes such as `tu_` are ignored)."""
    return _parse(ulid[-26:]) >> _RANDOM_BITS


def ulid_to_int(ulid: str) -> int:
    return _parse(ulid[-26:])


def new_tool_use_id() -> str:
    return TOOL_USE_PREFIX + new_ulid()


def new_session_id() -> str:
    return SESSION_PREFIX + new_ulid()


def is_ulid(value: str) -> bool:
    if len(value) != 26:
        return False
    try:
        _parse(value)
    except ValueError:
        return False
    return True

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
from typing import Final

_RANDOM_BITS: Final = 80
_RANDOM_MAX: Final = (1 << _RANDOM_BITS) - 1

_CROCKFORD: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS: Final = [high + low for high in _CROCKFORD for low in _CROCKFORD]
"""Every 10-bit value as its two Crockford characters: 13 lookups encode a whole ULID."""
_PAIR_SHIFTS: Final = tuple(range(120, -1, -10))
_TAIL_MAX: Final = 0x3FF

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

    The last id is kept as text: its first 24 characters (`_prefix`) and its low 10 bits (`_tail`,
    its last two characters). The default randomness is drawn as text too (`_RandomDraws.text`): a
    new millisecond's id is then the time's 10 characters and 16 drawn ones, with no arithmetic on
    the random part; its value is read back from the text only when a carry or `new_int` needs it.
    """

    def __init__(
        self,
        clock_ms: Callable[[], int] | None = None,
        random_bits: Callable[[], int] | None = None,
    ) -> None:
        self._clock_ms = clock_ms
        """None: the wall clock, read inline (a call to a function of our own costs ~10 % of an id)."""
        self._draws = _RandomDraws() if random_bits is None else None
        """The default randomness, drawn as text (79 bits: the first character is below 16, so that
        many increments fit in one millisecond); None when the caller gives `random_bits`."""
        self._random_bits = random_bits
        self._lock = threading.Lock()
        self._last_ms = -1
        self._high: int | None = 0
        """The last id's random part but its low 10 bits; None: not read back from `_prefix` yet."""
        self._prefix = ""
        """The last id's first 24 characters: its time and random part but the low 10 bits."""
        self._clock_head: tuple[int, str] = (-1, "")
        """(milliseconds >> 10, the first 8 characters of their encoding)."""
        self._tail = _TAIL_MAX
        """The last id's low 10 bits (its last two characters); at _TAIL_MAX the next id takes the long way."""

    def _now_ms(self) -> int:
        clock = self._clock_ms
        return time.time_ns() // 1_000_000 if clock is None else clock()

    def _random_value(self) -> int:
        """The last id's 80-bit random part."""
        high = self._high
        if high is None:
            high = self._high = int(self._prefix[10:].translate(_TO_BASE32_DIGITS), 32)
        return (high << 10) | self._tail

    def _advance(self, now_ms: int) -> None:
        """Move to the next id: a later millisecond draws fresh randomness; the same one (or a clock
        that stepped back) keeps the last time and steps the random part by one. Under the lock."""
        if now_ms > self._last_ms:
            ms = self._last_ms = now_ms
            draws = self._draws
            if draws is not None:
                drawn = draws.text()
                random_head = drawn[:14]
                self._tail = int(drawn[14:].translate(_TO_BASE32_DIGITS), 32)  # once a millisecond: no table
                self._high = None
            else:
                random_head = self._encoded_random(self._random_bits())  # type: ignore[misc]
        elif self._tail < _TAIL_MAX:
            self._tail += 1
            return
        else:  # a carry past the last two characters
            value = self._random_value() + 1
            if value > _RANDOM_MAX:
                self._last_ms += 1
                value = 0
            ms = self._last_ms
            random_head = self._encoded_random(value)
        head = self._clock_head
        if ms >> 10 != head[0]:  # the time's first 8 characters change once a second
            pairs = _PAIRS
            head = self._clock_head = (ms >> 10, pairs[ms >> 40] + pairs[(ms >> 30) & 0x3FF]
                                       + pairs[(ms >> 20) & 0x3FF] + pairs[(ms >> 10) & 0x3FF])
        self._prefix = head[1] + _PAIRS[ms & 0x3FF] + random_head

    def _encoded_random(self, value: int) -> str:
        """Keep `value` as the random part: its low 10 bits as `_tail`, the 14 characters before them returned."""
        self._tail = value & _TAIL_MAX
        high = self._high = value >> 10
        pairs = _PAIRS  # written out, not a loop: a comprehension is a function call of its own in Python 3.11
        return (pairs[high >> 60] + pairs[(high >> 50) & 0x3FF] + pairs[(high >> 40) & 0x3FF]
                + pairs[(high >> 30) & 0x3FF] + pairs[(high >> 20) & 0x3FF] + pairs[(high >> 10) & 0x3FF]
                + pairs[high & 0x3FF])

    def new_int(self) -> int:
        with self._lock:
            self._advance(self._now_ms())
            return (self._last_ms << _RANDOM_BITS) | self._random_value()

    def forget_last(self) -> None:
        """Start the next id from fresh randomness (in a forked child: its parent's last id is not its own)."""
        self._lock = threading.Lock()
        self._last_ms = -1

    def new(self) -> str:
        """`encode_ulid(self.new_int())`, made from the last id's text. Within one millisecond the
        monotonic step adds one to the random part, which changes only the last two characters 1,023
        times in 1,024: then the id is the kept 24-character prefix plus one lookup. A new millisecond
        is the time's characters and drawn ones; a carry encodes the random part from its value."""
        lock = self._lock
        lock.acquire()  # not `with`: its bound __enter__/__exit__ cost ~1,100 instructions, a fifth of an id
        try:
            clock = self._clock_ms  # `_now_ms` inlined: this runs for every event
            now_ms = time.time_ns() // 1_000_000 if clock is None else clock()
            if now_ms <= self._last_ms and self._tail < _TAIL_MAX:
                self._tail += 1
                return self._prefix + _PAIRS[self._tail]
            self._advance(now_ms)
            return self._prefix + _PAIRS[self._tail]
        finally:
            lock.release()


class _RandomDraws:
    """Random parts from os.urandom, read 64 draws at a time: one system call where there were 64 (each
    new millisecond draws once). Called under the generator's lock, so the buffers need none of their own.

    `text()` draws a random part as its 16 Crockford characters: each random byte's low 5 bits pick one
    (256 is a multiple of 32, so every character is equally likely), and the first is kept below 16 (79
    bits, as `next()` draws). `next()` draws one as an int (callers who want the value)."""

    __slots__ = ("__weakref__", "buffer", "chars", "chars_offset", "offset")

    def __init__(self) -> None:
        self.buffer = b""
        self.offset = 0
        self.chars = ""
        self.chars_offset = 0
        _LIVE_DRAWS.add(self)

    def forget(self) -> None:
        """Drop the draws read so far (a forked child must not reuse its parent's)."""
        self.buffer, self.offset = b"", 0
        self.chars, self.chars_offset = "", 0

    def next(self) -> int:
        if self.offset >= len(self.buffer):
            self.buffer, self.offset = os.urandom(640), 0
        start = self.offset
        self.offset = start + 10
        return int.from_bytes(self.buffer[start:start + 10], "big") >> 1

    def text(self) -> str:
        start = self.chars_offset
        if start >= len(self.chars):
            self.chars, start = os.urandom(1024).translate(_BYTE_CHARS).decode("ascii"), 0
        self.chars_offset = start + 16
        chars = self.chars
        return _BELOW_16[chars[start]] + chars[start + 1:start + 16]


_BYTE_CHARS: Final = bytes(ord(_CROCKFORD[byte & 31]) for byte in range(256))
"""A byte's Crockford character, by its low 5 bits (`bytes.translate` table)."""
_BELOW_16: Final = {char: _CROCKFORD[index & 15] for index, char in enumerate(_CROCKFORD)}
"""A character's value's low 4 bits, as a character: the first of a 79-bit random part."""
_TO_BASE32_DIGITS: Final = str.maketrans(_CROCKFORD, "0123456789ABCDEFGHIJKLMNOPQRSTUV")
"""Crockford characters to the digits `int(text, 32)` reads."""


_LIVE_DRAWS: weakref.WeakSet[_RandomDraws] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked worker (gunicorn's preload, multiprocessing's fork) would otherwise replay its parent's
    buffered draws, and ids made in the same millisecond on both sides would collide."""
    for draws in list(_LIVE_DRAWS):
        draws.forget()
    _default.forget_last()


_default: Final = UlidGenerator()
os.register_at_fork(after_in_child=_after_fork_in_child)


new_ulid: Callable[[], str] = _default.new
"""A 26-character ULID, strictly greater than every ULID this process made before: the process's
generator's own `new`, bound once (a wrapper function was one more frame for each of the ~7 ids a
gateway call makes). `forget_last` keeps the generator object, so the binding survives a fork."""


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
    return TOOL_USE_PREFIX + _default.new()


def new_session_id() -> str:
    return SESSION_PREFIX + _default.new()


def is_ulid(value: str) -> bool:
    if len(value) != 26:
        return False
    try:
        _parse(value)
    except ValueError:
        return False
    return True

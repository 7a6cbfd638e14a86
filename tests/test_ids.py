"""Identifiers: monotonic ULIDs (checked against the ULID spec's published sequence)."""

from __future__ import annotations

from itertools import pairwise

from ulid import ULID

from metis_core.ids import (
    UlidGenerator,
    encode_ulid,
    is_ulid,
    new_session_id,
    new_tool_use_id,
    new_ulid,
    ulid_timestamp_ms,
)


def test_100k_ulids_in_a_tight_loop_sort_strictly() -> None:
    ids = [new_ulid() for _ in range(100_000)]
    assert all(a < b for a, b in pairwise(ids))
    assert len(set(ids)) == len(ids)


def test_same_millisecond_increments_the_random_part_as_the_spec_shows() -> None:
    first = ULID.from_str("01BX5ZZKBKACTAV9WEVGEMMVRY")
    gen = UlidGenerator(clock_ms=lambda: first.milliseconds, random_bits=lambda: int(first) & ((1 << 80) - 1))
    assert [gen.new() for _ in range(4)] == [
        "01BX5ZZKBKACTAV9WEVGEMMVRY",
        "01BX5ZZKBKACTAV9WEVGEMMVRZ",
        "01BX5ZZKBKACTAV9WEVGEMMVS0",
        "01BX5ZZKBKACTAV9WEVGEMMVS1",
    ]


def test_random_overflow_moves_to_next_millisecond_and_stays_increasing() -> None:
    start = ULID.from_str("01BX5ZZKBKZZZZZZZZZZZZZZZX")
    gen = UlidGenerator(clock_ms=lambda: start.milliseconds, random_bits=lambda: int(start) & ((1 << 80) - 1))
    ids = [gen.new() for _ in range(4)]
    assert ids[:3] == ["01BX5ZZKBKZZZZZZZZZZZZZZZX", "01BX5ZZKBKZZZZZZZZZZZZZZZY", "01BX5ZZKBKZZZZZZZZZZZZZZZZ"]
    assert ids[3] > ids[2] and ulid_timestamp_ms(ids[3]) == start.milliseconds + 1


def test_clock_stepping_back_never_breaks_order() -> None:
    times = iter([1000, 999, 998, 1001])
    gen = UlidGenerator(clock_ms=lambda: next(times))
    ids = [gen.new() for _ in range(4)]
    assert ids == sorted(ids) and len(set(ids)) == 4


def test_prefixed_ids() -> None:
    tool_id, session_id = new_tool_use_id(), new_session_id()
    assert tool_id.startswith("tu_") and is_ulid(tool_id[3:])
    assert session_id.startswith("sess_") and is_ulid(session_id[5:])
    assert not is_ulid("not-a-ulid")


def test_our_encoding_matches_python_ulid_across_the_range() -> None:
    import random

    from metis_core.ids import encode_ulid

    values = [0, 1, (1 << 128) - 1, 1 << 80, *(random.getrandbits(128) for _ in range(5_000))]
    assert all(encode_ulid(v) == str(ULID.from_int(v)) for v in values)
    assert encode_ulid((1 << 128) - 1) == "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"  # largest valid ULID (spec)


def test_new_reuses_the_kept_head_and_still_encodes_every_id_exactly() -> None:
    # Two generators on the same clock and randomness: one through `new` (which keeps the leading
    # characters of the last id), one through `encode_ulid(new_int())`. The random part starts just
    # below a 40-bit boundary so the kept head must change mid-millisecond, and the clock steps too.
    def source() -> UlidGenerator:
        ticks = iter([5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 9, 9, 9, 9, 9, 9, 9, 9])
        draws = iter([(1 << 40) - 2, (7 << 40) - 1, 3])
        return UlidGenerator(clock_ms=lambda: next(ticks), random_bits=lambda: next(draws))

    fast, plain = source(), source()
    made = [fast.new() for _ in range(20)]
    assert made == [encode_ulid(plain.new_int()) for _ in range(20)]
    assert made == sorted(made) and len(set(made)) == 20


def test_random_draws_are_79_bit_and_fresh_across_buffer_refills() -> None:
    from metis_core.ids import _RandomDraws

    draws = _RandomDraws()
    values = [draws.next() for _ in range(200)]  # a little over three buffers of 64
    assert all(0 <= v < 1 << 79 for v in values)
    assert len(set(values)) == len(values)


def test_a_forked_child_draws_its_own_randomness() -> None:
    import os

    from metis_core.ids import new_ulid

    new_ulid()  # the parent has buffered draws
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its next draws, written back
        os.close(read)
        os.write(write, ",".join(new_ulid() for _ in range(200)).encode())
        os._exit(0)
    os.close(write)
    mine = [new_ulid() for _ in range(200)]
    with os.fdopen(read, "rb") as pipe:
        theirs = pipe.read().decode().split(",")
    os.waitpid(child, 0)
    assert len(theirs) == 200
    assert {u[10:] for u in mine}.isdisjoint(u[10:] for u in theirs)  # random parts: none shared


def test_new_from_the_kept_prefix_matches_the_whole_encoding_across_carries_and_new_int() -> None:
    # `new` appends one lookup to the kept 24-character prefix until the low 10 bits carry; ids made
    # by `new_int` in between move the same state. 5,000 ids in one millisecond cross ~5 carries.
    def source() -> UlidGenerator:
        return UlidGenerator(clock_ms=lambda: 1_700_000_000_000, random_bits=lambda: (1 << 70) - 700)

    fast, plain = source(), source()
    made = [fast.new() if i % 997 else encode_ulid(fast.new_int()) for i in range(5_000)]
    assert made == [encode_ulid(plain.new_int()) for _ in range(5_000)]
    assert all(a < b for a, b in pairwise(made))


def test_text_draws_are_crockford_79_bit_and_fresh() -> None:
    from metis_core.ids import _RandomDraws

    draws = _RandomDraws()
    texts = [draws.text() for _ in range(200)]  # a little over three buffers of 64
    assert all(len(t) == 16 and set(t) <= set("0123456789ABCDEFGHJKMNPQRSTVWXYZ") for t in texts)
    assert all(t[0] in "0123456789ABCDEF" for t in texts)  # 79 bits: room for increments
    assert len(set(texts)) == len(texts)
    assert len({t[1] for t in texts}) > 16  # later characters use the whole alphabet


def test_default_randomness_steps_by_one_within_a_millisecond_across_carries() -> None:
    # The default generator keeps a new millisecond's random part as drawn text; a carry (every
    # 1,024 ids) and `new_int` read its value back. Every id in one millisecond is the last plus one.
    gen = UlidGenerator(clock_ms=lambda: 1_700_000_000_000)
    made = [gen.new() if i % 997 else encode_ulid(gen.new_int()) for i in range(5_000)]
    values = [int(ULID.from_str(u)) for u in made]
    assert all(b == a + 1 for a, b in pairwise(values))
    assert all(ulid_timestamp_ms(u) == 1_700_000_000_000 for u in made)
    assert values[0] & ((1 << 80) - 1) < 1 << 79


def test_default_randomness_draws_afresh_each_millisecond() -> None:
    ticks = iter(range(1_000, 1_200))
    gen = UlidGenerator(clock_ms=lambda: next(ticks))
    made = [gen.new() for _ in range(200)]
    assert made == sorted(made) and len({u[10:] for u in made}) == 200
    assert [ulid_timestamp_ms(u) for u in made] == list(range(1_000, 1_200))
    assert all(encode_ulid(int(ULID.from_str(u))) == u for u in made)

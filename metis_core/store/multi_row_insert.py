"""Many rows per INSERT statement: one step into the database for a chunk of rows, not one per row.

`executemany` steps the statement once per row, and each step is a round into SQLite's C code (and
a release and re-acquisition of the GIL, which under load means waiting for the event loop thread).
A statement with many VALUES groups inserts the same rows, in the same order, with the same
constraint checks, in one step. Chunk sizes are powers of two, so few statement texts exist and the
connection's statement cache keeps them prepared.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import chain
from typing import Any

MAX_PARAMETERS = 999
"""SQLite's oldest limit on parameters per statement (3.32 raised it to 32,766)."""
MAX_ROWS = 64


@lru_cache(maxsize=256)
def _statement(head: str, group: str, size: int, tail: str) -> str:
    return head + " VALUES " + ", ".join([group] * size) + tail


def multi_row_inserts(
    statement: str, rows: Sequence[Sequence[Any]], tail: str = "", nullable: tuple[int, ...] = (),
) -> Iterator[tuple[str, list[Any]]]:
    """(statement, parameters) pairs inserting `rows` in order.

    `statement` is a one-row `INSERT ... VALUES (...)` (its VALUES group may hold literals beside
    the `?`s); `tail` follows the VALUES list (`ON CONFLICT ...`). `nullable` names parameters (by
    position in a row) whose None is written as a `NULL` literal instead of being bound: sqlite3 binds
    a None through its adapter lookup, ~3,300 instructions against ~600 for a text (bench/results/
    gateway-history.md). Consecutive rows with the same of those None share a statement; the rows stored and
    their order are the same as without it (tests/store/test_multi_row_insert.py)."""
    head, _, group = statement.partition(" VALUES ")
    if not nullable:
        yield from _chunks(head, group, rows, tail)
        return
    start = 0
    while start < len(rows):
        nulls = _nulls(rows[start], nullable)
        end = start + 1
        while end < len(rows) and _nulls(rows[end], nullable) == nulls:
            end += 1
        run = rows[start:end]
        if nulls:
            kept = [index for index in range(len(rows[start])) if index not in nulls]
            run = [[row[index] for index in kept] for row in run]
        yield from _chunks(head, _with_nulls(group, nulls), run, tail)
        start = end


def _chunks(head: str, group: str, rows: Sequence[Sequence[Any]], tail: str) -> Iterator[tuple[str, list[Any]]]:
    width = max(1, group.count("?"))
    cap = min(MAX_ROWS, 1 << ((MAX_PARAMETERS // width).bit_length() - 1))
    start = 0
    while start < len(rows):
        size = min(cap, 1 << ((len(rows) - start).bit_length() - 1))
        # chain.from_iterable flattens in C: a comprehension ran two bytecode loops per value here
        yield _statement(head, group, size, tail), list(chain.from_iterable(rows[start:start + size]))
        start += size


def _nulls(row: Sequence[Any], nullable: tuple[int, ...]) -> tuple[int, ...]:
    return tuple([index for index in nullable if row[index] is None])


@lru_cache(maxsize=64)
def _with_nulls(group: str, nulls: tuple[int, ...]) -> str:
    """The VALUES group with the parameters at `nulls` (positions among its `?`s) written as NULL."""
    parts = group.split("?")
    return "".join(part + ("" if index == len(parts) - 1 else "NULL" if index in nulls else "?")
                   for index, part in enumerate(parts))

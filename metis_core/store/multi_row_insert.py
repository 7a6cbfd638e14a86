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
from typing import Any

MAX_PARAMETERS = 999
"""SQLite's oldest limit on parameters per statement (3.32 raised it to 32,766)."""
MAX_ROWS = 64


@lru_cache(maxsize=256)
def _statement(head: str, group: str, size: int, tail: str) -> str:
    return head + " VALUES " + ", ".join([group] * size) + tail


def multi_row_inserts(statement: str, rows: Sequence[Sequence[Any]], tail: str = "") -> Iterator[tuple[str, list[Any]]]:
    """(statement, parameters) pairs inserting `rows` in order.

    `statement` is a one-row `INSERT ... VALUES (...)` (its VALUES group may hold literals beside
    the `?`s); `tail` follows the VALUES list (`ON CONFLICT ...`)."""
    head, _, group = statement.partition(" VALUES ")
    width = max(1, group.count("?"))
    cap = min(MAX_ROWS, 1 << ((MAX_PARAMETERS // width).bit_length() - 1))
    start = 0
    while start < len(rows):
        size = min(cap, 1 << ((len(rows) - start).bit_length() - 1))
        yield _statement(head, group, size, tail), [value for row in rows[start:start + size] for value in row]
        start += size

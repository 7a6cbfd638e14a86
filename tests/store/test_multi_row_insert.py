"""Multi-row INSERTs store the same rows, in the same order, as one INSERT per row; with `nullable`,
a None written as a NULL literal stores the same NULL as a bound None, whatever the rows' mix."""

from __future__ import annotations

import itertools
import random
import sqlite3

import pytest

from metis_core.store.conversation_batch import INSERT_TOOL_CALL, TOOL_CALL_NULLABLE
from metis_core.store.multi_row_insert import MAX_ROWS, multi_row_inserts

TABLE = "CREATE TABLE t (a TEXT, b TEXT, c INTEGER, d TEXT, e INTEGER)"
INSERT = "INSERT INTO t (a, b, c, d, e) VALUES (?, ?, NULL, ?, ?)"  # a literal beside the parameters
"""Four parameters: a, b, d, e (c is a literal)."""


def stored(statements: list[tuple[str, list[object]]]) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(":memory:")
    conn.execute(TABLE)
    for statement, params in statements:
        conn.execute(statement, params)
    return conn.execute("SELECT rowid, a, b, c, d, e FROM t ORDER BY rowid").fetchall()


def one_by_one(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return stored([(INSERT, list(row)) for row in rows])


def random_rows(count: int, seed: int) -> list[tuple[object, ...]]:
    draw = random.Random(seed)
    return [
        (f"a{index}", draw.choice([None, f"b{index}", ""]), draw.choice([None, index, 0]), draw.choice([None, "x"]))
        for index in range(count)
    ]


@pytest.mark.parametrize("count", [0, 1, 2, 3, 64, 65, 200])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_nullable_parameters_store_the_rows_a_bound_none_stores(count: int, seed: int) -> None:
    rows = random_rows(count, seed)
    assert stored(list(multi_row_inserts(INSERT, rows, nullable=(1, 2, 3)))) == one_by_one(rows)
    assert stored(list(multi_row_inserts(INSERT, rows))) == one_by_one(rows)


def test_no_none_is_bound_in_a_nullable_position() -> None:
    rows = random_rows(300, 7)
    for statement, params in multi_row_inserts(INSERT, rows, nullable=(1, 2, 3)):
        groups = statement.count("(")
        assert groups <= MAX_ROWS
        assert len(params) == statement.count("?")
    bound = [value for _, params in multi_row_inserts(INSERT, rows, nullable=(1, 2, 3)) for value in params]
    assert None not in bound


def test_rows_alike_in_their_nones_share_a_statement() -> None:
    rows = [("a", None, None, None)] * 5 + [("a", "b", 1, None)] * 3 + [("a", None, None, None)] * 2
    statements = list(multi_row_inserts(INSERT, rows, nullable=(1, 2, 3)))
    assert [statement.count("(") - 1 for statement, _ in statements] == [4, 1, 2, 1, 2]  # powers of two per run
    assert statements[0][0].endswith("VALUES (?, NULL, NULL, NULL, NULL), (?, NULL, NULL, NULL, NULL), "
                                      "(?, NULL, NULL, NULL, NULL), (?, NULL, NULL, NULL, NULL)")
    assert statements[2][0].endswith("VALUES (?, ?, NULL, ?, NULL), (?, ?, NULL, ?, NULL)")


def test_the_tool_calls_statement_writes_pending_calls_with_literals() -> None:
    pending = ("toolu_1", "sess", "msg_1", None, "search", "pending", None, "anthropic", 5, None)
    answered = ("toolu_2", "sess", "msg_1", "msg_2", "search", "succeeded", "call_9", "openai", 5, 6)
    statements = list(multi_row_inserts(INSERT_TOOL_CALL, [pending, pending, answered], nullable=TOOL_CALL_NULLABLE))
    assert [params for _, params in statements] == [
        [value for value in itertools.chain(pending, pending) if value is not None], list(answered)]
    assert "(?, ?, ?, NULL, ?, ?, NULL, ?, ?, NULL)" in statements[0][0]

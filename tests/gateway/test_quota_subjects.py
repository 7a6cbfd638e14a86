"""QuotaGate.subjects keeps a key's Subject while the key service hands out the same row, and
makes it again from a new row, so a changed limit counts from the next row read."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from metis_core.gateway.quotas import QuotaGate, Subject
from metis_core.store.gateway_keys import GatewayKeyRecord


def row(**changes: Any) -> GatewayKeyRecord:
    base = GatewayKeyRecord(id="gk_1", name="k", prefix="mk_abcdefgh", secret_hash="0" * 64, user_id=None,
                            team_id=None, allowed_models=None, budget_usd=Decimal("5"), budget_period="day",
                            rpm=10, tpm=None, created_at=datetime(2026, 1, 1, tzinfo=UTC))
    return dataclasses.replace(base, **changes)


def test_the_same_row_gives_the_same_subject_and_a_new_row_its_own_limits() -> None:
    gate = QuotaGate(store=None, bus=None)  # type: ignore[arg-type]  # no user or team: neither is read
    first = row()
    [subject] = gate.subjects(first)
    assert subject == Subject("gateway_key", "gk_1", Decimal("5"), "day", 10, None)
    assert gate.subjects(first)[0] is subject
    [changed] = gate.subjects(row(rpm=20, budget_usd=Decimal("7")))  # the row as read again after a change
    assert changed == Subject("gateway_key", "gk_1", Decimal("7"), "day", 20, None)
    assert gate.subjects(first) == [subject]  # an older row still gets its own limits

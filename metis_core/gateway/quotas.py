"""Quotas: spend budgets (day, month, total), requests and tokens per minute, per key, user and team.

`admit` runs before any upstream call: a spent budget or a full minute refuses the request with
GatewayQuotaError (Retry-After = seconds to the window's end) and one gateway.quota_exceeded per
subject and window per process. `reserve` then holds the call's worst-case cost in every budget
window (call_budget.py prices it), refusing with GatewayBudgetError when it does not fit. `charge`
runs after each upstream call: it settles the reservation, and quota.alert fires once per window
at 50, 80 and 100 %. Counters and reservations move atomically in the key store, across workers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

from metis_core.errors import GatewayBudgetError, GatewayQuotaError
from metis_core.events.bus import EventBus
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor
from metis_core.store.gateway_keys import (
    BudgetHold,
    BudgetPeriod,
    GatewayKeyRecord,
    GatewayKeyStore,
    Scope,
    SubjectLimits,
    budget_window,
)
from metis_core.store.records import to_us

ALERT_THRESHOLDS: Final = (50, 80, 100)
LIMITS_CACHE_SECONDS: Final = 1.0
"""A change made by `metis gateway limits set` reaches running gateways within this."""
_CAP_TYPES: Final = {"day": "daily", "month": "monthly", "total": "total"}
HELD_RETRY_AFTER: Final = 2.0
"""Retry-After of a refusal that only the reservations of calls in flight cause: they settle soon."""


@dataclass(frozen=True, slots=True)
class Subject:
    """One party a request counts against, with its limits."""

    scope: Scope
    subject_id: str
    budget_usd: Decimal | None
    budget_period: BudgetPeriod | None
    rpm: int | None
    tpm: int | None


class QuotaGate:
    def __init__(self, store: GatewayKeyStore, bus: EventBus) -> None:
        self.store = store
        self.bus = bus
        self._limits_read: dict[tuple[str, str], tuple[float, SubjectLimits | None]] = {}
        self._key_subjects: dict[str, tuple[GatewayKeyRecord, Subject]] = {}
        """key id -> (the key row, its Subject): made again when the key service hands out a new row."""
        self._reported: set[tuple[str, str, str, int]] = set()
        """(scope, subject, cap type, window start) already reported as exceeded by this process."""

    def _limits(self, scope: Scope, subject_id: str) -> SubjectLimits | None:
        """A user's or team's limits, read from the store at most once a second per subject."""
        clock = time.monotonic()
        cached = self._limits_read.get((scope, subject_id))
        if cached is not None and clock - cached[0] < LIMITS_CACHE_SECONDS:
            return cached[1]
        found = self.store.limits(scope, subject_id)
        if len(self._limits_read) >= 10_000:
            self._limits_read.clear()
        self._limits_read[(scope, subject_id)] = (clock, found)
        return found

    def subjects(self, key: GatewayKeyRecord) -> list[Subject]:
        kept = self._key_subjects.get(key.id)
        if kept is None or kept[0] is not key:  # the key service hands out the same row for a second
            if len(self._key_subjects) >= 10_000:
                self._key_subjects.clear()
            kept = self._key_subjects[key.id] = (
                key, Subject("gateway_key", key.id, key.budget_usd, key.budget_period, key.rpm, key.tpm))
        found = [kept[1]]
        for scope, subject_id in (("user", key.user_id), ("team", key.team_id)):
            if subject_id is None:
                continue
            limits = self._limits(scope, subject_id)  # type: ignore[arg-type]
            if limits is not None:
                found.append(Subject(limits.scope, subject_id, limits.budget_usd, limits.budget_period,
                                     limits.rpm, limits.tpm))
        return found

    # --- before the call ----------------------------------------------------------------------

    def admit(self, key: GatewayKeyRecord, subjects: list[Subject], *, shape: str, model: str) -> None:
        """Raise GatewayQuotaError when any subject is over a budget or a per-minute limit."""
        now: datetime | None = None  # read once, and only for a subject with a limit (most keys have none)
        for subject in subjects:
            if subject.budget_usd is None or subject.budget_period is None:
                continue
            now = now or datetime.now(UTC)
            start, end = budget_window(subject.budget_period, now)
            spent = self.store.spent(subject.scope, subject.subject_id, int(start.timestamp()))
            if spent >= subject.budget_usd:
                self._exceeded(key, subject, _CAP_TYPES[subject.budget_period], start, end, shape, model,
                               {"cap_usd": subject.budget_usd, "spent_usd": spent})
                raise GatewayQuotaError(
                    f"the {subject.budget_period} budget of {_who(subject)} (${subject.budget_usd}) is spent; "
                    "ask the gateway operator to raise it, or wait for the next window",
                    retry_after=_retry_after(end, now),
                )
        for subject in subjects:
            if subject.rpm is not None or subject.tpm is not None:
                break
        else:
            return
        now = now or datetime.now(UTC)
        minute = int(time.time() // 60)
        start = datetime.fromtimestamp(minute * 60, UTC)
        end = datetime.fromtimestamp(minute * 60 + 60, UTC)
        for subject in subjects:
            if subject.rpm is None and subject.tpm is None:
                continue
            requests, tokens = self.store.count_request(subject.scope, subject.subject_id, minute)
            if subject.rpm is not None and requests > subject.rpm:
                self._exceeded(key, subject, "rpm", start, end, shape, model,
                               {"limit_per_minute": subject.rpm, "used_per_minute": requests - 1})
                raise GatewayQuotaError(f"{_who(subject)} is limited to {subject.rpm} requests per minute",
                                        retry_after=_retry_after(end, now))
            if subject.tpm is not None and tokens >= subject.tpm:
                self._exceeded(key, subject, "tpm", start, end, shape, model,
                               {"limit_per_minute": subject.tpm, "used_per_minute": tokens})
                raise GatewayQuotaError(f"{_who(subject)} is limited to {subject.tpm} tokens per minute",
                                        retry_after=_retry_after(end, now))

    def _exceeded(
        self, key: GatewayKeyRecord, subject: Subject, cap_type: str, start: datetime, end: datetime,
        shape: str, model: str, figures: dict[str, Any],
    ) -> None:
        """One gateway.quota_exceeded per subject, cap and window in this process: a flood of refusals
        is one audit record, not thousands."""
        marker = (subject.scope, subject.subject_id, cap_type, int(start.timestamp()))
        if marker in self._reported:
            return
        self._reported.add(marker)
        self.bus.emit_new("gateway.quota_exceeded", {
            "gateway_key_id": key.id, "cap_type": cap_type, "scope": subject.scope,
            "window_start": start, "window_end": end, "inbound_shape": shape, "requested_model": model,
            "user_id": key.user_id, "team_id": key.team_id, **figures,
        }, session_id=SYSTEM_SESSION_ID, actor=Actor.SYSTEM)  # fmt: skip

    # --- the reservation --------------------------------------------------------------------

    @staticmethod
    def holds(subjects: list[Subject], now: datetime) -> list[BudgetHold]:
        """The budget windows `now` falls in, one per subject with a budget (none: nothing to reserve)."""
        found = []
        for subject in subjects:
            if subject.budget_usd is not None and subject.budget_period is not None:
                start, _ = budget_window(subject.budget_period, now)
                found.append(BudgetHold(subject.scope, subject.subject_id, int(start.timestamp()), subject.budget_usd))
        return found

    def reserve(self, key: GatewayKeyRecord, subjects: list[Subject], reservation_id: str, amount: Decimal, *,
                lease_seconds: float, shape: str, model: str, why: str) -> list[BudgetHold]:
        """Hold `amount` in every budget window of `subjects` (all or none) for `lease_seconds`; the
        windows held. GatewayBudgetError, saying what is left and `why` the call costs `amount`, when
        it does not fit one of them."""
        now = datetime.now(UTC)
        holds = self.holds(subjects, now)
        if not holds:
            return holds
        stamp = to_us(now)
        refused = self.store.reserve(reservation_id, holds, amount, stamp, stamp + int(lease_seconds * 1_000_000))
        if refused is None:
            return holds
        hold = refused.hold
        subject = next(s for s in subjects if (s.scope, s.subject_id) == (hold.scope, hold.subject_id))
        assert subject.budget_period is not None
        start, end = budget_window(subject.budget_period, now)
        self._exceeded(key, subject, _CAP_TYPES[subject.budget_period], start, end, shape, model,
                       {"cap_usd": hold.budget_usd, "spent_usd": refused.spent_usd})
        left = hold.budget_usd - refused.spent_usd - refused.reserved_usd
        in_flight = refused.reserved_usd > 0 and refused.spent_usd + amount <= hold.budget_usd
        raise GatewayBudgetError(
            f"this call may cost up to ${_usd(amount)} ({why}), more than the ${_usd(max(left, Decimal(0)))} left of "
            f"the {subject.budget_period} budget of {_who(subject)} (${_usd(hold.budget_usd)}: "
            f"${_usd(refused.spent_usd)} spent, ${_usd(refused.reserved_usd)} held by calls in flight); "
            + ("retry when they finish, or ask for fewer tokens (max_tokens)" if in_flight else
               "ask for fewer tokens (max_tokens), ask the gateway operator to raise the budget, or wait for the "
               "next window"),
            retry_after=HELD_RETRY_AFTER if in_flight else _retry_after(end, now),
        )

    def release(self, reservation_id: str) -> None:
        self.store.release(reservation_id)

    # --- after the call -----------------------------------------------------------------------

    def charge(self, subjects: list[Subject], cost: Decimal | None, tokens: int, *,
               reservation_id: str | None = None, holds: list[BudgetHold] | None = None,
               more: bool = False) -> list[dict[str, Any]]:
        """Count the call's tokens and spend against every subject, now (the next request must see
        them); return the quota.alert payloads of thresholds this call crossed, for the record.

        With `holds` (the call's reservation), the spend settles it in the same transaction: the
        reservation ends, or holds `cost` less when `more` upstream calls of this request follow."""
        now: datetime | None = None  # read once, and only for a subject with a limit (most keys have none)
        minute: int | None = None
        for subject in subjects:
            if subject.tpm is not None and tokens:
                minute = int(time.time() // 60) if minute is None else minute
                self.store.add_tokens(subject.scope, subject.subject_id, minute, tokens)
        totals: dict[tuple[str, str], Decimal] = {}
        if holds and reservation_id is not None:
            totals = self.store.settle(reservation_id, holds, cost or Decimal(0), keep=more)
        elif cost:
            for subject in subjects:
                if subject.budget_period is not None and subject.budget_usd is not None:
                    now = now or datetime.now(UTC)
                    start, _ = budget_window(subject.budget_period, now)
                    totals[(subject.scope, subject.subject_id)] = self.store.add_spend(
                        subject.scope, subject.subject_id, int(start.timestamp()), cost)
        if not totals:
            return []
        return self._alerts(subjects, totals, holds, now or datetime.now(UTC))

    def _alerts(self, subjects: list[Subject], totals: dict[tuple[str, str], Decimal],
                holds: list[BudgetHold] | None, now: datetime) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = []
        windows = {(h.scope, h.subject_id): h.window_start for h in holds or ()}
        for subject in subjects:
            total = totals.get((subject.scope, subject.subject_id))
            if total is None or subject.budget_period is None or subject.budget_usd is None:
                continue
            start, end = budget_window(subject.budget_period, now)
            window = windows.get((subject.scope, subject.subject_id), int(start.timestamp()))
            if window != int(start.timestamp()):  # charged to the window the call started in
                start, end = budget_window(subject.budget_period, datetime.fromtimestamp(window, UTC))
            if subject.budget_usd <= 0:
                continue
            percent = total * 100 / subject.budget_usd
            for threshold in ALERT_THRESHOLDS:
                if percent >= threshold and self.store.claim_alert(subject.scope, subject.subject_id, window,
                                                                   threshold):
                    alerts.append({
                        "scope": subject.scope, "subject_id": subject.subject_id,
                        "cap_type": _CAP_TYPES[subject.budget_period], "threshold_percent": threshold,
                        "cap_usd": subject.budget_usd, "spent_usd": total, "window_start": start, "window_end": end,
                    })  # fmt: skip
        return alerts


def _who(subject: Subject) -> str:
    return {"gateway_key": "this key", "user": "this key's user", "team": "this key's team"}[subject.scope]


def _usd(amount: Decimal) -> str:
    return format(amount.normalize(), "f")


def _retry_after(end: datetime, now: datetime) -> float:
    return max(1.0, min((end - now).total_seconds(), 86_400.0 * 31))

"""Gateway keys: issue, list, revoke, rotate with a grace period, and check a presented token.

A token is `mk_<8 public chars>_<43 secret chars>`; only its SHA-256 and the public prefix are
stored, and the plaintext is returned once, by `issue`/`rotate`. Checking a token looks the row up
by prefix and compares hashes in constant time. Every change emits its audit event
(gateway.key_issued / key_revoked / key_rotated); no event ever carries key material.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Final

from metis_core.errors import GatewayAuthError, GatewayKeyError
from metis_core.events.bus import EventBus
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor
from metis_core.ids import is_ulid, new_ulid
from metis_core.store.gateway_keys import KEY_SCOPES, BudgetPeriod, GatewayKeyRecord, GatewayKeyStore, KeyScope

TOKEN_PREFIX: Final = "mk_"
_TOKEN: Final = re.compile(r"^mk_([A-Za-z0-9]{8})_[A-Za-z0-9_-]{20,}$")
_ALPHANUM: Final = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


KEY_CACHE_SECONDS: Final = 1.0
"""How long a checked key's row is reused: a revocation by another process takes effect within this."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_hash_prefix(token: str) -> str:
    """What an auth failure may record: 8 hex of the SHA-256 of the presented token's first 11 chars."""
    return hashlib.sha256(token[:11].encode()).hexdigest()[:8]


def new_subject_id(kind: str) -> str:
    return f"{'usr' if kind == 'user' else 'team'}_{new_ulid()}"


def check_subject_id(value: str | None, kind: str) -> str | None:
    """`usr_<ulid>` / `team_<ulid>`, or `new` for a fresh one; names and e-mails are refused."""
    if value is None:
        return None
    if value == "new":
        return new_subject_id(kind)
    head = "usr_" if kind == "user" else "team_"
    if not (value.startswith(head) and is_ulid(value[len(head):])):
        raise GatewayKeyError(
            f"--{kind} takes a pseudonymous id ({head}<ulid>) or `new` to mint one, never a name or e-mail"
        )
    return value


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A new key: the record and the plaintext token, shown to the operator once."""

    record: GatewayKeyRecord
    token: str


@dataclass(slots=True)
class KeyTerms:
    """What a key may do: its owner, models, budget and rates."""

    name: str
    user_id: str | None = None
    team_id: str | None = None
    allowed_models: list[str] | None = None
    budget_usd: Decimal | None = None
    budget_period: BudgetPeriod | None = None
    rpm: int | None = None
    tpm: int | None = None
    expires_at: datetime | None = None
    scope: KeyScope = "model"
    """`model` (the default) calls models; `viewer` / `admin` open `metis serve` (docs/gateway.md "Scopes")."""
    extra: dict[str, Any] = field(default_factory=dict)


def _new_token() -> tuple[str, str]:
    public = "".join(secrets.choice(_ALPHANUM) for _ in range(8))
    return f"{TOKEN_PREFIX}{public}", f"{TOKEN_PREFIX}{public}_{secrets.token_urlsafe(32)}"


class KeyService:
    """Key lifecycle over a GatewayKeyStore, with its audit events on the bus."""

    def __init__(self, store: GatewayKeyStore, bus: EventBus, *, workspace_path: str = "gateway") -> None:
        self.store = store
        self.bus = bus
        self.workspace_path = workspace_path
        self._recent: dict[str, tuple[float, GatewayKeyRecord]] = {}
        """token hash -> (when read, the key's row): a key is read from the store at most once a second."""

    def _emit(self, event_type: str, payload: dict[str, Any]) -> None:
        self.bus.emit_new(event_type, payload, session_id=SYSTEM_SESSION_ID, actor=Actor.SYSTEM)

    # --- lifecycle ----------------------------------------------------------------------------

    def issue(self, terms: KeyTerms, *, now: datetime | None = None) -> IssuedKey:
        if terms.budget_usd is not None and terms.budget_usd < 0:
            raise GatewayKeyError("--budget-usd must be zero or more")
        if terms.scope not in KEY_SCOPES:
            raise GatewayKeyError(f"--scope is one of {', '.join(KEY_SCOPES)}, not {terms.scope!r}")
        if terms.budget_usd is not None and terms.budget_period is None:
            terms.budget_period = "month"
        now = now or datetime.now(UTC)
        prefix, token = _new_token()
        record = GatewayKeyRecord(
            id=f"gk_{new_ulid()}", name=terms.name, prefix=prefix, secret_hash=hash_token(token),
            user_id=terms.user_id, team_id=terms.team_id,
            allowed_models=tuple(terms.allowed_models) if terms.allowed_models else None,
            budget_usd=terms.budget_usd, budget_period=terms.budget_period if terms.budget_usd is not None else None,
            rpm=terms.rpm, tpm=terms.tpm, created_at=now, expires_at=terms.expires_at, scope=terms.scope,
        )  # fmt: skip
        self.store.insert_key(record)
        budget = format(record.budget_usd, "f") if record.budget_usd is not None else None
        self._emit("gateway.key_issued", {
            "gateway_key_id": record.id, "name": record.name, "workspace_path": self.workspace_path,
            "issued_at": now, "user_id": record.user_id, "team_id": record.team_id,
            "allowed_models": list(record.allowed_models) if record.allowed_models else None,
            "daily_cap_usd": budget if record.budget_period == "day" else None,
            "monthly_cap_usd": budget if record.budget_period == "month" else None, "scope": record.scope,
        })  # fmt: skip
        return IssuedKey(record, token)

    def live_keys(self, scopes: tuple[KeyScope, ...], *, now: datetime | None = None) -> list[GatewayKeyRecord]:
        """Keys of these scopes that would be accepted now: not revoked, not expired, grace not over."""
        now = now or datetime.now(UTC)
        return [k for k in self.store.list_keys() if k.scope in scopes and k.revoked_at is None
                and (k.expires_at is None or now < k.expires_at) and (k.grace_until is None or now < k.grace_until)]

    def list(self) -> list[GatewayKeyRecord]:
        return self.store.list_keys()

    def revoke(self, key_id: str, *, reason: str = "admin_revoke", now: datetime | None = None) -> GatewayKeyRecord:
        record = self.store.get_key(key_id)
        now = now or datetime.now(UTC)
        self._recent.clear()
        if not self.store.revoke(key_id, now, reason):
            raise GatewayKeyError(f"gateway key {key_id} is already revoked")
        self._emit("gateway.key_revoked", {"gateway_key_id": key_id, "revoked_at": now, "reason": reason})
        return record

    def rotate(self, key_id: str, *, grace: timedelta, now: datetime | None = None) -> IssuedKey:
        """A new key with the old one's terms; the old one works until now + grace, then stops."""
        old = self.store.get_key(key_id)
        if old.revoked_at is not None or old.replaced_by is not None:
            raise GatewayKeyError(f"gateway key {key_id} is revoked or already rotated; rotate its successor")
        now = now or datetime.now(UTC)
        terms = KeyTerms(
            name=old.name, user_id=old.user_id, team_id=old.team_id,
            allowed_models=list(old.allowed_models) if old.allowed_models else None, budget_usd=old.budget_usd,
            budget_period=old.budget_period, rpm=old.rpm, tpm=old.tpm, expires_at=old.expires_at, scope=old.scope,
        )  # fmt: skip
        issued = self.issue(terms, now=now)
        until = now + grace
        self.store.start_grace(key_id, issued.record.id, until)
        self._recent.clear()
        self._emit("gateway.key_rotated", {
            "old_gateway_key_id": key_id, "new_gateway_key_id": issued.record.id, "grace_period_until": until,
            "workspace_path": self.workspace_path, "user_id": old.user_id, "team_id": old.team_id,
        })  # fmt: skip
        if grace <= timedelta(0):
            self.store.revoke(key_id, now, "rotated")
            self._emit("gateway.key_revoked", {"gateway_key_id": key_id, "revoked_at": now, "reason": "rotated"})
        return issued

    # --- checking a token ---------------------------------------------------------------------

    def authenticate(self, token: str | None, *, now: datetime | None = None) -> GatewayKeyRecord:
        """The key a token belongs to; GatewayAuthError (reason in `.reason`) otherwise."""
        if not token:
            raise _refused("missing_token", "no API key: send it as `Authorization: Bearer <key>` or `x-api-key`")
        presented = hash_token(token)
        cached = self._recent.get(presented)
        clock = time.monotonic()
        if cached is not None and clock - cached[0] < KEY_CACHE_SECONDS:
            record: GatewayKeyRecord | None = cached[1]
        else:
            match = _TOKEN.match(token)
            record = self.store.key_by_prefix(f"{TOKEN_PREFIX}{match.group(1)}") if match else None
            if record is not None and hmac.compare_digest(presented, record.secret_hash):
                if len(self._recent) >= 10_000:
                    self._recent.clear()
                self._recent[presented] = (clock, record)
        expected = record.secret_hash if record is not None else presented[::-1]
        if not hmac.compare_digest(presented, expected) or record is None:
            raise _refused("invalid_token", "invalid API key; ask the gateway operator for a valid one")
        if record.revoked_at is not None:
            raise _refused("key_revoked", "this API key was revoked; use its replacement", record.id)
        if record.grace_until is None and record.expires_at is None:
            return record  # nothing to compare with the time: the clock is read only for a key with a deadline
        now = now or datetime.now(UTC)
        if record.grace_until is not None and now >= record.grace_until:
            self._recent.pop(presented, None)
            if self.store.revoke(record.id, now, "grace_period_expired"):
                self._emit("gateway.key_revoked", {
                    "gateway_key_id": record.id, "revoked_at": now, "reason": "grace_period_expired"})
            raise _refused("key_revoked", "this API key was rotated and its grace period is over; use the new key",
                           record.id)
        if record.expires_at is not None and now >= record.expires_at:
            raise _refused("key_revoked", "this API key has expired; ask for a new one", record.id)
        return record


def _refused(reason: str, message: str, key_id: str | None = None) -> GatewayAuthError:
    return GatewayAuthError(message, reason=reason, key_id=key_id)

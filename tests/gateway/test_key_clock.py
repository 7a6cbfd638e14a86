"""KeyService.authenticate reads the clock only for a key with a deadline (expiry or rotation grace)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from metis_core.errors import GatewayAuthError
from metis_core.events.bus import EventBus
from metis_core.gateway import keys as keys_module
from metis_core.gateway.keys import KeyService, KeyTerms
from metis_core.store.gateway_keys import SqliteGatewayKeyStore


class CountedClock(datetime):
    reads = 0

    @classmethod
    def now(cls, tz: object = None) -> CountedClock:
        CountedClock.reads += 1
        real = datetime.now(UTC)
        return cls.fromtimestamp(real.timestamp(), UTC)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[KeyService]:
    bus = EventBus()
    store = SqliteGatewayKeyStore(tmp_path / "keys.db")
    try:
        yield KeyService(store, bus)
    finally:
        store.close()
        bus.shutdown(drain=True)


def test_a_key_without_deadline_is_checked_without_the_clock(service: KeyService,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    token = service.issue(KeyTerms(name="plain")).token
    monkeypatch.setattr(keys_module, "datetime", CountedClock)
    CountedClock.reads = 0
    for _ in range(3):
        assert service.authenticate(token).name == "plain"
    assert CountedClock.reads == 0


def test_deadlines_still_read_the_clock_and_refuse(service: KeyService, monkeypatch: pytest.MonkeyPatch) -> None:
    now = datetime.now(UTC)
    live = service.issue(KeyTerms(name="live", expires_at=now + timedelta(hours=1))).token
    expired = service.issue(KeyTerms(name="old", expires_at=now - timedelta(seconds=1))).token
    monkeypatch.setattr(keys_module, "datetime", CountedClock)
    CountedClock.reads = 0
    assert service.authenticate(live).name == "live"
    with pytest.raises(GatewayAuthError) as caught:
        service.authenticate(expired)
    assert caught.value.reason == "key_revoked"
    assert CountedClock.reads == 2
    # an explicit time is used as given, with or without a deadline
    assert service.authenticate(live, now=now).name == "live"
    with pytest.raises(GatewayAuthError):
        service.authenticate(live, now=now + timedelta(hours=2))

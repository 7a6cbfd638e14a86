"""Keys (issue, rotate with grace, revoke), budgets across calls, rpm and tpm, allow-lists, and 401s.

Every refusal is checked three ways: what the SDK client got (status, Retry-After, error type), the
events on the record (audit events with no key material), and what reached the upstream (nothing,
for a refused call) and the store (spend counters).
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from cli.replay_server import ANTHROPIC, ReplayServer, Reply

from metis_core.errors import GatewayAuthError
from metis_core.events.bus import EventBus
from metis_core.gateway.keys import KEY_CACHE_SECONDS, KeyService
from metis_core.gateway.service import GatewaySettings
from metis_core.store.gateway_keys import SqliteGatewayKeyStore

from .gateway_harness import GatewayHarness

HAIKU = "anthropic:claude-haiku-4-5"


def ask(gateway: GatewayHarness, token: str, model: str = HAIKU) -> anthropic.types.Message:
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    return client.messages.create(model=model, max_tokens=50, messages=[{"role": "user", "content": "hi"}])


def fresh_minute() -> None:
    """Per-minute counters reset on the minute: start a rate test well inside one."""
    if time.time() % 60 > 45:
        time.sleep(61 - time.time() % 60)


def script_text(gateway: GatewayHarness, count: int) -> None:
    gateway.upstream.script(ANTHROPIC, *[Reply.recording("anthropic", "response__text.json")] * count)


def all_stored_text(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(str(row) for t in tables for row in conn.execute(f"SELECT * FROM {t}"))


def test_a_key_is_stored_only_as_a_hash_and_its_issue_is_audited(gateway: GatewayHarness) -> None:
    key_id, token = gateway.issue(name="ci-bot")
    script_text(gateway, 1)
    assert ask(gateway, token).content
    gateway.drain()
    stored = all_stored_text(gateway.runtime.db_path)
    assert token not in stored and token[12:] not in stored
    assert token[:11] in stored  # the public prefix, for `keys list`
    issued = gateway.of_type("gateway.key_issued")
    assert [e.payload["gateway_key_id"] for e in issued] == [key_id]
    assert token not in str(issued[0].payload)


def test_rotation_keeps_the_old_key_during_the_grace_then_stops_it(gateway: GatewayHarness) -> None:
    old_id, old_token = gateway.issue()
    rotated = gateway.service.keys.rotate(old_id, grace=timedelta(hours=1))
    script_text(gateway, 2)
    assert ask(gateway, old_token).content and ask(gateway, rotated.token).content
    [event] = gateway.of_type("gateway.key_rotated")
    assert event.payload["old_gateway_key_id"] == old_id
    assert event.payload["new_gateway_key_id"] == rotated.record.id
    # The grace ends: the next use of the old key revokes it (once) and is refused.
    second = gateway.service.keys.rotate(rotated.record.id, grace=timedelta(seconds=1),
                                         now=datetime.now(UTC) - timedelta(hours=2))
    for _ in range(2):
        with pytest.raises(anthropic.AuthenticationError):
            ask(gateway, rotated.token)
    revoked = gateway.of_type("gateway.key_revoked")
    assert [(e.payload["gateway_key_id"], e.payload["reason"]) for e in revoked] == [
        (rotated.record.id, "grace_period_expired")]
    script_text(gateway, 1)
    assert ask(gateway, second.token).content
    assert len(gateway.upstream.requests) == 3


def test_a_revoked_key_gets_401_and_an_auth_failed_event(gateway: GatewayHarness) -> None:
    key_id, token = gateway.issue()
    gateway.service.keys.revoke(key_id)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        ask(gateway, token)
    assert caught.value.status_code == 401
    assert caught.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    [failed] = gateway.of_type("gateway.auth_failed")
    assert failed.payload["reason"] == "key_revoked" and failed.payload["gateway_key_id"] == key_id
    assert failed.payload["inbound_shape"] == "anthropic"
    assert gateway.upstream.requests == []


def test_a_cached_key_revoked_in_process_stops_at_once_and_from_another_process_within_the_horizon(
    gateway: GatewayHarness,
) -> None:
    script_text(gateway, 2)
    here_id, here = gateway.issue()
    there_id, there = gateway.issue()
    ask(gateway, here)
    ask(gateway, there)  # both keys' rows are now in the gateway's one-second cache
    gateway.service.keys.revoke(here_id)
    with pytest.raises(anthropic.AuthenticationError):
        ask(gateway, here)  # the same process's KeyService drops its cache: refused on the next call
    other_bus = EventBus()
    other = SqliteGatewayKeyStore(gateway.runtime.db_path)  # what `metis gateway keys revoke` opens
    try:
        KeyService(other, other_bus).revoke(there_id)
    finally:
        other.close()
        other_bus.shutdown(drain=True)
    deadline = time.monotonic() + KEY_CACHE_SECONDS + 1.0
    while time.monotonic() < deadline:  # another process's revocation is seen once the cached row is a second old
        try:
            gateway.service.keys.authenticate(there)
        except GatewayAuthError as error:
            assert error.reason == "key_revoked"
            break
        time.sleep(0.05)
    else:
        pytest.fail("a key revoked by another process still worked after the cache horizon")


def test_a_viewer_key_may_not_call_models_and_an_admin_key_may(gateway: GatewayHarness) -> None:
    viewer_id, viewer = gateway.issue(scope="viewer")
    _, admin = gateway.issue(scope="admin")
    with pytest.raises(anthropic.PermissionDeniedError) as caught:
        ask(gateway, viewer)
    assert caught.value.body["error"]["type"] == "permission_error"  # type: ignore[index]
    assert "scope 'viewer'" in str(caught.value) and "--scope model" in str(caught.value)
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=viewer, max_retries=0)
    with pytest.raises(openai.PermissionDeniedError) as denied:
        client.models.list()
    assert denied.value.code == "insufficient_scope"
    [failed, _] = gateway.of_type("gateway.auth_failed")
    assert failed.payload["reason"] == "insufficient_scope" and failed.payload["gateway_key_id"] == viewer_id
    assert gateway.upstream.requests == []
    script_text(gateway, 1)
    assert ask(gateway, admin).content  # an admin key calls models too, under its own terms


def test_a_budget_is_spent_over_several_calls_then_refused_with_retry_after(gateway: GatewayHarness) -> None:
    one_call = Decimal("0.000830")  # 705 input tokens at $1/M and 25 output at $5/M (haiku 4.5)
    key_id, token = gateway.issue(budget_usd=one_call * Decimal("2.5"), budget_period="day")
    script_text(gateway, 4)
    for _ in range(3):  # the third starts within budget and ends over it: finished and charged
        assert ask(gateway, token).content
    with pytest.raises(anthropic.RateLimitError) as caught:
        ask(gateway, token)
    assert int(caught.value.response.headers["retry-after"]) >= 1
    assert caught.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert len(gateway.upstream.requests) == 3
    costs = [Decimal(str(e.payload["cost_usd"])) for e in gateway.of_type("llm.call_completed")]
    assert costs == [one_call] * 3
    window = int(datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0).timestamp())
    assert gateway.service.key_store.spent("gateway_key", key_id, window) == one_call * 3
    alerts = gateway.of_type("quota.alert")
    assert [a.payload["threshold_percent"] for a in alerts] == [50, 80, 100]
    [exceeded] = gateway.of_type("gateway.quota_exceeded")
    assert exceeded.payload["cap_type"] == "daily" and exceeded.payload["gateway_key_id"] == key_id
    assert Decimal(exceeded.payload["spent_usd"]) == one_call * 3


def test_requests_per_minute(gateway: GatewayHarness) -> None:
    fresh_minute()
    _, token = gateway.issue(rpm=2)
    script_text(gateway, 2)
    ask(gateway, token)
    ask(gateway, token)
    for _ in range(2):
        with pytest.raises(anthropic.RateLimitError) as caught:
            ask(gateway, token)
        assert 1 <= int(caught.value.response.headers["retry-after"]) <= 60
    assert len(gateway.upstream.requests) == 2
    [exceeded] = gateway.of_type("gateway.quota_exceeded")  # one record for a flood of refusals
    assert exceeded.payload["cap_type"] == "rpm" and exceeded.payload["limit_per_minute"] == 2


def test_tokens_per_minute(gateway: GatewayHarness) -> None:
    fresh_minute()
    _, token = gateway.issue(tpm=500)
    script_text(gateway, 1)
    ask(gateway, token)  # 730 tokens: finished, and the minute is now over its limit
    with pytest.raises(anthropic.RateLimitError):
        ask(gateway, token)
    [exceeded] = gateway.of_type("gateway.quota_exceeded")
    assert exceeded.payload["cap_type"] == "tpm" and exceeded.payload["used_per_minute"] == 730


def test_a_model_outside_the_allow_list_is_refused_before_any_upstream_call(gateway: GatewayHarness) -> None:
    _, token = gateway.issue(allowed_models=["anthropic:claude-haiku-*"])
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        client.chat.completions.create(model="openai:gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 403 and "may not use" in caught.value.message
    assert gateway.upstream.requests == []
    script_text(gateway, 1)
    assert ask(gateway, token).content


def test_team_budget_is_shared_by_its_keys(gateway: GatewayHarness) -> None:
    from metis_core.gateway.keys import new_subject_id
    from metis_core.store.gateway_keys import SubjectLimits

    team = new_subject_id("team")
    gateway.service.key_store.set_limits(SubjectLimits("team", team, Decimal("0.001"), "month"))
    _, first = gateway.issue(team_id=team)
    _, second = gateway.issue(team_id=team)
    script_text(gateway, 2)
    ask(gateway, first)
    with pytest.raises(anthropic.RateLimitError) as caught:  # 83 % spent: the next call's worst case does not fit
        ask(gateway, second)
    assert "team" in caught.value.message and "may cost up to" in caught.value.message
    assert len(gateway.upstream.requests) == 1
    [exceeded] = gateway.of_type("gateway.quota_exceeded")
    assert exceeded.payload["scope"] == "team" and exceeded.payload["team_id"] == team


@pytest.fixture
def strict_gateway(tmp_path: Path, upstream: ReplayServer) -> GatewayHarness:
    harness = GatewayHarness(tmp_path / "home", upstream,
                             GatewaySettings(workspace=tmp_path, auth_failure_events_per_minute=3)).start()
    yield harness  # type: ignore[misc]
    harness.stop()


def test_bad_keys_get_401_in_each_shape_and_their_events_are_rate_limited(strict_gateway: GatewayHarness) -> None:
    gateway = strict_gateway
    bad = "mk_AAAAAAAA_" + "x" * 43
    for _ in range(5):
        with pytest.raises(anthropic.AuthenticationError):
            ask(gateway, bad)
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key="sk-not-a-gateway-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        client.chat.completions.create(model="openai:gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.code == "invalid_api_key"
    missing = httpx.post(gateway.base_url + "/v1/messages", json={"model": HAIKU, "messages": []})
    assert missing.status_code == 401 and missing.json()["error"]["type"] == "authentication_error"
    failed = gateway.of_type("gateway.auth_failed")
    minutes = Counter(e.timestamp.replace(second=0, microsecond=0) for e in failed)
    assert all(count <= 3 for count in minutes.values())  # at most 3 recorded in any minute
    assert len(failed) + gateway.service.key_check.failures.suppressed == 7  # every failure counted once
    if len(minutes) == 1:  # the usual case; a slow machine may cross a minute boundary mid-test
        assert len(failed) == 3
    for event in failed:
        assert bad not in str(event.payload) and "x" * 8 not in str(event.payload)
        assert len(event.payload["token_hash_prefix"]) == 8
    assert gateway.upstream.requests == []

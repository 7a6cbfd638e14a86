"""`metis gateway keys issue|list|revoke|rotate` and `limits set`: the key once, hashes on disk,
audit events in the trace, and named errors for bad options."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from metis_core.cli.app import app
from metis_core.events.envelope import SYSTEM_SESSION_ID
from metis_core.trace.store import TraceStore

runner = CliRunner()


def metis(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def audit_types() -> list[str]:
    trace = TraceStore(Path(os.environ["METIS_HOME"]) / "metis.db")
    try:
        return [e.type for e in trace.replay(SYSTEM_SESSION_ID) if e.type.startswith("gateway.")]
    finally:
        trace.close()


def test_issue_list_rotate_revoke() -> None:
    code, out = metis("gateway", "keys", "issue", "--name", "ci", "--user", "new", "--budget-usd", "5",
                      "--rpm", "10", "--models", "anthropic:*", "--json")
    assert code == 0, out
    issued = json.loads(out)
    token = issued["key"]
    assert token.startswith(issued["prefix"] + "_")
    code, out = metis("gateway", "keys", "list", "--json")
    [row] = json.loads(out)
    assert row["prefix"] == issued["prefix"] and token not in out
    assert row["budget_usd"] == "5" and row["rpm"] == 10 and row["models"] == ["anthropic:*"]
    assert row["user_id"].startswith("usr_") and row["status"] == "active"
    db = (Path(os.environ["METIS_HOME"]) / "metis.db").read_bytes()
    assert token.encode() not in db
    code, out = metis("gateway", "keys", "rotate", issued["id"], "--grace", "0s", "--json")
    assert code == 0, out
    successor = json.loads(out)
    rows = {r["id"]: r for r in json.loads(metis("gateway", "keys", "list", "--json")[1])}
    assert rows[issued["id"]]["status"] == "revoked (rotated)" and rows[successor["id"]]["status"] == "active"
    assert metis("gateway", "keys", "revoke", successor["id"])[0] == 0
    code, out = metis("gateway", "keys", "revoke", successor["id"])
    assert code != 0 and "already revoked" in out
    assert audit_types() == ["gateway.key_issued", "gateway.key_issued", "gateway.key_rotated",
                             "gateway.key_revoked", "gateway.key_revoked"]


def test_bad_options_are_named() -> None:
    code, out = metis("gateway", "keys", "issue", "--user", "alice@example.com")
    assert code != 0 and "pseudonymous" in out and "Traceback" not in out
    code, out = metis("gateway", "keys", "issue", "--budget-usd", "lots")
    assert code != 0 and "--budget-usd" in out
    code, out = metis("gateway", "keys", "rotate", "gk_nope", "--grace", "soon")
    assert code != 0 and "--grace" in out
    code, out = metis("gateway", "keys", "revoke", "gk_nope")
    assert code != 0 and "keys list" in out


def test_limits_set_for_a_team() -> None:
    code, out = metis("gateway", "keys", "issue", "--team", "new", "--json")
    assert code == 0
    team = json.loads(metis("gateway", "keys", "list", "--json")[1])[0]["team_id"]
    code, out = metis("gateway", "limits", "set", team, "--budget-usd", "100", "--rpm", "60")
    assert code == 0 and team in out


def test_a_key_has_a_scope_model_by_default_kept_through_rotation() -> None:
    code, out = metis("gateway", "keys", "issue", "--name", "web", "--scope", "admin", "--json")
    assert code == 0, out
    admin = json.loads(out)
    assert admin["scope"] == "admin"
    plain = json.loads(metis("gateway", "keys", "issue", "--name", "ci", "--json")[1])
    assert plain["scope"] == "model"
    successor = json.loads(metis("gateway", "keys", "rotate", admin["id"], "--grace", "1h", "--json")[1])
    rows = {r["id"]: r for r in json.loads(metis("gateway", "keys", "list", "--json")[1])}
    assert [rows[k]["scope"] for k in (admin["id"], plain["id"], successor["id"])] == ["admin", "model", "admin"]
    code, table = metis("gateway", "keys", "list")
    assert code == 0 and "\tadmin\t" in table and admin["key"] not in table  # not a terminal: plain rows
    code, out = metis("gateway", "keys", "issue", "--scope", "root")
    assert code != 0 and "--scope is one of model, viewer, admin" in out and "Traceback" not in out


def test_serving_the_web_view_beyond_loopback_without_an_admin_or_viewer_key_fails_at_startup() -> None:
    assert metis("gateway", "keys", "issue", "--name", "ci")[0] == 0  # a model key opens no web view
    for command in (("serve", "--host", "0.0.0.0"), ("gateway", "serve", "--web", "--host", "0.0.0.0")):
        code, out = metis(*command)
        assert code != 0 and "Traceback" not in out, out
        assert "scope admin or viewer" in out and "metis gateway keys issue --name web --scope admin" in out


def test_keys_list_shows_spent_reserved_and_remaining_of_the_budget_window() -> None:
    from datetime import UTC, datetime
    from decimal import Decimal

    from metis_core.store.gateway_keys import BudgetHold, SqliteGatewayKeyStore, budget_window
    from metis_core.store.records import to_us

    code, out = metis("gateway", "keys", "issue", "--name", "ci", "--budget-usd", "2", "--budget-period", "day",
                      "--json")
    assert code == 0, out
    key_id = json.loads(out)["id"]
    now = datetime.now(UTC)
    day = int(budget_window("day", now)[0].timestamp())
    store = SqliteGatewayKeyStore(Path(os.environ["METIS_HOME"]) / "metis.db")
    store.add_spend("gateway_key", key_id, day, Decimal("0.75"))
    store.reserve("rsv_1", [BudgetHold("gateway_key", key_id, day, Decimal("2"))], Decimal("0.5"), to_us(now),
                  to_us(now) + 60_000_000)
    store.close()
    [row] = json.loads(metis("gateway", "keys", "list", "--json")[1])
    assert (row["spent_usd"], row["reserved_usd"], row["remaining_usd"]) == ("0.75", "0.5", "0.75")
    assert metis("gateway", "keys", "list")[0] == 0

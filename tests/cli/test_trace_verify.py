"""`metis trace verify FILE`: an exported log verifies; a tampered, truncated or foreign one exits 7
naming the first broken entry. Seeded like test_admin_commands: one real `metis run` over recordings."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from metis_core.hashing import json_hash

from .test_admin_commands import Cli, cli  # noqa: F401  (the seeded-CLI fixture)


def exported_log(cli: Cli, tmp_path: Path) -> Path:  # noqa: F811
    path = tmp_path / "session.eventlog.jsonl"
    done = cli("trace", "export", cli.session_id, "--format", "eventlog", "--out", str(path))
    assert done.exit_code == 0, done.stderr
    return path


def test_an_exported_log_verifies_and_prints_its_head(cli: Cli, tmp_path: Path) -> None:  # noqa: F811
    path = exported_log(cli, tmp_path)
    lines = path.read_bytes().splitlines()
    head = orjson.loads(lines[-1])["entry_hash"]
    exported = cli("trace", "export", cli.session_id, "--format", "eventlog", "--out", str(tmp_path / "again.jsonl"))
    assert f"head {head}" in exported.stderr  # what to keep for --head
    done = cli("trace", "verify", str(path))
    assert done.exit_code == 0, done.stderr
    assert f"intact, {len(lines)} entries, head {head}" in done.stdout
    document = json.loads(cli("trace", "verify", str(path), "--json", "--head", head).stdout)
    assert document == {"file": str(path), "ok": True, "entries": len(lines), "head_hash": head,
                        "first_break": None, "error": None}


def test_an_edited_payload_exits_7_and_names_the_line_and_sequence(cli: Cli, tmp_path: Path) -> None:  # noqa: F811
    path = exported_log(cli, tmp_path)
    lines = path.read_bytes().splitlines()
    target = next(i for i, line in enumerate(lines) if b'"MODEL_RESPONSE"' in line)
    entry = orjson.loads(lines[target])
    entry["payload"]["usage"]["completion_tokens"] += 1
    lines[target] = orjson.dumps(entry)
    path.write_bytes(b"\n".join(lines) + b"\n")
    done = cli("trace", "verify", str(path))
    assert done.exit_code == 7
    assert f"broken at line {target + 1} (sequence {target}): payload_hash does not match" in done.stderr
    assert f"the {target} entries before it verify" in done.stderr
    document = json.loads(cli("trace", "verify", str(path), "--json").stdout)
    assert document["ok"] is False and document["entries"] == target
    assert document["first_break"]["line"] == target + 1 and document["first_break"]["sequence"] == target


def test_a_rehashed_payload_that_breaks_its_schema_is_caught(cli: Cli, tmp_path: Path) -> None:  # noqa: F811
    """Someone who recomputes every hash still cannot write a payload SCHEMA.md forbids."""
    from metis_core.export.event_log_chain import entry_hash

    path = exported_log(cli, tmp_path)
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    target = next(i for i, e in enumerate(lines) if e["event_type"] == "MODEL_RESPONSE")
    lines[target]["payload"]["finish_reason"] = "refused_by_me"
    previous = lines[target - 1]["entry_hash"]
    for entry in lines[target:]:  # re-seal the rest of the chain
        entry["prev_hash"] = previous
        entry["payload_hash"] = json_hash(entry["payload"])
        entry["entry_hash"] = previous = entry_hash(entry)
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in lines))
    done = cli("trace", "verify", str(path))
    assert done.exit_code == 7
    assert f"line {target + 1}" in done.stderr and "MODEL_RESPONSE payload breaks SCHEMA.md v0.2 at finish_reason" \
        in done.stderr


def test_a_log_cut_short_verifies_alone_but_not_against_its_recorded_head(
    cli: Cli, tmp_path: Path  # noqa: F811
) -> None:
    path = exported_log(cli, tmp_path)
    lines = path.read_bytes().splitlines()
    head = orjson.loads(lines[-1])["entry_hash"]
    path.write_bytes(b"\n".join(lines[:-1]) + b"\n")
    assert cli("trace", "verify", str(path)).exit_code == 0
    done = cli("trace", "verify", str(path), "--head", head)
    assert done.exit_code == 7 and f"end at head {orjson.loads(lines[-2])['entry_hash']}, not {head}" in done.stderr


def test_a_file_that_is_not_a_log_and_a_missing_file(cli: Cli, tmp_path: Path) -> None:  # noqa: F811
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    done = cli("trace", "verify", str(other))
    assert done.exit_code == 7 and "broken at line 1: not valid JSON" in done.stderr
    assert cli("trace", "verify", str(tmp_path / "absent.jsonl")).exit_code == 2


def test_the_store_check_passes_on_a_real_run_and_names_a_lost_parent(cli: Cli) -> None:  # noqa: F811
    import sqlite3

    done = cli("trace", "verify", "--store")
    assert done.exit_code == 0, done.stderr
    assert "trace store intact:" in done.stdout and "that name one are stored" in done.stdout
    db = sqlite3.connect(cli.database)
    (parent,) = db.execute("SELECT parent_event_id FROM events WHERE type = 'llm.call_completed' LIMIT 1").fetchone()
    db.execute("DELETE FROM events WHERE id = ?", (parent,))  # emitted, never written: a causal gap
    db.commit()

    lost = cli("trace", "verify", "--store")
    assert lost.exit_code == 7
    assert f"session {cli.session_id} (missing {parent})" in lost.stderr and "1 parent event(s)" in lost.stderr
    document = json.loads(cli("trace", "verify", "--store", "--json").stdout)
    assert document["ok"] is False and document["missing_parents"] == 1
    assert document["gaps"] == [{"session_id": cli.session_id, "missing_ids": [parent]}]

    # The same absence below retention's floor is what pruning leaves behind: not a fault.
    db.execute("INSERT OR REPLACE INTO trace_state (key, value) VALUES ('pruned_before_us', ?)", (2**62,))
    db.commit()
    db.close()
    pruned = cli("trace", "verify", "--store")
    assert pruned.exit_code == 0 and "(or pruned by retention: 1)" in pruned.stdout


def test_verify_takes_a_file_or_the_store(cli: Cli, tmp_path: Path) -> None:  # noqa: F811
    assert cli("trace", "verify").exit_code == 2
    both = cli("trace", "verify", str(exported_log(cli, tmp_path)), "--store")
    assert both.exit_code == 2 and "not both" in both.stderr

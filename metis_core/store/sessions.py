"""`SessionStore`: sessions and their canonical messages, on SQLite or PostgreSQL.

Each write is one short IMMEDIATE transaction, so a message and its tool_call rows land
together, readers in other processes never see half a message, and a second writing process
waits on the busy timeout. Loading returns `Message` objects equal to the ones written.
The store does not route, call providers or emit events; export/import lives in `transfer.py`.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import orjson

from metis_core.errors import MetisError, SessionExistsError, SessionNotFoundError, StoreError
from metis_core.ids import new_session_id
from metis_core.store.backend import Location, SharedDatabase, open_backend
from metis_core.store.migrations import SCHEMA_VERSION
from metis_core.store.multi_row_insert import multi_row_inserts
from metis_core.store.records import (
    SESSION_COLUMNS,
    TOOL_CALL_COLUMNS,
    SessionRecord,
    SessionTotals,
    ToolCallRecord,
    ToolCallStatus,
    ToolIdMap,
    from_us,
    now_us,
    session_from_row,
    to_us,
    tool_call_from_row,
)
from metis_core.store.session_page import SessionPage, SessionQuery, read_session_page

if TYPE_CHECKING:  # the message model (pydantic) loads where messages are written or read, not to list sessions
    from metis_core.messages import Message

ASSISTANT = "assistant"
"""Role.ASSISTANT as stored."""


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()
"""Default of `update_session` arguments: leave the field as it is (None clears it)."""


WORKSPACE_LABEL = re.compile(r"^[a-z][a-z0-9_]*:[^/\\]")
"""A workspace that is a label, not a folder: `gateway:<key id>` (a gateway key's calls), kept as written."""


def normalize_workspace(path: str | Path) -> str:
    """A folder as its absolute resolved path; a label (`gateway:gk_...`) unchanged."""
    if isinstance(path, str) and WORKSPACE_LABEL.match(path):
        return path
    return str(Path(path).expanduser().resolve())


@functools.lru_cache(maxsize=1024)
def _normalized_in(cwd: str, path: str) -> str:
    return normalize_workspace(path)


def _answers_where(session_id: str | None, since: datetime | None) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause and parameters of one session's (or every session's) assistant messages since `since`."""
    clauses: list[str] = ["role = ?"]
    params: list[Any] = [ASSISTANT]
    if session_id is not None:
        clauses.append("session_id = ?")
        params.append(session_id)
    if since is not None:
        clauses.append("created_at >= ?")
        params.append(to_us(since))
    return " AND ".join(clauses), tuple(params)


def _json_text(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _check_tool_id_map(value: Mapping[Any, Any]) -> ToolIdMap:  # Any: it checks what the caller gave
    checked: ToolIdMap = {}
    for canonical, by_provider in value.items():
        if not isinstance(canonical, str) or not isinstance(by_provider, Mapping):
            raise StoreError("tool_id_map must map canonical ids to {provider: provider_id} dicts")
        inner: dict[Any, Any] = dict(by_provider)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in inner.items()):
            raise StoreError(f"tool_id_map[{canonical!r}] must map provider names to id strings")
        checked[canonical] = inner
    return checked


@dataclass(slots=True)
class StoredConversation:
    """One new session and its messages, as `SessionStore.store_conversations` writes it.

    Not frozen: a frozen dataclass's `__init__` sets each field through `object.__setattr__`, three
    times the work of a plain one, once per gateway call. Nothing changes one after it is made."""

    workspace_path: str
    session_id: str
    messages: list[Message]
    active_model: str | None = None
    title: str | None = None
    tool_id_map: Mapping[str, Mapping[str, str]] | None = None
    stamp_us: int = 0


@dataclass(frozen=True)
class SessionDeletion:
    """What `delete_session` removed (and the audit events it kept)."""

    record: SessionRecord
    messages_deleted: int
    events_deleted: int
    audit_events_kept: int


class SessionStore:
    """Sessions, messages and tool calls. Safe to share between threads; one connection."""

    def __init__(self, db_path: Location | SharedDatabase | None = None) -> None:
        """`db_path`: a SQLite file or a postgresql:// URL; by default METIS_DATABASE_URL,
        `database_url:` in config.yaml, or METIS_HOME/metis.db (see `store.backend`). A
        `SharedDatabase` gives the store its own view on a pool other stores share."""
        self._db = open_backend(db_path)
        self.path = self._db.location
        self._lock = threading.RLock()

    # --- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- sessions --------------------------------------------------------------------------

    def create_session(
        self,
        workspace_path: str | Path,
        active_model: str | None = None,
        session_id: str | None = None,
        *,
        title: str | None = None,
        routing_policy: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
        replay_of: str | None = None,
    ) -> SessionRecord:
        """A new session; `replay_of` names the session a `metis replay` run re-runs."""
        sid = session_id or new_session_id()
        stamp = now_us()
        with self._lock, self._db.transaction():
            self._insert_session_row(
                sid, normalize_workspace(workspace_path), active_model, routing_policy, {}, title, stamp, stamp,
                parent_session_id=parent_session_id, replay_of=replay_of,
            )
        return self.get_session(sid)

    def store_conversation(
        self,
        workspace_path: str | Path,
        session_id: str,
        messages: Iterable[Message],
        *,
        active_model: str | None = None,
        title: str | None = None,
    ) -> None:
        """A new session and all its messages in one transaction: all of it or none (gateway calls)."""
        from metis_core.store.message_append import insert_message

        stamp = now_us()
        with self._lock, self._db.transaction():
            self._insert_session_row(
                session_id, normalize_workspace(workspace_path), active_model, None, {}, title, stamp, stamp
            )
            for message in messages:
                insert_message(self._db, message)

    def store_conversations(self, conversations: Iterable[StoredConversation]) -> list[tuple[str, MetisError]]:
        """Many `store_conversation`s in one transaction, each under its own savepoint.

        One conversation that cannot be stored (its session exists, a message is refused) is rolled
        back alone and returned with its error; the others commit. A failure of the transaction
        itself (the database locked past the busy timeout, disk full) raises, nothing committed.
        """
        from metis_core.store.message_append import insert_message

        items = list(conversations)
        with self._lock:
            if self._store_prepared(items):
                return []
        refused: list[tuple[str, MetisError]] = []
        with self._lock, self._db.transaction():
            for item in items:
                self._db.execute("SAVEPOINT conversation")
                try:
                    tool_map = _check_tool_id_map(item.tool_id_map) if item.tool_id_map else {}
                    self._insert_session_row(
                        item.session_id, normalize_workspace(item.workspace_path), item.active_model, None,
                        tool_map, item.title, item.stamp_us, item.stamp_us,
                    )
                    for message in item.messages:
                        insert_message(self._db, message)
                except MetisError as error:
                    self._db.execute("ROLLBACK TO SAVEPOINT conversation")  # SQLite and PostgreSQL alike
                    refused.append((item.session_id, error))
                self._db.execute("RELEASE SAVEPOINT conversation")
        return refused

    def _store_prepared(self, items: list[StoredConversation]) -> bool:
        """The whole batch as prepared rows in one transaction (multi-row INSERTs); False, with nothing
        written, when a conversation needs the checked path or the database refuses a row."""
        from metis_core.store.conversation_batch import (
            INSERT_MESSAGE,
            INSERT_SESSION,
            INSERT_TOOL_CALL,
            TOOL_CALL_NULLABLE,
            conversation_rows,
        )

        cwd = os.getcwd()  # once per batch: the gateway's calls share a few workspaces, each resolved once
        workspaces = {path: _normalized_in(cwd, path) for path in {item.workspace_path for item in items}}
        rows = conversation_rows(items, workspaces, SCHEMA_VERSION)
        if rows is None:
            return False
        try:
            with self._db.transaction():  # many rows per statement: one step each, not one per row
                for insert, table_rows, nullable in ((INSERT_SESSION, rows.sessions, ()),
                                                     (INSERT_MESSAGE, rows.messages, ()),
                                                     (INSERT_TOOL_CALL, rows.tool_calls, TOOL_CALL_NULLABLE)):
                    for statement, params in multi_row_inserts(insert, table_rows, nullable=nullable):
                        self._db.execute(statement, params)
        except self._db.duplicate_error:
            return False  # a taken session or message id: the savepoint path isolates and names it
        except StoreError as error:
            if isinstance(error.__cause__, self._db.duplicate_error):
                return False
            raise
        return True

    def _insert_session_row(
        self,
        sid: str,
        workspace: str,
        active_model: str | None,
        routing_policy: dict[str, Any] | None,
        tool_id_map: ToolIdMap,
        title: str | None,
        created_at_us: int,
        updated_at_us: int,
        *,
        parent_session_id: str | None = None,
        replay_of: str | None = None,
    ) -> None:
        """Inside a held transaction."""
        try:
            self._db.execute(
                "INSERT INTO sessions (id, workspace_path, active_model, routing_policy_json, "
                "tool_id_map_json, title, schema_version, created_at, updated_at, parent_session_id, replay_of) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sid,
                    workspace,
                    active_model,
                    _json_text(routing_policy) if routing_policy is not None else None,
                    _json_text(tool_id_map),
                    title,
                    SCHEMA_VERSION,
                    created_at_us,
                    updated_at_us,
                    parent_session_id,
                    replay_of,
                ),
            )
        except self._db.duplicate_error as error:
            raise SessionExistsError(
                f"session {sid} already exists in {self.path}; pick another id or import as a new session"
            ) from error

    def get_session(self, session_id: str) -> SessionRecord:
        with self._lock, self._db.errors():
            row = self._db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise SessionNotFoundError(
                f"no session {session_id} in {self.path}; `metis sessions` lists the stored ones"
            )
        return session_from_row(row)

    def worker_sessions(self, parent_session_id: str) -> list[SessionRecord]:
        """The worker sessions a planner session delegated to, oldest first."""
        with self._lock, self._db.errors():
            rows = self._db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE parent_session_id = ? ORDER BY created_at, id",
                (parent_session_id,),
            ).fetchall()
        return [session_from_row(row) for row in rows]

    def replays_of(self, session_id: str) -> list[SessionRecord]:
        """The sessions `metis replay` made from this one, oldest first."""
        with self._lock, self._db.errors():
            rows = self._db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE replay_of = ? ORDER BY created_at, id",
                (session_id,),
            ).fetchall()
        return [session_from_row(row) for row in rows]

    def has_session(self, session_id: str) -> bool:
        with self._lock, self._db.errors():
            return self._db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None

    def delete_session(self, session_id: str) -> SessionDeletion:
        """Delete a session, its messages, tool calls and trace events in one transaction.

        Audit events of the session are kept (they are never deleted). SessionNotFoundError if
        the id is unknown. Recording the deletion (session.deleted) is the caller's job.
        """
        from metis_core.events.catalog import AUDIT_EVENT_TYPES

        record = self.get_session(session_id)
        audit = sorted(AUDIT_EVENT_TYPES)
        marks = ", ".join("?" for _ in audit)
        with self._lock, self._db.transaction():
            messages = self._db.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?",
                                          (session_id,)).fetchone()[0]
            self._db.execute("DELETE FROM tool_calls WHERE session_id = ?", (session_id,))
            self._db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            events = self._db.execute(f"DELETE FROM events WHERE session_id = ? AND type NOT IN ({marks})",
                                        (session_id, *audit)).rowcount
            kept = self._db.execute(f"SELECT COUNT(*) FROM events WHERE session_id = ? AND type IN ({marks})",
                                      (session_id, *audit)).fetchone()[0]
            self._db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return SessionDeletion(record, int(messages), int(events), int(kept))

    def reclaim_deleted(self) -> None:
        """After deleting what must not be kept (`metis users forget`): on SQLite, rewrite the file
        without the freed pages (VACUUM) and empty the write-ahead log, so deleted text is gone from
        the bytes on disk and from any backup made afterwards. PostgreSQL's deleted rows are already
        invisible to every query and dump; autovacuum reclaims their space."""
        if self._db.backend != "sqlite":
            return
        with self._lock, self._db.errors():
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def session_ids_starting_with(self, prefix: str, limit: int = 10) -> list[str]:
        """Stored session ids that begin with `prefix`, most recently updated first."""
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._lock, self._db.errors():
            rows = self._db.execute(
                "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY updated_at DESC, id DESC LIMIT ?",
                (pattern, limit),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def idle_sessions(self, before: datetime, limit: int = 1000) -> list[SessionRecord]:
        """Open sessions last updated before `before`, the longest idle first. The gateway's (one
        per call, workspace `gateway:<key id>`) are not among them: each records one whole request."""
        with self._lock, self._db.errors():
            rows = self._db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE ended_at IS NULL AND updated_at < ?"
                " AND workspace_path NOT LIKE 'gateway:%' ORDER BY updated_at, id LIMIT ?", (to_us(before), limit),
            ).fetchall()
        return [session_from_row(row) for row in rows]

    def end_if_idle(self, session_id: str, before: datetime, disposition: str = "abandoned") -> bool:
        """End the session only if it is still open and untouched since before `before`; False when
        another process ended or used it meanwhile (several servers may sweep one store at once)."""
        stamp = now_us()
        with self._lock, self._db.transaction():
            cursor = self._db.execute(
                "UPDATE sessions SET updated_at = ?, ended_at = ?, disposition = ?"
                " WHERE id = ? AND ended_at IS NULL AND updated_at < ?",
                (stamp, stamp, disposition, session_id, to_us(before)),
            )
            return bool(cursor.rowcount)

    def list_sessions(self, limit: int = 50, workspace: str | Path | None = None) -> list[SessionRecord]:
        """Most recently updated first, optionally only those of one workspace."""
        query = f"SELECT {SESSION_COLUMNS} FROM sessions"
        params: list[Any] = []
        if workspace is not None:
            query += " WHERE workspace_path = ?"
            params.append(normalize_workspace(workspace))
        query += " ORDER BY updated_at DESC, id DESC LIMIT ?"
        params.append(limit)
        with self._lock, self._db.errors():
            rows = self._db.execute(query, params).fetchall()
        return [session_from_row(row) for row in rows]

    def search_sessions(self, text: str, limit: int = 50) -> list[SessionRecord]:
        """Sessions whose title or any text block of any message contains `text` (ASCII case-insensitive)."""
        if not text:
            return self.list_sessions(limit)
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        query = self._db.statements.search_sessions.format(columns=SESSION_COLUMNS)
        with self._lock, self._db.errors():
            rows = self._db.execute(query, (pattern, limit)).fetchall()
        return [session_from_row(row) for row in rows]

    def session_page(self, query: SessionQuery) -> SessionPage:
        """One page of the console's sessions table (store/session_page.py)."""
        with self._lock, self._db.errors():
            return read_session_page(self._db, query)

    def update_session(
        self,
        session_id: str,
        *,
        active_model: str | _Unset | None = UNSET,
        tool_id_map: Mapping[str, Mapping[str, str]] | _Unset = UNSET,
        routing_policy: dict[str, Any] | _Unset | None = UNSET,
        title: str | _Unset | None = UNSET,
    ) -> SessionRecord:
        """Change the given fields only; `tool_id_map` replaces the stored map as a whole."""
        assignments = ["updated_at = ?"]
        values: list[Any] = [now_us()]
        if not isinstance(active_model, _Unset):
            assignments.append("active_model = ?")
            values.append(active_model)
        if not isinstance(tool_id_map, _Unset):
            assignments.append("tool_id_map_json = ?")
            values.append(_json_text(_check_tool_id_map(tool_id_map)))
        if not isinstance(routing_policy, _Unset):
            assignments.append("routing_policy_json = ?")
            values.append(None if routing_policy is None else _json_text(routing_policy))
        if not isinstance(title, _Unset):
            assignments.append("title = ?")
            values.append(title)
        self._update(session_id, assignments, values)
        return self.get_session(session_id)

    def end_session(
        self, session_id: str, disposition: str = "completed", ended_at: datetime | None = None
    ) -> SessionRecord:
        """Mark the session ended (completed, abandoned, error ...); it can still be resumed."""
        stamp = now_us() if ended_at is None else to_us(ended_at)
        self._update(session_id, ["updated_at = ?", "ended_at = ?", "disposition = ?"], [now_us(), stamp, disposition])
        return self.get_session(session_id)

    def _update(self, session_id: str, assignments: list[str], values: list[Any]) -> None:
        with self._lock, self._db.transaction():
            cursor = self._db.execute(
                f"UPDATE sessions SET {', '.join(assignments)} WHERE id = ?", (*values, session_id)
            )
            if cursor.rowcount == 0:
                raise SessionNotFoundError(f"no session {session_id} in {self.path}")

    # --- messages --------------------------------------------------------------------------

    def append_message(self, message: Message, *, provider_ids: Mapping[str, str] | None = None) -> None:
        """Store one message with its tool-call bookkeeping, atomically.

        `provider_ids` maps this message's canonical tool_use ids to the ids its provider
        issued; they are kept on the tool_calls rows and merged into the session's tool-id map.
        """
        from metis_core.store.message_append import insert_message

        with self._lock, self._db.transaction():
            insert_message(self._db, message, provider_ids)

    def append_messages(self, messages: Iterable[Message]) -> None:
        """Store several messages in one transaction: all of them or none."""
        from metis_core.store.message_append import insert_message

        with self._lock, self._db.transaction():
            for message in messages:
                insert_message(self._db, message)

    def load_messages(self, session_id: str) -> list[Message]:
        """Every message of the session in id order, equal to what was appended."""
        from metis_core.store.message_rows import gc_paused, messages_from_rows

        with self._lock, self._db.errors(), gc_paused():
            if not self._db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                raise SessionNotFoundError(f"no session {session_id} in {self.path}")
            select = self._db.statements.message_select
            rows = self._db.execute(f"{select} WHERE session_id = ? ORDER BY id", (session_id,)).fetchall()
            return messages_from_rows(rows)

    def answers(self, *, session_id: str | None = None, since: datetime | None = None) -> list[Message]:
        """The assistant messages of one session or of every session (created at or after `since`),
        in one query: what spend is summed from, without reading each session's whole history."""
        from metis_core.store.message_rows import gc_paused, messages_from_rows

        where, params = _answers_where(session_id, since)
        with self._lock, self._db.errors(), gc_paused():
            select = self._db.statements.message_select
            rows = self._db.execute(f"{select} WHERE {where} ORDER BY session_id, id", params).fetchall()
            return messages_from_rows(rows)

    def answer_metadata(self, *, session_id: str | None = None,
                        since: datetime | None = None) -> list[tuple[str, datetime, dict[str, Any]]]:
        """(session id, created_at, metadata in its JSON form) of the messages `answers` returns, in the
        same order, without building them: what `metis cost` groups and sums. A row stored at an older
        message schema is read through `Message` (its migrations), so every row reads as the current shape."""
        from metis_core.messages.migrations import SCHEMA_VERSION as MESSAGE_SCHEMA_VERSION

        where, params = _answers_where(session_id, since)
        with self._lock, self._db.errors():
            rows = self._db.execute(f"SELECT id, session_id, created_at, metadata_json, schema_version FROM messages "
                                    f"WHERE {where} ORDER BY session_id, id", params).fetchall()
            older = [row[0] for row in rows if row[4] != MESSAGE_SCHEMA_VERSION]
            migrated = self._metadata_through_messages(older) if older else {}
        return [(sid, from_us(created), migrated[mid] if mid in migrated else
                 orjson.loads(metadata) if isinstance(metadata, (str, bytes)) else dict(metadata or {}))
                for mid, sid, created, metadata, _ in rows]

    def _metadata_through_messages(self, message_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        from metis_core.store.message_rows import messages_from_rows

        select, rows = self._db.statements.message_select, []
        for start in range(0, len(message_ids), 500):  # within every backend's limit on parameters
            chunk = tuple(message_ids[start:start + 500])
            marks = ", ".join("?" for _ in chunk)
            rows += self._db.execute(f"{select} WHERE id IN ({marks})", chunk).fetchall()
        return {m.id: m.metadata.model_dump(mode="json") for m in messages_from_rows(rows)}

    def answering_models(self, session_ids: Sequence[str]) -> dict[str, str]:
        """The model of each session's most recent answer (sessions without one are left out)."""
        if not session_ids:
            return {}
        marks = ", ".join("?" for _ in session_ids)
        with self._lock, self._db.errors():  # each session's last answer only: one metadata read per session
            rows = self._db.execute(
                "SELECT m.session_id, m.metadata_json FROM messages m JOIN (SELECT session_id, MAX(id) AS last "
                f"FROM messages WHERE role = 'assistant' AND session_id IN ({marks}) GROUP BY session_id) a "
                "ON m.session_id = a.session_id AND m.id = a.last", tuple(session_ids)).fetchall()
        found: dict[str, str] = {}
        for session_id, metadata in rows:
            model = (orjson.loads(metadata) if isinstance(metadata, (str, bytes)) else metadata or {}).get("model")
            if model:
                found[session_id] = str(model)
        return found

    def message_count(self, session_id: str) -> int:
        with self._lock, self._db.errors():
            (count,) = self._db.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
        return int(count)

    # --- tool calls and totals -------------------------------------------------------------

    def tool_calls(self, session_id: str, status: ToolCallStatus | None = None) -> list[ToolCallRecord]:
        query = f"SELECT {TOOL_CALL_COLUMNS} FROM tool_calls WHERE session_id = ?"
        params: list[Any] = [session_id]
        if status is not None:
            query += " AND status = ?"
            params.append(status.value)
        with self._lock, self._db.errors():
            rows = self._db.execute(query + " ORDER BY created_at, id", params).fetchall()
        return [tool_call_from_row(row) for row in rows]

    def cancel_pending_tool_calls(self, session_id: str) -> int:
        """Mark every still-pending call of the session cancelled (a turn was aborted)."""
        with self._lock, self._db.transaction():
            cursor = self._db.execute(
                "UPDATE tool_calls SET status = ?, completed_at = ? WHERE session_id = ? AND status = ?",
                (ToolCallStatus.CANCELLED.value, now_us(), session_id, ToolCallStatus.PENDING.value),
            )
        return cursor.rowcount

    def session_totals(self, session_id: str) -> SessionTotals:
        """Usage summed from the assistant messages themselves (not the running columns)."""
        from metis_core.messages.call_spend import CLIENT_HISTORY

        with self._lock, self._db.errors():
            (count,) = self._db.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
            rows = self._db.execute(
                self._db.statements.usage_and_model, (session_id, ASSISTANT)
            ).fetchall()
        sums = dict.fromkeys(
            ("input_tokens", "output_tokens", "cached_input_tokens", "cache_creation_input_tokens", "reasoning_tokens"),
            0,
        )
        cost, unpriced, calls, models = Decimal(0), 0, 0, []
        for usage_json, model, model_calls, unpriced_calls in rows:
            if model and model not in models:
                models.append(model)
            if usage_json is None:
                continue  # a partial answer cut short: no completed call, nothing charged
            usage = orjson.loads(usage_json)
            if usage.get("pricing_version") != CLIENT_HISTORY:
                calls += int(model_calls or 1)
            for key in sums:
                sums[key] += int(usage.get(key) or 0)
            if unpriced_calls is not None:
                unpriced += int(unpriced_calls)
            elif usage.get("cost_usd") is None:
                unpriced += 1
            if usage.get("cost_usd") is not None:
                cost += Decimal(usage["cost_usd"])
        return SessionTotals(
            message_count=int(count),
            assistant_message_count=len(rows),
            cost_usd=cost,
            unpriced_message_count=unpriced,
            models=tuple(models),
            model_calls=calls,
            **sums,
        )

    # --- export / import -------------------------------------------------------------------

    def export_session(self, session_id: str) -> dict[str, Any]:
        """The session and its messages as one JSON-ready dict (see `transfer.py`)."""
        from metis_core.store.transfer import session_export

        return session_export(self.get_session(session_id), self.load_messages(session_id))

    def import_session(self, data: Mapping[str, Any], *, as_new_session: bool = False) -> SessionRecord:
        """Store an exported session. An id already present is refused unless `as_new_session`,
        which stores a copy under fresh session, message and tool-use ids."""
        from metis_core.store.message_append import insert_message
        from metis_core.store.transfer import parse_export

        parsed = parse_export(data, renumber=as_new_session)
        session = parsed.session
        with self._lock, self._db.transaction():
            self._insert_session_row(
                session.id,
                session.workspace_path,
                session.active_model,
                session.routing_policy,
                session.tool_id_map,
                session.title,
                to_us(session.created_at),
                now_us(),
                replay_of=session.replay_of,
            )
            for message in parsed.messages:
                insert_message(self._db, message)
            if session.ended_at is not None:
                self._db.execute(
                    "UPDATE sessions SET ended_at = ?, disposition = ? WHERE id = ?",
                    (to_us(session.ended_at), session.disposition, session.id),
                )
        return self.get_session(session.id)

"""`EventPositions`: PostgreSQL's events in commit order, for a live feed across processes.

Every event row has a position (txid, seq) (migration `events_live_position`). Reads stop below the
oldest transaction still running (`pg_snapshot_xmin`), so a row committed later can never land
behind a position already read: reading "after the last position" loses nothing and repeats nothing.
One dedicated connection LISTENs on `metis_events`; its NOTIFY payloads ("txid:seq") only say that
something new is there. Rows come back raw (the event columns); the trace layer builds the events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

Position = tuple[int, int]
"""(transaction id, sequence number): the order events were committed in."""
START: Position = (0, 0)
"""Before every event (rows stored before positions existed have txid 0 and a seq)."""
CHANNEL = "metis_events"
APPLICATION_NAME = "metis-live-feed"
"""What `pg_stat_activity.application_name` shows for the listening connection."""

_COLUMNS = "id, timestamp_us, session_id, turn_id, parent_event_id, type, actor, sensitivity, payload_json::text"
_HORIZON = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
_AFTER = (
    f"SELECT txid, seq, {_COLUMNS} FROM events WHERE (txid, seq) > (%s, %s) AND txid < {_HORIZON} "
    "ORDER BY txid, seq LIMIT %s"
)
_LAST = f"SELECT txid, seq FROM events WHERE txid < {_HORIZON} ORDER BY txid DESC, seq DESC LIMIT 1"
_ANY_AFTER = "SELECT EXISTS (SELECT 1 FROM events WHERE (txid, seq) > (%s, %s))"
_POSITION_OF = "SELECT txid, seq FROM events WHERE id = %s"


def parse_payload(payload: str) -> Position | None:
    """The position a NOTIFY carries, or None when it is not one of ours."""
    txid, _, seq = payload.partition(":")
    try:
        return int(txid), int(seq)
    except ValueError:
        return None


class EventPositions:
    """One connection in autocommit mode. Not thread-safe: one thread uses it (the feed's own, or a
    replay's). `listen=True` subscribes it to the NOTIFY channel."""

    def __init__(self, url: str, *, listen: bool = False, connect_timeout: float = 10.0) -> None:
        self.conn: psycopg.Connection[Any] = psycopg.connect(
            url, autocommit=True, application_name=APPLICATION_NAME if listen else "metis",
            connect_timeout=max(1, int(connect_timeout)))
        if listen:
            self.conn.execute(f"LISTEN {CHANNEL}")

    def close(self) -> None:
        self.conn.close()

    def last(self) -> Position:
        """The newest position every reader can already see (START on an empty table)."""
        row = self.conn.execute(_LAST).fetchone()
        return START if row is None else (int(row[0]), int(row[1]))

    def after(self, position: Position, limit: int) -> list[tuple[Position, tuple[Any, ...]]]:
        """Up to `limit` committed rows after `position`, in position order, with their positions."""
        rows = self.conn.execute(_AFTER, (*position, limit)).fetchall()
        return [((int(r[0]), int(r[1])), tuple(r[2:])) for r in rows]

    def any_after(self, position: Position) -> bool:
        """Whether a row past `position` exists, visible or still behind a running transaction."""
        row = self.conn.execute(_ANY_AFTER, position).fetchone()
        return bool(row and row[0])

    def position_of(self, event_id: str) -> Position | None:
        row = self.conn.execute(_POSITION_OF, (event_id,)).fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def between(self, after: Position, upto: Position, *, after_id: str | None, session_ids: Sequence[str] | None,
                types: Sequence[str] | None, limit: int) -> list[tuple[Any, ...]]:
        """Rows in (after, upto], in position order: a reconnecting client's replay. `after_id`
        additionally keeps only ids past it (the client's last id is not stored any more)."""
        clauses = ["(txid, seq) > (%s, %s)", "(txid, seq) <= (%s, %s)"]
        params: list[Any] = [*after, *upto]
        if after_id is not None:
            clauses.append("id > %s")
            params.append(after_id)
        if session_ids is not None:
            clauses.append("session_id = ANY(%s)")
            params.append(list(session_ids))
        if types is not None:
            clauses.append("type = ANY(%s)")
            params.append(list(types))
        sql = f"SELECT {_COLUMNS} FROM events WHERE {' AND '.join(clauses)} ORDER BY txid, seq LIMIT %s"
        return [tuple(row) for row in self.conn.execute(sql, [*params, limit]).fetchall()]

    def wait(self, timeout: float) -> list[Position]:
        """The positions NOTIFYs announced within `timeout` seconds (empty when none came); every
        notification already queued is taken, so a burst costs one wakeup."""
        found = [parse_payload(n.payload) for n in self.conn.notifies(timeout=timeout, stop_after=1)]
        found += [parse_payload(n.payload) for n in self.conn.notifies(timeout=0)]
        return [position for position in found if position is not None]

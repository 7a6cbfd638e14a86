"""The statements only SQLite speaks (INSERT OR IGNORE, json_extract/json_each, rowid, strftime)."""

from metis_core.store.backend import Statements

_EVENT_COLUMNS = "id, timestamp_us, session_id, turn_id, parent_event_id, type, actor, sensitivity, payload_json"

STATEMENTS = Statements(
    insert_event=f"INSERT OR IGNORE INTO events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    insert_events_prefix=f"INSERT OR IGNORE INTO events ({_EVENT_COLUMNS}) VALUES ",
    conflict_ignore="",
    message_select=(
        "SELECT id, session_id, role, content_json, metadata_json, "
        # created_at is stored in unix microseconds; SQLite renders the same text format_timestamp does
        "strftime('%Y-%m-%dT%H:%M:%S', created_at / 1000000, 'unixepoch') "
        "|| printf('.%06dZ', created_at % 1000000), schema_version FROM messages"
    ),
    search_sessions=(
        "SELECT {columns} FROM sessions WHERE title LIKE ?1 ESCAPE '\\' OR id IN ("
        "SELECT m.session_id FROM messages m, json_each(m.content_json) b "
        "WHERE json_extract(b.value, '$.type') = 'text' "
        "AND json_extract(b.value, '$.text') LIKE ?1 ESCAPE '\\') "
        "ORDER BY updated_at DESC, id DESC LIMIT ?2"
    ),
    usage_and_model=(
        "SELECT json_extract(metadata_json, '$.usage'), json_extract(metadata_json, '$.model'), "
        "json_extract(metadata_json, '$.model_calls'), json_extract(metadata_json, '$.unpriced_calls') "
        "FROM messages WHERE session_id = ? AND role = ? ORDER BY id"
    ),
    delete_expired_events="DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE {expired} LIMIT ?)",
    session_for_append="SELECT tool_id_map_json, total_cost_usd FROM sessions WHERE id = ?",
    transaction_lock="SELECT ?",
)

"""The statements only PostgreSQL speaks (ON CONFLICT DO NOTHING, jsonb operators, ctid, to_char)."""

from metis_core.store.backend import Statements

_EVENT_COLUMNS = "id, timestamp_us, session_id, turn_id, parent_event_id, type, actor, sensitivity, payload_json"

STATEMENTS = Statements(
    insert_event=(
        f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
    ),
    insert_events_prefix=f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES ",
    conflict_ignore=" ON CONFLICT (id) DO NOTHING",
    message_select=(
        "SELECT id, session_id, role, content_json, metadata_json, "
        "to_char(metis_us_to_timestamptz(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "
        "schema_version FROM messages"
    ),
    search_sessions=(
        "SELECT {columns} FROM sessions WHERE title ILIKE ?1 ESCAPE '\\' OR id IN ("
        "SELECT m.session_id FROM messages m, jsonb_array_elements(m.content_json) b "
        "WHERE b->>'type' = 'text' AND b->>'text' ILIKE ?1 ESCAPE '\\') "
        "ORDER BY updated_at DESC, id DESC LIMIT ?2"
    ),
    usage_and_model=(
        "SELECT NULLIF(metadata_json->'usage', 'null'::jsonb), metadata_json->>'model', "
        "(metadata_json->>'model_calls')::integer, (metadata_json->>'unpriced_calls')::integer "
        "FROM messages WHERE session_id = ? AND role = ? ORDER BY id"
    ),
    delete_expired_events="DELETE FROM events WHERE ctid IN (SELECT ctid FROM events WHERE {expired} LIMIT ?)",
    session_for_append="SELECT tool_id_map_json, total_cost_usd FROM sessions WHERE id = ? FOR UPDATE",
    transaction_lock="SELECT pg_advisory_xact_lock(?)",
)

# The trace batcher's bulk path (PostgreSQL only): COPY into a per-connection staging table, then
# one INSERT .. SELECT that ignores stored ids, so redelivered events stay harmless.
STAGE_EVENTS = "CREATE TEMP TABLE IF NOT EXISTS events_stage (LIKE events INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
COPY_EVENTS_TO_STAGE = f"COPY events_stage ({_EVENT_COLUMNS}) FROM STDIN"
MOVE_STAGED_EVENTS = (
    f"INSERT INTO events ({_EVENT_COLUMNS}) SELECT {_EVENT_COLUMNS} FROM events_stage ON CONFLICT (id) DO NOTHING"
)

-- Version 1: the schema of canonical-message-format §9.1 and event-bus-and-trace-catalog §7.1.
-- Times the stores compare and order by are exact integer unix microseconds (bigint); each has a
-- generated timestamptz twin for people and SQL tools. Payloads and message bodies are jsonb.
CREATE OR REPLACE FUNCTION metis_us_to_timestamptz(us bigint) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 'epoch'::timestamptz + us * interval '1 microsecond' $$;

CREATE TABLE sessions (
    id text PRIMARY KEY,
    workspace_path text NOT NULL,
    active_model text,
    routing_policy_json jsonb,
    schema_version integer NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    created_at_tz timestamptz GENERATED ALWAYS AS (metis_us_to_timestamptz(created_at)) STORED,
    updated_at_tz timestamptz GENERATED ALWAYS AS (metis_us_to_timestamptz(updated_at)) STORED
);

CREATE TABLE messages (
    id text PRIMARY KEY,
    session_id text NOT NULL REFERENCES sessions(id),
    role text NOT NULL,
    content_json jsonb NOT NULL,
    metadata_json jsonb NOT NULL,
    created_at bigint NOT NULL,
    schema_version integer NOT NULL,
    created_at_tz timestamptz GENERATED ALWAYS AS (metis_us_to_timestamptz(created_at)) STORED
);
CREATE INDEX idx_messages_session_created ON messages(session_id, created_at);

CREATE TABLE tool_calls (
    id text PRIMARY KEY,
    session_id text NOT NULL REFERENCES sessions(id),
    message_id text NOT NULL REFERENCES messages(id),
    result_message_id text REFERENCES messages(id),
    name text NOT NULL,
    status text NOT NULL,
    provider_id text,
    provider text,
    created_at bigint NOT NULL,
    completed_at bigint
);
CREATE INDEX idx_tool_calls_session_status ON tool_calls(session_id, status);

-- No foreign key to sessions, as on SQLite: the trace never refuses an event.
CREATE TABLE events (
    id text PRIMARY KEY,
    timestamp_us bigint NOT NULL,
    session_id text NOT NULL,
    turn_id text,
    parent_event_id text,
    type text NOT NULL,
    actor text NOT NULL,
    sensitivity text NOT NULL,
    payload_json jsonb NOT NULL,
    occurred_at timestamptz GENERATED ALWAYS AS (metis_us_to_timestamptz(timestamp_us)) STORED
);
CREATE INDEX idx_events_session_id ON events(session_id, id);
CREATE INDEX idx_events_type_timestamp ON events(type, timestamp_us);
CREATE INDEX idx_events_turn ON events(turn_id);
CREATE INDEX idx_events_parent ON events(parent_event_id);
CREATE INDEX idx_events_timestamp_us ON events(timestamp_us);

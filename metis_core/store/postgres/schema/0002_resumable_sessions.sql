-- Version 2: what a session needs to resume on another provider, plus title, ending and totals.
-- Money is numeric (exact). No backfill: PostgreSQL stores start at this code, never at version 1 data.
ALTER TABLE sessions
    ADD COLUMN tool_id_map_json jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN title text,
    ADD COLUMN ended_at bigint,
    ADD COLUMN disposition text,
    ADD COLUMN total_cost_usd numeric NOT NULL DEFAULT 0,
    ADD COLUMN unpriced_message_count integer NOT NULL DEFAULT 0,
    ADD COLUMN total_input_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN total_output_tokens bigint NOT NULL DEFAULT 0;
CREATE INDEX idx_messages_session_id ON messages(session_id, id);
CREATE INDEX idx_sessions_updated ON sessions(updated_at);

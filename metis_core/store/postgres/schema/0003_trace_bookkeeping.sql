-- Version 3: gaps already reported, the retention floor, and per-session storage sequences.
CREATE TABLE trace_gaps (
    session_id text NOT NULL,
    gap_start_id text NOT NULL,
    gap_end_id text NOT NULL,
    missing_ids_json text NOT NULL,
    detected_at bigint NOT NULL,
    PRIMARY KEY (session_id, gap_start_id, gap_end_id)
);
CREATE TABLE trace_state (key text PRIMARY KEY, value text NOT NULL);

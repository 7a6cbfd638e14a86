-- Version 4: a delegated worker session names the planner session that started it (docs/delegation.md).
ALTER TABLE sessions ADD COLUMN parent_session_id text;
CREATE INDEX idx_sessions_parent ON sessions(parent_session_id);

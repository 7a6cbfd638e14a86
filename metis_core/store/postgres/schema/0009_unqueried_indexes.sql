-- Two indexes no query of metis reads, which every insert paid for (SQLite step 9, docs/persistence.md
-- "Version 9"): causes are looked up by their own id, and messages are read in id order through
-- idx_messages_session_id (step 2).
DROP INDEX IF EXISTS idx_events_parent;
DROP INDEX IF EXISTS idx_messages_session_created;

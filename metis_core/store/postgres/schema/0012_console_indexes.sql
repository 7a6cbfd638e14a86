-- The console's sessions table sorted by start time, and its keyset pages, walk an index
-- (store/session_page.py; SQLite step 12) instead of sorting every session.
CREATE INDEX idx_sessions_created ON sessions(created_at, id);

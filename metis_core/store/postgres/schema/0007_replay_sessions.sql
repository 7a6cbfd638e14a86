-- A session made by `metis replay` names the session it replays (SQLite step 7, docs/record-replay.md).
-- Replay sessions written before this step carried the link only in their title
-- (`replay of <source id> on <model>`); the backfill reads it from there.
ALTER TABLE sessions ADD COLUMN replay_of text;
CREATE INDEX idx_sessions_replay_of ON sessions(replay_of);
UPDATE sessions
   SET replay_of = substring(title from '^replay of (sess_[0-9A-HJKMNP-TV-Z]{26}) on \S')
 WHERE title ~ '^replay of sess_[0-9A-HJKMNP-TV-Z]{26} on \S'
   AND substring(title from '^replay of (sess_[0-9A-HJKMNP-TV-Z]{26}) on \S') <> id;

-- The user registry (SQLite step 10, docs/users.md): names and e-mails live only here, behind the
-- pseudonymous usr_<ulid> ids the record carries; `metis users forget` clears them.
CREATE TABLE users (
    id text PRIMARY KEY,
    name text,
    email text,
    team_id text,
    created_at bigint NOT NULL,
    disabled_at bigint,
    forgotten_at bigint
);

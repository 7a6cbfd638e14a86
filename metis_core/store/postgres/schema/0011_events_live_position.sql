-- The live feed across processes (docs/serve.md "Live across instances"; a no-op step on SQLite).
-- Each event gets a commit-ordered position (txid, seq): the id of the transaction that stored it and
-- a sequence number in insertion order. A reader that only takes rows whose transaction is older than
-- every transaction still running (pg_snapshot_xmin) never skips a row that commits later, so it can
-- resume from the last position it delivered. Rows stored before this step keep txid 0.
ALTER TABLE events ADD COLUMN txid bigint NOT NULL DEFAULT 0;
ALTER TABLE events ALTER COLUMN txid SET DEFAULT (pg_current_xact_id()::text::bigint);
ALTER TABLE events ADD COLUMN seq bigserial;
CREATE INDEX idx_events_position ON events(txid, seq);

-- One NOTIFY per inserting statement, carrying only the position of its last row ("txid:seq");
-- listeners read the rows themselves. Sent at commit, never for a rolled-back insert.
CREATE FUNCTION metis_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    last_seq bigint;
BEGIN
    SELECT max(seq) INTO last_seq FROM inserted_events;
    IF last_seq IS NOT NULL THEN
        PERFORM pg_notify('metis_events', pg_current_xact_id()::text || ':' || last_seq::text);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER events_notify AFTER INSERT ON events REFERENCING NEW TABLE AS inserted_events
    FOR EACH STATEMENT EXECUTE FUNCTION metis_notify_events();

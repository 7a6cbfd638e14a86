-- Budget reservations (SQLite step 9, docs/gateway.md "Budgets and reservations"): a call's
-- worst-case cost held against each budget window before it goes upstream, until it is settled,
-- released or its lease (expires_at, microseconds) runs out. One row per reservation and subject.
CREATE TABLE gateway_reservations (
    id text NOT NULL,
    scope text NOT NULL,
    subject_id text NOT NULL,
    window_start bigint NOT NULL,
    amount_usd numeric NOT NULL CHECK (amount_usd >= 0),
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (id, scope, subject_id)
);
CREATE INDEX idx_gateway_reservations_window ON gateway_reservations (scope, subject_id, window_start);
CREATE INDEX idx_gateway_reservations_expiry ON gateway_reservations (expires_at);

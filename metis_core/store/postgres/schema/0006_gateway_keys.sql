-- Version 6: gateway keys (hashes only), budgets, per-window spend and per-minute counters.
-- Money is numeric USD here (exact, no picodollar scaling needed); counters change by one atomic
-- INSERT .. ON CONFLICT DO UPDATE .. RETURNING, so several gateway processes share them safely.
CREATE TABLE gateway_keys (
    id text PRIMARY KEY,
    name text NOT NULL,
    prefix text NOT NULL UNIQUE,
    secret_hash text NOT NULL,
    user_id text,
    team_id text,
    allowed_models_json jsonb,
    budget_usd numeric,
    budget_period text,
    rpm integer,
    tpm integer,
    created_at bigint NOT NULL,
    expires_at bigint,
    revoked_at bigint,
    revoke_reason text,
    replaced_by text,
    grace_until bigint
);
CREATE TABLE gateway_limits (
    scope text NOT NULL,
    subject_id text NOT NULL,
    budget_usd numeric,
    budget_period text,
    rpm integer,
    tpm integer,
    PRIMARY KEY (scope, subject_id)
);
CREATE TABLE gateway_spend (
    scope text NOT NULL,
    subject_id text NOT NULL,
    window_start bigint NOT NULL,
    spent_usd numeric NOT NULL DEFAULT 0,
    alerted_percent integer NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, subject_id, window_start)
);
CREATE TABLE gateway_minute (
    scope text NOT NULL,
    subject_id text NOT NULL,
    minute bigint NOT NULL,
    requests integer NOT NULL DEFAULT 0,
    tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, subject_id, minute)
);

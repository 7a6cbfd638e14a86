-- What a gateway key may do (SQLite step 8, docs/gateway.md "Scopes"): `model` calls models (every
-- key issued before this step), `viewer` or `admin` read, or also chat on, `metis serve`.
ALTER TABLE gateway_keys ADD COLUMN scope text NOT NULL DEFAULT 'model'
    CHECK (scope IN ('model', 'viewer', 'admin'));

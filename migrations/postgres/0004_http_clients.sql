-- Issue 13: HTTP clients. A client is a name with a role and a call ceiling; only the SHA-256
-- of its token's secret half is stored, found by the token's public key id. Revoked clients
-- stay (their name is in audit rows) and cannot be re-added under the same name.
CREATE TABLE clients (
    name          TEXT PRIMARY KEY,
    role          TEXT NOT NULL,
    rate_per_min  BIGINT NOT NULL CHECK (rate_per_min > 0),
    key_id        TEXT NOT NULL UNIQUE,
    secret_sha256 TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    rotated_at    BIGINT,
    revoked_at    BIGINT
);

-- Each client's sliding 60-second window: one row per counted call, pruned as it slides.
CREATE TABLE client_calls (
    client TEXT NOT NULL REFERENCES clients (name) ON DELETE CASCADE,
    at     BIGINT NOT NULL
);
CREATE INDEX client_calls_window_idx ON client_calls (client, at);

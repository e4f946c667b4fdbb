-- care-mcp ledger schema (Postgres). Times are BIGINT milliseconds since the Unix epoch.

CREATE TABLE approvals (
    id                  TEXT PRIMARY KEY,
    action              TEXT NOT NULL,
    arguments_json      TEXT NOT NULL,
    payload_hash        TEXT NOT NULL,
    status              TEXT NOT NULL
        CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'consumed')),
    requested_by_role   TEXT NOT NULL,
    requested_by_client TEXT NOT NULL,
    reason              TEXT,
    created_at          BIGINT NOT NULL,
    expires_at          BIGINT NOT NULL,
    decided_at          BIGINT,
    consumed_at         BIGINT,
    outcome_json        TEXT,
    outcome_at          BIGINT,
    card_event_id       TEXT,
    -- an outcome exists only on a consumed row
    CHECK (outcome_json IS NULL OR status = 'consumed')
);
-- list_approvals: newest first, optionally by status
CREATE INDEX approvals_created_idx ON approvals (created_at DESC, id DESC);
CREATE INDEX approvals_status_created_idx ON approvals (status, created_at DESC, id DESC);
-- the sweep that stores live rows past expires_at as expired
CREATE INDEX approvals_live_expiry_idx ON approvals (expires_at)
    WHERE status IN ('pending', 'approved');

CREATE TABLE approval_decisions (
    approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    approver    TEXT NOT NULL,
    decision    TEXT NOT NULL CHECK (decision IN ('approve', 'reject')),
    evidence    TEXT NOT NULL,
    decided_at  BIGINT NOT NULL,
    PRIMARY KEY (approval_id, approver)
);

CREATE TABLE kpi_entries (
    id               BIGSERIAL PRIMARY KEY,
    metric           TEXT NOT NULL,
    value            DOUBLE PRECISION NOT NULL,
    target           DOUBLE PRECISION,
    unit             TEXT,
    higher_is_better BOOLEAN NOT NULL,
    recorded_at      BIGINT NOT NULL,
    recorded_by_role TEXT NOT NULL
);
CREATE INDEX kpi_entries_metric_idx ON kpi_entries (metric, recorded_at);

CREATE TABLE csat_entries (
    id               BIGSERIAL PRIMARY KEY,
    channel          TEXT NOT NULL CHECK (channel IN ('app_store', 'forum', 'mail')),
    ticket_ref       TEXT NOT NULL,
    score            INTEGER NOT NULL CHECK (score BETWEEN 1 AND 5),
    comment          TEXT,
    recorded_at      BIGINT NOT NULL,
    recorded_by_role TEXT NOT NULL
);
CREATE INDEX csat_entries_channel_idx ON csat_entries (channel, recorded_at);

CREATE TABLE tickets (
    channel           TEXT NOT NULL CHECK (channel IN ('app_store', 'forum', 'mail')),
    ticket_ref        TEXT NOT NULL,
    opened_at         BIGINT NOT NULL,
    first_response_at BIGINT,
    PRIMARY KEY (channel, ticket_ref)
);
-- sla_status reads only tickets still awaiting a first response
CREATE INDEX tickets_awaiting_idx ON tickets (channel, opened_at)
    WHERE first_response_at IS NULL;

CREATE TABLE audit (
    id          BIGSERIAL PRIMARY KEY,
    at          BIGINT NOT NULL,
    role        TEXT NOT NULL,
    client      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    error_code  TEXT,
    approval_id TEXT,
    duration_us BIGINT NOT NULL,
    args_digest TEXT NOT NULL
);
CREATE INDEX audit_at_idx ON audit (at DESC, id DESC);

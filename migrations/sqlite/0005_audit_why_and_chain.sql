-- Issue 15: an audit row says why (capability, session, decision, the rules passed and the
-- one that refused, the answer's size and shape, an external write's approval trail) and
-- carries its place in its writer's keyed hash chain; each chain's head is recorded with it.
-- Rows from before this migration keep empty "why" fields and no link.
ALTER TABLE audit ADD COLUMN capability TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN session TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN decision TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN rules TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN denied_by TEXT;
ALTER TABLE audit ADD COLUMN output_bytes INTEGER;
ALTER TABLE audit ADD COLUMN output_items INTEGER;
ALTER TABLE audit ADD COLUMN output_truncated INTEGER;
ALTER TABLE audit ADD COLUMN approval_trail TEXT;
ALTER TABLE audit ADD COLUMN chain_id TEXT;
ALTER TABLE audit ADD COLUMN chain_seq INTEGER;
ALTER TABLE audit ADD COLUMN prev_hash TEXT;
ALTER TABLE audit ADD COLUMN row_hash TEXT;
CREATE INDEX audit_session_idx ON audit (session, id);
CREATE INDEX audit_tool_idx ON audit (tool, id);

CREATE TABLE audit_chains (
    chain_id   TEXT PRIMARY KEY,
    started_at INTEGER NOT NULL,
    head_seq   INTEGER NOT NULL,
    head_hash  TEXT NOT NULL,
    head_mac   TEXT NOT NULL
);

//! Statement text. `$n` placeholders work in Postgres and in SQLite (sqlx binds `$n` to the
//! n-th argument); times are integer milliseconds.
//!
//! A statement that names its approval by id compares the status as `(status || '')`, an
//! expression no index covers, so the row is found by its primary key whatever the planner's
//! statistics say. Written `status = 'approved'`, Postgres took the status index or the
//! live-expiry index instead whenever its statistics were stale or those indexes held many
//! dead entries, and scanned every such row for one id (`tests::plans`; bench/). Statements that read the clock or lock a row
//! differ per backend and live in a [`Dialect`]: the ledger's own clock (never a time passed in
//! by a process) decides expiry, decision and consumption times.

/// The columns `rows::ApprovalRecord` reads, followed by the ledger's clock as `db_now`.
macro_rules! approval_columns {
    ($now:expr) => {
        concat!(
            "id, action, arguments_json, payload_hash, hash_encoding, status, \
             requested_by_role, requested_by_client, reason, created_at, expires_at, \
             decided_at, consumed_at, outcome_json, outcome_at, card_event_id, card_text, \
             approvers_json, threshold, checked_facts_json, ",
            $now,
            " AS db_now"
        )
    };
}

/// The statements that read the clock or lock, written once for both backends.
#[derive(Debug)]
pub(crate) struct Dialect {
    /// The ledger's clock, in milliseconds since the Unix epoch.
    pub clock: &'static str,
    pub insert_approval: &'static str,
    pub select_approval: &'static str,
    /// Read inside a decision's transaction; Postgres locks the row, SQLite's `BEGIN
    /// IMMEDIATE` already holds the database's write lock.
    pub select_approval_for_decision: &'static str,
    /// $1 id.
    pub expire_one: &'static str,
    pub expire_all: &'static str,
    /// $1 status or NULL, $2 limit.
    pub list_approvals: &'static str,
    /// $1 approval, $2 approver, $3 decision, $4 evidence.
    pub upsert_decision: &'static str,
    /// $1 id, $2 status.
    pub set_decided: &'static str,
    /// The one conditional update behind consume. $1 id, $2 action, $3 payload hash, $4
    /// checked facts (not compared on rows stored without them).
    pub consume: &'static str,
    /// $1 id, $2 outcome JSON.
    pub record_outcome: &'static str,
}

macro_rules! dialect {
    ($now:expr, $lock:literal) => {
        Dialect {
            clock: concat!("SELECT ", $now),
            insert_approval: concat!(
                "INSERT INTO approvals (id, action, arguments_json, payload_hash, hash_encoding, \
                 status, requested_by_role, requested_by_client, reason, created_at, expires_at, \
                 card_event_id, card_text, approvers_json, threshold, checked_facts_json) \
                 VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9, $10, $11, $12, $13, $14, \
                 $15) RETURNING ",
                approval_columns!($now)
            ),
            select_approval: concat!(
                "SELECT ",
                approval_columns!($now),
                " FROM approvals WHERE id = $1"
            ),
            select_approval_for_decision: concat!(
                "SELECT ",
                approval_columns!($now),
                " FROM approvals WHERE id = $1",
                $lock
            ),
            expire_one: concat!(
                "UPDATE approvals SET status = 'expired' \
                 WHERE id = $1 AND (status || '') IN ('pending', 'approved') AND expires_at <= ",
                $now
            ),
            expire_all: concat!(
                "UPDATE approvals SET status = 'expired' \
                 WHERE status IN ('pending', 'approved') AND expires_at <= ",
                $now
            ),
            list_approvals: concat!(
                "SELECT ",
                approval_columns!($now),
                " FROM approvals WHERE ($1 IS NULL OR status = $1) \
                 ORDER BY created_at DESC, id DESC LIMIT $2"
            ),
            upsert_decision: concat!(
                "INSERT INTO approval_decisions \
                 (approval_id, approver, decision, evidence, decided_at) \
                 VALUES ($1, $2, $3, $4, ",
                $now,
                ") ON CONFLICT (approval_id, approver) DO UPDATE SET \
                 decision = excluded.decision, evidence = excluded.evidence, \
                 decided_at = excluded.decided_at"
            ),
            set_decided: concat!(
                "UPDATE approvals SET status = $2, decided_at = ",
                $now,
                " WHERE id = $1 RETURNING ",
                approval_columns!($now)
            ),
            consume: concat!(
                "UPDATE approvals SET status = 'consumed', consumed_at = ",
                $now,
                " WHERE id = $1 AND (status || '') = 'approved' AND action = $2 \
                 AND payload_hash = $3 \
                 AND (checked_facts_json IS NULL OR checked_facts_json = $4) \
                 AND expires_at > ",
                $now,
                " RETURNING ",
                approval_columns!($now)
            ),
            record_outcome: concat!(
                "UPDATE approvals SET outcome_json = $2, outcome_at = ",
                $now,
                " WHERE id = $1 AND (status || '') = 'consumed' AND outcome_json IS NULL"
            ),
        }
    };
}

/// Postgres's clock: the statement's start time (one reading per statement, so a consume's
/// check and its `consumed_at` agree).
macro_rules! postgres_now {
    () => {
        "(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT"
    };
}

pub(crate) const POSTGRES: Dialect = dialect!(postgres_now!(), " FOR UPDATE");

/// Postgres, several approvals read in one statement (the read batch, `pg_batch`). $1 the ids.
pub(crate) const SELECT_APPROVALS_POSTGRES: &str = concat!(
    "SELECT ",
    approval_columns!(postgres_now!()),
    " FROM approvals WHERE id = ANY($1)"
);

/// Postgres: the listing and whether a live approval has lapsed, in one statement (one
/// snapshot, one clock reading) and one round trip. Every row carries `any_lapsed`; an empty
/// page is one row with the flag and no approval. $1 status or NULL, $2 limit.
pub(crate) const LIST_APPROVALS_UNLESS_LAPSED_POSTGRES: &str = concat!(
    "SELECT lapsed.any_lapsed, listed.* FROM (SELECT EXISTS (SELECT 1 FROM approvals \
     WHERE status IN ('pending', 'approved') AND expires_at <= ",
    postgres_now!(),
    ") AS any_lapsed) AS lapsed LEFT JOIN LATERAL (SELECT ",
    approval_columns!(postgres_now!()),
    " FROM approvals WHERE ($1 IS NULL OR status = $1) \
     ORDER BY created_at DESC, id DESC LIMIT $2) AS listed ON TRUE \
     ORDER BY listed.created_at DESC, listed.id DESC"
);

/// Postgres, several consumes in one statement (the consume batch, `pg_batch`): for each
/// request (`$1` ids, `$2` actions, `$3` payload hashes, `$4` checked facts; `ord` its 1-based
/// position) the same conditional update as [`Dialect::consume`], each row updated at most
/// once (two requests for one approval: one wins), the rows won returned with their `ord`.
/// The rows are locked in id order first, so two batches that share rows (two processes
/// racing for the same approvals) wait for each other instead of deadlocking.
pub(crate) const CONSUME_BATCH_POSTGRES: &str = concat!(
    "WITH c AS (SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[]) \
     WITH ORDINALITY AS c(c_id, c_action, c_hash, c_facts, ord)), \
     locked AS MATERIALIZED (SELECT id AS locked_id FROM approvals \
     WHERE id IN (SELECT c_id FROM c) ORDER BY id FOR UPDATE) \
     UPDATE approvals SET status = 'consumed', consumed_at = ",
    postgres_now!(),
    " FROM c, locked WHERE id = locked_id AND id = c_id AND (status || '') = 'approved' \
     AND action = c_action AND payload_hash = c_hash \
     AND (checked_facts_json IS NULL OR checked_facts_json = c_facts) AND expires_at > ",
    postgres_now!(),
    " RETURNING ord, ",
    approval_columns!(postgres_now!())
);

/// SQLite's clock: `'now'` is fixed for the duration of one statement. (`julianday` rather
/// than `unixepoch('subsec')`, which needs SQLite 3.42.)
macro_rules! sqlite_now {
    () => {
        "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
    };
}

pub(crate) const SQLITE: Dialect = dialect!(sqlite_now!(), "");

/// SQLite: whether a live approval has lapsed and must be stored `expired` before a listing
/// can be answered without a write (the live-expiry index holds only live rows).
pub(crate) const SQLITE_ANY_LAPSED: &str = concat!(
    "SELECT EXISTS (SELECT 1 FROM approvals WHERE status IN ('pending', 'approved') \
     AND expires_at <= ",
    sqlite_now!(),
    ")"
);

pub(crate) const PING: &str = "SELECT 1";

pub(crate) const APPROVAL_BY_CARD_EVENT: &str = "SELECT id FROM approvals WHERE card_event_id = $1";

pub(crate) const SET_CARD_EVENT: &str = "UPDATE approvals SET card_event_id = $2 WHERE id = $1";

/// Decisions go with the row (ON DELETE CASCADE).
pub(crate) const DISCARD_PENDING: &str =
    "DELETE FROM approvals WHERE id = $1 AND (status || '') = 'pending'";

pub(crate) const APPROVAL_EXISTS: &str = "SELECT COUNT(*) FROM approvals WHERE id = $1";

/// Distinct approvers per decision: the primary key keeps one decision per approver.
pub(crate) const COUNT_DECISIONS: &str = "SELECT \
     COUNT(CASE WHEN decision = 'approve' THEN 1 END), \
     COUNT(CASE WHEN decision = 'reject' THEN 1 END) \
     FROM approval_decisions WHERE approval_id = $1";

pub(crate) const SELECT_DECISIONS: &str = "SELECT approval_id, approver, decision, evidence, \
     decided_at FROM approval_decisions WHERE approval_id = $1 ORDER BY decided_at, approver";

pub(crate) const INSERT_KPI: &str = "INSERT INTO kpi_entries \
     (metric, value, target, unit, higher_is_better, recorded_at, recorded_by_role) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Per metric: aggregates over the window and the latest entry. ?1 metric or NULL, ?2 since or
/// NULL: numbered, because SQLite numbers `$n` parameters by first appearance and ?2 comes
/// first here. Column order is read by position (`KpiSeriesRecord::from_sqlite`). The rows
/// come in no particular order (`SqliteLedger::read_kpi_series` sorts them): the grouped scan
/// runs as a co-routine over `kpi_entries_metric_idx` (metric, recorded_at, id, value), which
/// covers the aggregates and each metric's latest id, so only the latest rows are read from
/// the table. An `ORDER BY` here would sort the result in a temporary b-tree, and materialising
/// the aggregates before the join (an earlier form) costs about as much again.
pub(crate) const KPI_SERIES: &str = "SELECT a.metric, a.n, a.mean, a.lo, a.hi, k.value, \
     k.target, k.unit, k.higher_is_better, k.recorded_at, k.recorded_by_role \
     FROM (SELECT metric, COUNT(*) AS n, AVG(value) AS mean, MIN(value) AS lo, MAX(value) AS hi, \
     (SELECT k2.id FROM kpi_entries k2 WHERE k2.metric = kpi_entries.metric \
     AND (?2 IS NULL OR k2.recorded_at >= ?2) ORDER BY k2.recorded_at DESC, k2.id DESC LIMIT 1) \
     AS latest \
     FROM kpi_entries WHERE (?1 IS NULL OR metric = ?1) AND (?2 IS NULL OR recorded_at >= ?2) \
     GROUP BY metric) a \
     CROSS JOIN kpi_entries k ON k.id = a.latest";

/// `KPI_SERIES` for Postgres in one pass over the window's rows: the aggregates as window
/// functions, the latest row by `DISTINCT ON` (same order, same ties). Measured with pgbench on
/// 50 rows: 0.11 ms against 0.12–0.19 ms. The window is ordered as the result is, over its
/// whole partition, so one sort serves both (`EXPLAIN ANALYZE`, 50 rows: 131 → 59–83 µs).
/// SQLite has no `DISTINCT ON`, and its window functions were 4× slower there than a join,
/// so SQLite has `KPI_SERIES`.
pub(crate) const KPI_SERIES_POSTGRES: &str = "SELECT DISTINCT ON (metric) metric, \
     COUNT(*) OVER m AS n, AVG(value) OVER m AS mean, MIN(value) OVER m AS lo, \
     MAX(value) OVER m AS hi, value, target, unit, higher_is_better, recorded_at, \
     recorded_by_role FROM kpi_entries \
     WHERE ($1::TEXT IS NULL OR metric = $1) AND ($2::BIGINT IS NULL OR recorded_at >= $2) \
     WINDOW m AS (PARTITION BY metric ORDER BY recorded_at DESC, id DESC \
     ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) \
     ORDER BY metric, recorded_at DESC, id DESC";

pub(crate) const INSERT_CSAT: &str = "INSERT INTO csat_entries \
     (channel, ticket_ref, score, comment, recorded_at, recorded_by_role) \
     VALUES ($1, $2, $3, $4, $5, $6)";

/// $1 channel or NULL, $2 since or NULL.
pub(crate) const CSAT_COUNTS: &str = "SELECT channel, score, COUNT(*) AS n FROM csat_entries \
     WHERE ($1 IS NULL OR channel = $1) AND ($2 IS NULL OR recorded_at >= $2) \
     GROUP BY channel, score ORDER BY channel, score";

pub(crate) const OPEN_TICKET: &str = "INSERT INTO tickets \
     (channel, ticket_ref, opened_at, first_response_at) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (channel, ticket_ref) DO NOTHING";

/// Only the first response counts: a set time is never overwritten.
pub(crate) const MARK_FIRST_RESPONSE: &str = "UPDATE tickets SET first_response_at = $3 \
     WHERE channel = $1 AND ticket_ref = $2 AND first_response_at IS NULL";

pub(crate) const TICKET_EXISTS: &str =
    "SELECT COUNT(*) FROM tickets WHERE channel = $1 AND ticket_ref = $2";

/// $1..$3 breach cutoffs of app_store, forum, mail (NULL: nothing breaches), $4 channel or NULL.
pub(crate) const AWAITING: &str = "SELECT channel, COUNT(*) AS awaiting, \
     SUM(CASE WHEN opened_at < (CASE channel WHEN 'app_store' THEN $1 \
     WHEN 'forum' THEN $2 WHEN 'mail' THEN $3 END) THEN 1 ELSE 0 END) AS breached, \
     MIN(opened_at) AS oldest FROM tickets \
     WHERE first_response_at IS NULL AND ($4 IS NULL OR channel = $4) \
     GROUP BY channel ORDER BY channel";

/// The columns `rows::AuditRow` reads.
macro_rules! audit_columns {
    () => {
        "id, at, role, client, tool, outcome, error_code, approval_id, duration_us, \
         args_digest, capability, session, decision, rules, denied_by, output_bytes, \
         output_items, output_truncated, approval_trail, chain_id, chain_seq, prev_hash, row_hash"
    };
}

/// Followed by one `(...)` of 22 values per row (`audit_store` builds them).
pub(crate) const INSERT_AUDIT_ROWS: &str = "INSERT INTO audit \
     (at, role, client, tool, outcome, error_code, approval_id, duration_us, args_digest, \
     capability, session, decision, rules, denied_by, output_bytes, output_items, \
     output_truncated, approval_trail, chain_id, chain_seq, prev_hash, row_hash) ";

/// A batch's rows (one array per column, $1..$22, in `INSERT_AUDIT_ROWS`' order) and its
/// chain's new head ($23 chain, $24 started_at, $25 seq, $26 hash, $27 MAC) in one statement.
/// Rows are inserted in array order, so ids follow the chain's sequence. `$first` is an extra
/// leading `WITH` entry (or nothing), `$head` where the head's values come from.
macro_rules! append_audit_postgres {
    ($first:literal, $head:literal) => {
        concat!(
            "WITH ",
            $first,
            "appended AS (INSERT INTO audit \
             (at, role, client, tool, outcome, error_code, approval_id, duration_us, args_digest, \
             capability, session, decision, rules, denied_by, output_bytes, output_items, \
             output_truncated, approval_trail, chain_id, chain_seq, prev_hash, row_hash) \
             SELECT at, role, client, tool, outcome, error_code, approval_id, duration_us, \
             args_digest, capability, session, decision, rules, denied_by, output_bytes, \
             output_items, output_truncated, approval_trail, chain_id, chain_seq, prev_hash, \
             row_hash \
             FROM UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], \
             $6::TEXT[], $7::TEXT[], $8::BIGINT[], $9::TEXT[], $10::TEXT[], $11::TEXT[], \
             $12::TEXT[], $13::TEXT[], $14::TEXT[], $15::BIGINT[], $16::BIGINT[], \
             $17::BOOLEAN[], $18::TEXT[], $19::TEXT[], $20::BIGINT[], $21::TEXT[], $22::TEXT[]) \
             WITH ORDINALITY AS r(at, role, client, tool, outcome, error_code, approval_id, \
             duration_us, args_digest, capability, session, decision, rules, denied_by, \
             output_bytes, output_items, output_truncated, approval_trail, chain_id, chain_seq, \
             prev_hash, row_hash, ord) ORDER BY ord) \
             INSERT INTO audit_chains (chain_id, started_at, head_seq, head_hash, head_mac) ",
            $head,
            " ON CONFLICT (chain_id) DO UPDATE SET head_seq = excluded.head_seq, \
             head_hash = excluded.head_hash, head_mac = excluded.head_mac"
        )
    };
}

/// An ordinary batch: its commit returns once it is on disk.
pub(crate) const APPEND_AUDIT_POSTGRES: &str =
    append_audit_postgres!("", "VALUES ($23, $24, $25, $26, $27)");

/// A batch holding an intent row ([`care_core::ledger::Durability::BeforeNextCommit`]): the
/// statement's own transaction commits without waiting for its WAL flush (`set_config(…, true)`
/// is `SET LOCAL`: this transaction only), so the row is committed and visible at once, and
/// the consume's commit, which does wait, flushes the WAL up to itself and so past this
/// commit. Nothing goes out before that flush. The head's values are selected from the
/// setting's row, so the setting is evaluated whatever the planner does.
pub(crate) const APPEND_AUDIT_POSTGRES_BEFORE_NEXT_COMMIT: &str = append_audit_postgres!(
    "unflushed AS (SELECT set_config('synchronous_commit', 'off', true)), ",
    "SELECT $23::TEXT, $24::BIGINT, $25::BIGINT, $26::TEXT, $27::TEXT FROM unflushed"
);

/// Followed by the values (chain, started_at, head seq, head hash, head MAC) and
/// [`ON_CHAIN_HEAD_CONFLICT`].
pub(crate) const INSERT_CHAIN_HEAD: &str =
    " INSERT INTO audit_chains (chain_id, started_at, head_seq, head_hash, head_mac) ";

pub(crate) const ON_CHAIN_HEAD_CONFLICT: &str = " ON CONFLICT (chain_id) DO UPDATE SET \
     head_seq = excluded.head_seq, head_hash = excluded.head_hash, head_mac = excluded.head_mac";

pub(crate) const AUDIT_HEADS: &str = "SELECT chain_id, started_at, head_seq, head_hash, head_mac FROM audit_chains ORDER BY chain_id";

pub(crate) const RECENT_AUDIT: &str = concat!(
    "SELECT ",
    audit_columns!(),
    " FROM audit ORDER BY at DESC, id DESC LIMIT $1"
);

pub(crate) const AUDIT_ROW: &str =
    concat!("SELECT ", audit_columns!(), " FROM audit WHERE id = $1");

/// $1 since (ms) or NULL, $2 tool, $3 outcome, $4 session, $5 after id (each or NULL), $6 limit.
macro_rules! audit_query {
    ($order:literal) => {
        concat!(
            "SELECT ",
            audit_columns!(),
            " FROM audit WHERE ($1 IS NULL OR at >= $1) AND ($2 IS NULL OR tool = $2) \
             AND ($3 IS NULL OR outcome = $3) AND ($4 IS NULL OR session = $4) \
             AND ($5 IS NULL OR id > $5) ORDER BY id ",
            $order,
            " LIMIT $6"
        )
    };
}

pub(crate) const AUDIT_QUERY_NEWEST: &str = audit_query!("DESC");
pub(crate) const AUDIT_QUERY_OLDEST: &str = audit_query!("ASC");

#[cfg(test)]
#[allow(clippy::expect_used)]
mod plans {
    //! The plans Postgres makes for the statements that name one approval (or a batch of
    //! them) by id, under the statistics that misled it before: those of an empty table, of a
    //! table full of approved rows, and of one whose status index is full of dead entries.
    //! Each must find its rows through the primary key and nothing else.

    use sqlx::{AssertSqlSafe, Connection, PgConnection};

    use super::{CONSUME_BATCH_POSTGRES, DISCARD_PENDING, POSTGRES, SELECT_APPROVALS_POSTGRES};
    use crate::test_support::fresh_postgres_db;

    /// (name, parameter types, statement, arguments).
    fn statements() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
        let one = "'r-7'";
        let several = "ARRAY['r-7', 'r-9']";
        vec![
            ("select_approval", "text", POSTGRES.select_approval, one),
            (
                "select_approvals",
                "text[]",
                SELECT_APPROVALS_POSTGRES,
                several,
            ),
            (
                "consume",
                "text, text, text, text",
                POSTGRES.consume,
                "'r-7', 'mail_send', 'h', '{}'",
            ),
            (
                "consume_batch",
                "text[], text[], text[], text[]",
                CONSUME_BATCH_POSTGRES,
                "ARRAY['r-7', 'r-9'], ARRAY['mail_send', 'mail_send'], ARRAY['h', 'h'], \
                 ARRAY['{}', '{}']",
            ),
            (
                "record_outcome",
                "text, text",
                POSTGRES.record_outcome,
                "'r-7', '{}'",
            ),
            ("expire_one", "text", POSTGRES.expire_one, one),
            ("discard_pending", "text", DISCARD_PENDING, one),
        ]
    }

    async fn run(conn: &mut PgConnection, statement: &str) {
        sqlx::raw_sql(AssertSqlSafe(statement.to_owned()))
            .execute(&mut *conn)
            .await
            .expect(statement);
    }

    /// Every statement's generic plan (the one a prepared statement settles on); with
    /// `singles_only`, only the statements of one row.
    async fn assert_plans_use_the_primary_key(
        conn: &mut PgConnection,
        round: u8,
        when: &str,
        singles_only: bool,
    ) {
        for (name, types, statement, args) in statements() {
            if singles_only && types.contains("[]") {
                continue;
            }
            // A name per round, so each round plans afresh under its statistics.
            let name = format!("{name}_{round}");
            run(conn, &format!("PREPARE {name}({types}) AS {statement}")).await;
            let lines: Vec<String> =
                sqlx::query_scalar(AssertSqlSafe(format!("EXPLAIN EXECUTE {name}({args})")))
                    .fetch_all(&mut *conn)
                    .await
                    .expect("plan");
            let plan = lines.join("\n");
            assert!(plan.contains("approvals_pkey"), "{name} {when}:\n{plan}");
            for other in [
                "approvals_status_created_idx",
                "approvals_live_expiry_idx",
                "approvals_created_idx",
                "Seq Scan on approvals",
            ] {
                assert!(!plan.contains(other), "{name} {when} uses {other}:\n{plan}");
            }
        }
    }

    #[tokio::test]
    async fn statements_that_name_approvals_find_them_by_the_primary_key() {
        let (url, _db) = fresh_postgres_db().await;
        let ledger = crate::PostgresLedger::from_url(&url).expect("url");
        care_core::ledger::Ledger::ping(&ledger)
            .await
            .expect("migrated");
        let mut conn = PgConnection::connect(&url).await.expect("connect");
        run(&mut conn, "SET plan_cache_mode = force_generic_plan").await;
        run(&mut conn, "ANALYZE approvals").await;
        let seed = "INSERT INTO approvals (id, action, arguments_json, payload_hash, \
             hash_encoding, status, requested_by_role, requested_by_client, created_at, \
             expires_at) SELECT 'r-' || n, 'mail_send', '{}', 'h', 'jcs', 'approved', 'mail', \
             't', n, 4102444800000 FROM generate_series(1, 3000) AS n";
        run(&mut conn, seed).await;
        // A batch over what the statistics call an empty table may scan it: a real table is
        // analysed as it grows (autovacuum, after 50 rows and 10 % changed), and only the
        // benchmark fills one in a single statement (it analyses after).
        assert_plans_use_the_primary_key(&mut conn, 1, "with an empty table's statistics", true)
            .await;
        run(&mut conn, "ANALYZE approvals").await;
        assert_plans_use_the_primary_key(&mut conn, 2, "with 3,000 approved rows", false).await;
        run(&mut conn, "UPDATE approvals SET status = 'consumed'").await;
        run(
            &mut conn,
            "UPDATE approvals SET status = 'approved' WHERE id = 'r-7'",
        )
        .await;
        run(&mut conn, "ANALYZE approvals").await;
        assert_plans_use_the_primary_key(
            &mut conn,
            3,
            "with dead entries in the status index",
            false,
        )
        .await;
        conn.close().await.expect("close");
        care_core::ledger::Ledger::close(&ledger).await;
    }
}

//! The Postgres ledger. Its pool connects lazily and its migrations run on first successful
//! use, so the server starts and lists tools while Postgres is down; calls answer
//! `Unavailable` until it returns, then recover without a restart.

use std::net::IpAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use care_core::approvals::RowPolicy;
use care_core::ledger::{
    ApprovalRow, ApprovalStatus, AuditRecord, AwaitingSummary, ConsumeError, CsatDistribution,
    CsatEntry, DecideError, DecisionRow, KpiEntry, KpiSeries, Ledger, LedgerError, NewApproval,
    NewDecision, SupportChannel, Ticket, WriteOutcome,
};
use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgSslMode};
use sqlx::{Postgres, Transaction};
use tokio::sync::OnceCell;

use crate::clients::{CLIENT_BY_KEY, ClientRecord};
use crate::connect::ConnectError;
use crate::error::{db, migrate};
use crate::pg_batch::Batcher;
use crate::pg_leases::Leases;
use crate::rows::{
    self, ApprovalRecord, AwaitingRecord, CsatCountRecord, DecisionRecord, KpiSeriesRecord,
    ListedRecord, WonRecord, millis,
};
use crate::{rules, sql};

static MIGRATOR: Migrator = sqlx::migrate!("../../migrations/postgres");

/// How long a call waits for a connection before answering `Unavailable`.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

/// A pooled connection idle this long is pinged before use.
const IDLE_BEFORE_PING: Duration = Duration::from_millis(200);

/// Connections lent to calls' single statements other than approval reads and consumes
/// (outcomes, decisions read, KPI and list reads).
const CALL_CONNECTIONS: u32 = 6;

/// Connections for calls' transactions (decisions, approvals, clients), beyond those lent.
const TRANSACTION_CONNECTIONS: u32 = 2;

/// Connections for audit batches. A process's audit writer appends one batch at a time; a
/// second connection serves a second auditor (tests) or a batch that overlaps a
/// reconnection. Kept apart from the calls' pool so an intent row never queues behind
/// busy call connections (8 concurrent writes held all 8 while their intents waited).
const AUDIT_CONNECTIONS: u32 = 2;

/// Approval reads on the wire at once; readers beyond them go together in the next statement.
const READ_BATCHES: usize = 2;

/// Consumes on the wire at once; consumers beyond them go together in the next statement.
const CONSUME_BATCHES: usize = 2;

/// Requests in one batched statement at most.
const BATCH_SIZE: usize = 64;

/// The batches' own connections, which plan every statement generically (`plan_cache_mode`
/// `force_generic_plan`): Postgres otherwise planned a batch afresh at each execution (its
/// arrays' lengths make each custom plan look cheaper than the generic one; 0.28 ms of
/// planning beside 0.23 ms of execution for 8 consumes), and the generic plans of exactly
/// these statements find their rows by the primary key (`sql::plans`).
const BATCH_CONNECTIONS: u32 = (READ_BATCHES + CONSUME_BATCHES) as u32;

/// One consume's arguments, as the batch takes them.
#[derive(Debug)]
struct ConsumeRequest {
    id: String,
    action: String,
    payload_hash: String,
    checked_facts_json: String,
}

#[derive(Debug)]
pub struct PostgresLedger {
    calls: Leases,
    /// The read and consume batches' connections (see [`BATCH_CONNECTIONS`]).
    batches: Arc<Leases>,
    audit: Leases,
    /// Set once migrations have run; left unset after a failure so the next call retries.
    migrated: OnceCell<()>,
    /// Concurrent approval reads, one statement per batch (`pg_batch`).
    reads: Arc<Batcher<String, Option<ApprovalRecord>>>,
    /// Concurrent consumes, one statement (and one commit) per batch.
    consumes: Arc<Batcher<ConsumeRequest, Option<ApprovalRecord>>>,
}

impl PostgresLedger {
    /// Parses a `postgres://` URL and builds the ledger without connecting.
    pub fn from_url(url: &str) -> Result<Self, ConnectError> {
        Ok(Self::from_options(connect_options(url)?))
    }

    /// Builds the ledger without connecting; the pools connect on first use.
    pub fn from_options(options: PgConnectOptions) -> Self {
        let options = options.application_name("care-mcp");
        let batches = Arc::new(leases(
            BATCH_CONNECTIONS,
            0,
            options
                .clone()
                .options([("plan_cache_mode", "force_generic_plan")]),
        ));
        let on = Arc::clone(&batches);
        let reads = Batcher::new(
            READ_BATCHES,
            BATCH_SIZE,
            Box::new(move |ids| Box::pin(read_approvals(Arc::clone(&on), ids))),
        );
        let on = Arc::clone(&batches);
        let consumes = Batcher::new(
            CONSUME_BATCHES,
            BATCH_SIZE,
            Box::new(move |requests| Box::pin(consume_all(Arc::clone(&on), requests))),
        );
        Self {
            calls: leases(CALL_CONNECTIONS, TRANSACTION_CONNECTIONS, options.clone()),
            batches,
            audit: leases(AUDIT_CONNECTIONS, 0, options),
            migrated: OnceCell::new(),
            reads: Arc::new(reads),
            consumes: Arc::new(consumes),
        }
    }

    /// The calls' connections, once migrations are applied.
    pub(crate) async fn ready(&self) -> Result<&Leases, LedgerError> {
        self.migrated
            .get_or_try_init(|| async { MIGRATOR.run(self.calls.pool()).await.map_err(migrate) })
            .await?;
        Ok(&self.calls)
    }

    /// The audit batches' connections, once migrations are applied.
    pub(crate) async fn audit_ready(&self) -> Result<&Leases, LedgerError> {
        self.ready().await?;
        Ok(&self.audit)
    }

    async fn shutdown(&self) {
        self.calls.close().await;
        self.batches.close().await;
        self.audit.close().await;
    }

    async fn read_approval(&self, id: &str) -> Result<Option<ApprovalRecord>, LedgerError> {
        self.ready().await?;
        self.reads.submit(id.to_owned()).await
    }

    /// The listing in one statement, or `None` when a live approval has lapsed: storing it
    /// `expired` comes first, and that is the write path's transaction.
    async fn read_approvals_unless_lapsed(
        &self,
        status: Option<&str>,
        limit: i64,
    ) -> Result<Option<Vec<ApprovalRecord>>, LedgerError> {
        let listed: Vec<ListedRecord> = sqlx::query_as(sql::LIST_APPROVALS_UNLESS_LAPSED_POSTGRES)
            .bind(status)
            .bind(limit)
            .fetch_all(self.ready().await?)
            .await
            .map_err(db)?;
        if listed.iter().any(|l| l.any_lapsed) {
            return Ok(None);
        }
        Ok(Some(listed.into_iter().filter_map(|l| l.record).collect()))
    }

    pub(crate) async fn read_client_by_key(
        &self,
        key_id: &str,
    ) -> Result<Option<ClientRecord>, LedgerError> {
        sqlx::query_as(CLIENT_BY_KEY)
            .bind(key_id)
            .fetch_optional(self.ready().await?)
            .await
            .map_err(db)
    }

    async fn read_kpi_series(
        &self,
        metric: Option<&str>,
        since: Option<i64>,
    ) -> Result<Vec<KpiSeriesRecord>, LedgerError> {
        sqlx::query_as(sql::KPI_SERIES_POSTGRES)
            .bind(metric)
            .bind(since)
            .fetch_all(self.ready().await?)
            .await
            .map_err(db)
    }

    /// The one conditional update behind consume: the row when it won.
    async fn write_consume(
        &self,
        id: &str,
        action: &str,
        payload_hash: &str,
        checked_facts_json: &str,
    ) -> Result<Option<ApprovalRecord>, LedgerError> {
        self.ready().await?;
        let request = ConsumeRequest {
            id: id.to_owned(),
            action: action.to_owned(),
            payload_hash: payload_hash.to_owned(),
            checked_facts_json: checked_facts_json.to_owned(),
        };
        self.consumes.submit(request).await
    }

    /// Stores a consumed row's outcome; the rows changed (0 or 1).
    async fn write_outcome(&self, id: &str, outcome_json: String) -> Result<u64, LedgerError> {
        let done = sqlx::query(sql::POSTGRES.record_outcome)
            .bind(id)
            .bind(outcome_json)
            .execute(self.ready().await?)
            .await
            .map_err(db)?;
        Ok(done.rows_affected())
    }

    /// A transaction for read-then-write sequences; deciders also lock the row they read
    /// (`FOR UPDATE` in the dialect), which serialises them per approval.
    pub(crate) async fn begin_write(&self) -> Result<Transaction<'static, Postgres>, LedgerError> {
        // Its statements follow one another within a few round trips (see `Leases::lend`).
        care_core::awake::ledger_answer_due();
        self.ready().await?.pool().begin().await.map_err(db)
    }
}

/// The rows of `ids`, each as asked (a missing one `None`): one id alone by the plain
/// statement, several in one.
async fn read_approvals(
    batches: Arc<Leases>,
    ids: Vec<String>,
) -> Result<Vec<Option<ApprovalRecord>>, LedgerError> {
    if let [id] = ids.as_slice() {
        let rec = sqlx::query_as(sql::POSTGRES.select_approval)
            .bind(id)
            .fetch_optional(&*batches)
            .await
            .map_err(db)?;
        return Ok(vec![rec]);
    }
    let recs: Vec<ApprovalRecord> = sqlx::query_as(sql::SELECT_APPROVALS_POSTGRES)
        .bind(&ids)
        .fetch_all(&*batches)
        .await
        .map_err(db)?;
    Ok(ids
        .iter()
        .map(|id| recs.iter().find(|r| r.id == *id).cloned())
        .collect())
}

/// The rows each consume won (`None`: nothing updated, the caller reads why): one consume
/// alone by the plain conditional update, several in one statement and one commit.
async fn consume_all(
    batches: Arc<Leases>,
    requests: Vec<ConsumeRequest>,
) -> Result<Vec<Option<ApprovalRecord>>, LedgerError> {
    if let [one] = requests.as_slice() {
        let won = sqlx::query_as(sql::POSTGRES.consume)
            .bind(&one.id)
            .bind(&one.action)
            .bind(&one.payload_hash)
            .bind(&one.checked_facts_json)
            .fetch_optional(&*batches)
            .await
            .map_err(db)?;
        return Ok(vec![won]);
    }
    let column = |f: fn(&ConsumeRequest) -> &String| -> Vec<&str> {
        requests.iter().map(|r| f(r).as_str()).collect()
    };
    let won: Vec<WonRecord> = sqlx::query_as(sql::CONSUME_BATCH_POSTGRES)
        .bind(column(|r| &r.id))
        .bind(column(|r| &r.action))
        .bind(column(|r| &r.payload_hash))
        .bind(column(|r| &r.checked_facts_json))
        .fetch_all(&*batches)
        .await
        .map_err(db)?;
    let mut answers: Vec<Option<ApprovalRecord>> = requests.iter().map(|_| None).collect();
    for w in won {
        let slot = usize::try_from(w.ord - 1)
            .ok()
            .and_then(|i| answers.get_mut(i))
            .ok_or_else(|| {
                LedgerError::Unavailable("a consume batch answered an unknown request".to_owned())
            })?;
        *slot = Some(w.record);
    }
    Ok(answers)
}

/// The options the ledger connects with for a `postgres://` URL: sqlx's parse of it, in
/// plaintext on loopback unless an `sslmode` is named (`plaintext_on_loopback`).
pub fn connect_options(url: &str) -> Result<PgConnectOptions, ConnectError> {
    let options = PgConnectOptions::from_str(url).map_err(|_| ConnectError::InvalidUrl {
        backend: "postgres",
    })?;
    let ssl_mode_given = names_ssl_mode(url) || std::env::var_os("PGSSLMODE").is_some();
    Ok(plaintext_on_loopback(options, ssl_mode_given))
}

/// A Postgres on this host, reached over loopback or a Unix socket, is spoken to without TLS
/// unless the URL (or `PGSSLMODE`) names an `sslmode`: such traffic never leaves the kernel,
/// and sqlx's default (`prefer`, which verifies nothing) cost every statement a TLS record
/// each way (measured in bench/history.md "How it got here"). Any other host keeps sqlx's default.
fn plaintext_on_loopback(options: PgConnectOptions, ssl_mode_given: bool) -> PgConnectOptions {
    let host = options
        .get_host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let local = options.get_socket().is_some()
        || host.starts_with('/')
        || host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if local && !ssl_mode_given {
        options.ssl_mode(PgSslMode::Disable)
    } else {
        options
    }
}

/// Whether a URL's query names an `sslmode` (sqlx also reads `ssl-mode`).
fn names_ssl_mode(url: &str) -> bool {
    url.split_once('?').is_some_and(|(_, query)| {
        query.split('&').any(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            key.eq_ignore_ascii_case("sslmode") || key.eq_ignore_ascii_case("ssl-mode")
        })
    })
}

/// `lent` connections lent one statement at a time, over a lazy pool that also holds
/// `transactions` more.
fn leases(lent: u32, transactions: u32, options: PgConnectOptions) -> Leases {
    Leases::new(
        lazy_pool(lent + transactions, options),
        lent as usize,
        ACQUIRE_TIMEOUT,
        IDLE_BEFORE_PING,
    )
}

/// A pool that connects on first use, holding up to `max` connections.
fn lazy_pool(max: u32, options: PgConnectOptions) -> PgPool {
    PgPoolOptions::new()
        .max_connections(max)
        .min_connections(0)
        // A ping before every statement doubles the round trips of a busy session, so
        // only a connection that sat idle is pinged: after an outage it is found dead
        // here and replaced, instead of failing the first call after recovery.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= IDLE_BEFORE_PING {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_lazy_with(options)
}

crate::audit_store::impl_audit_store!(PostgresLedger);
crate::shared::impl_ledger!(PostgresLedger, "postgres", sql::POSTGRES);

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod batch_tests {
    //! The batched reads and consumes against a real Postgres: callers that go out together
    //! each get the answer they would have had alone.

    use care_core::ledger::{ApprovalStatus, ConsumeError, Ledger};
    use futures::future::join_all;

    use super::PostgresLedger;
    use crate::test_support::{approved_approval, execute, fresh_postgres_db};

    const ACTION: &str = "mail_send";
    const HASH: &str = "5e1d000000000000000000000000000000000000000000000000000000000001";

    #[tokio::test]
    async fn consumes_that_share_a_statement_each_get_their_own_answer() {
        let (url, _db) = fresh_postgres_db().await;
        let ledger = PostgresLedger::from_url(&url).unwrap();
        for i in 0..12 {
            approved_approval(&ledger, &format!("ok-{i}"), ACTION, HASH)
                .await
                .unwrap();
        }
        approved_approval(&ledger, "used", ACTION, HASH)
            .await
            .unwrap();
        ledger.consume("used", ACTION, HASH, "{}").await.unwrap();
        approved_approval(&ledger, "lapsed", ACTION, HASH)
            .await
            .unwrap();
        execute(
            &url,
            "UPDATE approvals SET expires_at = 0 WHERE id = 'lapsed'",
        )
        .await
        .unwrap();

        // Each approval twice (one of the two wins), a wrong hash, a wrong action, unknown,
        // used, lapsed: all at once, so most go out in shared statements.
        let mut calls: Vec<(String, &str, &str)> = Vec::new();
        for i in 0..12 {
            calls.push((format!("ok-{i}"), ACTION, HASH));
            calls.push((format!("ok-{i}"), ACTION, HASH));
        }
        calls.push(("ok-0".into(), ACTION, "ff"));
        calls.push(("ok-1".into(), "asc_review_reply", HASH));
        calls.push(("missing".into(), ACTION, HASH));
        calls.push(("used".into(), ACTION, HASH));
        calls.push(("lapsed".into(), ACTION, HASH));
        let answers = join_all(
            calls
                .iter()
                .map(|(id, action, hash)| ledger.consume(id, action, hash, "{}")),
        )
        .await;
        assert!(
            ledger.consumes.largest_batch() > 1,
            "the consumes never shared a statement"
        );

        for i in 0..12 {
            let id = format!("ok-{i}");
            let mine: Vec<_> = calls
                .iter()
                .zip(&answers)
                .filter(|((c, a, h), _)| *c == id && *a == ACTION && *h == HASH)
                .map(|(_, answer)| answer)
                .collect();
            assert_eq!(mine.len(), 2);
            assert_eq!(
                mine.iter().filter(|a| a.is_ok()).count(),
                1,
                "{id}: {mine:?}"
            );
            let lost = mine.iter().find_map(|a| a.as_ref().err());
            assert!(
                matches!(lost, Some(ConsumeError::Consumed)),
                "{id}: {lost:?}"
            );
            let row = ledger.approval(&id).await.unwrap().unwrap();
            assert_eq!(row.status, ApprovalStatus::Consumed, "{id}");
        }
        let tail: Vec<_> = answers[24..].iter().map(|a| a.as_ref().err()).collect();
        assert!(
            matches!(
                tail[0],
                Some(ConsumeError::Mismatch | ConsumeError::Consumed)
            ),
            "{tail:?}"
        );
        assert!(
            matches!(
                tail[1],
                Some(ConsumeError::Mismatch | ConsumeError::Consumed)
            ),
            "{tail:?}"
        );
        assert!(matches!(tail[2], Some(ConsumeError::NotFound)), "{tail:?}");
        assert!(matches!(tail[3], Some(ConsumeError::Consumed)), "{tail:?}");
        assert!(matches!(tail[4], Some(ConsumeError::Expired)), "{tail:?}");
        ledger.close().await;
    }

    #[tokio::test]
    async fn batches_are_planned_generically_and_calls_are_not() {
        let (url, _db) = fresh_postgres_db().await;
        let ledger = PostgresLedger::from_url(&url).unwrap();
        ledger.ready().await.unwrap();
        let mode = |leases| async move {
            sqlx::query_scalar::<_, String>("SHOW plan_cache_mode")
                .fetch_one(leases)
                .await
                .unwrap()
        };
        assert_eq!(mode(&*ledger.batches).await, "force_generic_plan");
        // KPI and list reads keep Postgres's choice: their `$1 IS NULL OR …` filters are
        // planned for the values given.
        assert_eq!(mode(&ledger.calls).await, "auto");
        ledger.close().await;
    }

    #[tokio::test]
    async fn reads_that_share_a_statement_each_get_their_row() {
        let (url, _db) = fresh_postgres_db().await;
        let ledger = PostgresLedger::from_url(&url).unwrap();
        for i in 0..6 {
            approved_approval(&ledger, &format!("r-{i}"), ACTION, HASH)
                .await
                .unwrap();
        }
        let ids: Vec<String> = (0..6)
            .chain(0..6)
            .map(|i| format!("r-{i}"))
            .chain(["r-missing".to_owned()])
            .collect();
        let rows = join_all(ids.iter().map(|id| ledger.approval(id))).await;
        assert!(
            ledger.reads.largest_batch() > 1,
            "the reads never shared a statement"
        );
        for (id, row) in ids.iter().zip(rows) {
            let row = row.unwrap();
            if id == "r-missing" {
                assert!(row.is_none());
            } else {
                assert_eq!(row.map(|r| r.id).as_deref(), Some(id.as_str()));
            }
        }
        ledger.close().await;
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use std::str::FromStr;

    use sqlx::postgres::{PgConnectOptions, PgSslMode};

    use super::{names_ssl_mode, plaintext_on_loopback};

    fn mode(url: &str) -> PgSslMode {
        let options = PgConnectOptions::from_str(url).expect("a valid test URL");
        plaintext_on_loopback(options, names_ssl_mode(url)).get_ssl_mode()
    }

    #[test]
    fn loopback_without_a_named_sslmode_is_plaintext() {
        for url in [
            "postgres://care@127.0.0.1:5432/care",
            "postgres://care@127.3.4.5/care",
            "postgres://care@localhost/care",
            "postgres://care@[::1]:5432/care",
            "postgres://care@%2Fvar%2Frun%2Fpostgresql/care",
        ] {
            assert!(matches!(mode(url), PgSslMode::Disable), "{url}");
        }
    }

    #[test]
    fn a_named_sslmode_or_another_host_is_left_alone() {
        assert!(matches!(
            mode("postgres://care@127.0.0.1/care?sslmode=require"),
            PgSslMode::Require
        ));
        assert!(matches!(
            mode("postgres://care@localhost/care?application_name=x&sslmode=verify-full"),
            PgSslMode::VerifyFull
        ));
        // "prefer" named on purpose stays "prefer", even on loopback.
        assert!(matches!(
            mode("postgres://care@127.0.0.1/care?sslmode=prefer"),
            PgSslMode::Prefer
        ));
        for url in [
            "postgres://care@care-mcp-postgres.care-mcp.svc:5432/care",
            "postgres://care@10.0.0.7/care",
            "postgres://care@[2001:db8::1]/care",
        ] {
            assert!(!matches!(mode(url), PgSslMode::Disable), "{url}");
        }
    }

    #[test]
    fn only_the_query_can_name_an_sslmode() {
        assert!(names_ssl_mode("postgres://h/db?sslmode=disable"));
        assert!(names_ssl_mode("postgres://h/db?x=1&SSLMODE=require"));
        assert!(names_ssl_mode("postgres://h/db?ssl-mode=require"));
        assert!(!names_ssl_mode("postgres://sslmode@h/sslmode"));
        assert!(!names_ssl_mode("postgres://h/db?application_name=sslmode"));
    }
}

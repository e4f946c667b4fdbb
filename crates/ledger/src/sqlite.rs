//! The SQLite ledger: one file shared by the role processes of one machine. WAL journal,
//! a busy timeout and `BEGIN IMMEDIATE` for read-then-write transactions keep concurrent
//! processes correct; single-statement changes (consume) are atomic on their own.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use care_core::approvals::RowPolicy;
use care_core::ledger::{
    ApprovalRow, ApprovalStatus, AuditRecord, AwaitingSummary, ConsumeError, CsatDistribution,
    CsatEntry, DecideError, DecisionRow, KpiEntry, KpiSeries, Ledger, LedgerError, NewApproval,
    NewDecision, SupportChannel, Ticket, WriteOutcome,
};
use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};
use tokio::sync::OnceCell;

use crate::clients::{CLIENT_BY_KEY, ClientRecord};
use crate::connect::ConnectError;
use crate::error::{db, migrate};
use crate::rows::{
    self, ApprovalRecord, AwaitingRecord, CsatCountRecord, DecisionRecord, KpiSeriesRecord, millis,
};
use crate::sqlite_checkpoint::{self, Checkpointer};
use crate::sqlite_read::Reader;
use crate::sqlite_write::Writer;
use crate::{rules, sql};

static MIGRATOR: Migrator = sqlx::migrate!("../../migrations/sqlite");

/// How long a statement waits for another process's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Longer than the busy timeout: queued callers wait for connections that are waiting on locks.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug)]
pub struct SqliteLedger {
    pool: SqlitePool,
    /// `<file>.migrate-lock`: serialises migrations between processes opening one file.
    migrate_lock: Option<PathBuf>,
    /// Set once migrations have run; left unset after a failure so the next call retries.
    migrated: OnceCell<()>,
    /// The hot reads' own connection (a file ledger only; `:memory:` is per connection).
    reader: Option<Reader>,
    /// The per-call writes' own connection and thread (a file ledger only).
    writer: Option<Writer>,
    /// WAL checkpoints on a thread of their own (a file ledger only).
    checkpointer: Option<Checkpointer>,
}

impl SqliteLedger {
    /// A ledger in the file at `path` (created, with its parent directories, when missing).
    pub fn open(path: &Path) -> Result<Self, ConnectError> {
        Self::from_options(SqliteConnectOptions::new().filename(path))
    }

    /// Parses a `sqlite://PATH` URL (query parameters as sqlx reads them).
    pub fn from_url(url: &str) -> Result<Self, ConnectError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|_| ConnectError::InvalidUrl { backend: "sqlite" })?;
        Self::from_options(options)
    }

    /// Applies the settings every process sharing the file must agree on, and builds the
    /// pool without connecting.
    pub fn from_options(options: SqliteConnectOptions) -> Result<Self, ConnectError> {
        if let Some(dir) = options
            .get_filename()
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)
                .map_err(|e| ConnectError::SqliteDir(format!("{}: {e}", dir.display())))?;
        }
        let file = options.get_filename();
        let on_disk = !file.as_os_str().is_empty() && file != Path::new(":memory:");
        let migrate_lock = on_disk.then(|| {
            let mut name = file.as_os_str().to_owned();
            name.push(".migrate-lock");
            PathBuf::from(name)
        });
        let reader = on_disk.then(|| Reader::new(file.to_path_buf()));
        let writer = on_disk.then(|| Writer::new(file.to_path_buf()));
        let checkpointer = on_disk.then(|| Checkpointer::new(file.to_path_buf()));
        let options = if on_disk {
            options.pragma(
                "wal_autocheckpoint",
                sqlite_checkpoint::BACKSTOP_PAGES.to_string(),
            )
        } else {
            options
        };
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            // One writer connection per process: SQLite takes one writer at a time anyway, and
            // two connections of one process competing for the lock wait in the busy handler's
            // millisecond sleeps (8 concurrent consumes: 1,200/s with 4 connections). The hot
            // reads have their own connection (`sqlite_read`).
            .max_connections(1)
            .min_connections(0)
            // A liveness ping before every statement doubles the round trips of each call;
            // a dead connection surfaces as an error on use and is replaced anyway.
            .test_before_acquire(false)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_lazy_with(options);
        Ok(Self {
            pool,
            migrate_lock,
            migrated: OnceCell::new(),
            reader,
            writer,
            checkpointer,
        })
    }

    /// The pool, once migrations are applied.
    pub(crate) async fn ready(&self) -> Result<&SqlitePool, LedgerError> {
        self.migrated
            .get_or_try_init(|| async {
                if self.migrations_current() {
                    if let Some(checkpointer) = &self.checkpointer {
                        checkpointer.start();
                    }
                    return Ok(());
                }
                // Role processes may open a fresh file at once, and SQLite gives sqlx's migrator
                // no lock of its own: an exclusive lock on a sibling file lets one process
                // migrate while the others wait, then find everything applied.
                let _held = match &self.migrate_lock {
                    Some(path) => Some(lock_file(path.clone()).await?),
                    None => None,
                };
                self.migrate().await?;
                if let Some(checkpointer) = &self.checkpointer {
                    checkpointer.start();
                }
                Ok::<_, LedgerError>(())
            })
            .await?;
        Ok(&self.pool)
    }

    /// Applies the migrations. A file ledger migrates on a connection of its own, closed once
    /// done: the pool's connection holds a thread and SQLite's caches for the process's life,
    /// and a role session's calls go to the reader and the writer, so the process that found
    /// the file new would keep both for nothing (bench/history.md "How it got here"). `:memory:` is one
    /// database per connection: it migrates the pool's.
    async fn migrate(&self) -> Result<(), LedgerError> {
        if self.migrate_lock.is_none() {
            return MIGRATOR.run(&self.pool).await.map_err(migrate);
        }
        let once = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with((*self.pool.connect_options()).clone())
            .await
            .map_err(db)?;
        let applied = MIGRATOR.run(&once).await.map_err(migrate);
        // Waits for the connection's thread to close the file.
        once.close().await;
        applied
    }

    /// Every migration this build embeds is applied, unchanged, and nothing else: read on the
    /// reader's connection (a file ledger), which every call's first read opens anyway.
    fn migrations_current(&self) -> bool {
        let Some(reader) = &self.reader else {
            return false;
        };
        let expected: Vec<(i64, &[u8])> = MIGRATOR
            .iter()
            .filter(|m| !m.migration_type.is_down_migration())
            .map(|m| (m.version, m.checksum.as_ref()))
            .collect();
        reader.migrations_current(&expected)
    }

    /// Closes the writers, then the checkpoint thread (after a last checkpoint), then the
    /// reader: the last connection of the last process to close removes the WAL file.
    async fn shutdown(&self) {
        self.pool.close().await;
        if let Some(writer) = &self.writer {
            writer.stop().await;
        }
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.stop().await;
        }
        if let Some(reader) = &self.reader {
            reader.close();
        }
    }

    async fn read_approval(&self, id: &str) -> Result<Option<ApprovalRecord>, LedgerError> {
        let pool = self.ready().await?;
        match &self.reader {
            Some(reader) => reader.approval(id),
            None => sqlx::query_as(sql::SQLITE.select_approval)
                .bind(id)
                .fetch_optional(pool)
                .await
                .map_err(db),
        }
    }

    /// A listing from the reader, unless a live approval has lapsed (`None`: the listing
    /// stores it `expired` first, in a write transaction). The write lock is then taken only
    /// when there is something to write, so an agent listing in a loop never waits on, or
    /// holds up, another process's consume.
    async fn read_approvals_unless_lapsed(
        &self,
        status: Option<&str>,
        limit: i64,
    ) -> Result<Option<Vec<ApprovalRecord>>, LedgerError> {
        self.ready().await?;
        match &self.reader {
            Some(reader) => reader.approvals_unless_lapsed(status, limit),
            None => Ok(None),
        }
    }

    /// Every HTTP request's token lookup: on the calling thread like the other hot reads.
    pub(crate) async fn read_client_by_key(
        &self,
        key_id: &str,
    ) -> Result<Option<ClientRecord>, LedgerError> {
        let pool = self.ready().await?;
        match &self.reader {
            Some(reader) => reader.client_by_key(key_id),
            None => sqlx::query_as(CLIENT_BY_KEY)
                .bind(key_id)
                .fetch_optional(pool)
                .await
                .map_err(db),
        }
    }

    async fn read_kpi_series(
        &self,
        metric: Option<&str>,
        since: Option<i64>,
    ) -> Result<Vec<KpiSeriesRecord>, LedgerError> {
        let pool = self.ready().await?;
        let mut series: Vec<KpiSeriesRecord> = match &self.reader {
            Some(reader) => reader.kpi_series(metric, since)?,
            None => sqlx::query_as(sql::KPI_SERIES)
                .bind(metric)
                .bind(since)
                .fetch_all(pool)
                .await
                .map_err(db)?,
        };
        // The query leaves the order to SQLite (a sort there costs more than this one).
        series.sort_unstable_by(|a, b| a.metric.cmp(&b.metric));
        Ok(series)
    }

    /// The one conditional update behind consume: the row when it won.
    async fn write_consume(
        &self,
        id: &str,
        action: &str,
        payload_hash: &str,
        checked_facts_json: &str,
    ) -> Result<Option<ApprovalRecord>, LedgerError> {
        let pool = self.ready().await?;
        match &self.writer {
            Some(writer) => {
                writer
                    .consume(id, action, payload_hash, checked_facts_json)
                    .await
            }
            None => sqlx::query_as(sql::SQLITE.consume)
                .bind(id)
                .bind(action)
                .bind(payload_hash)
                .bind(checked_facts_json)
                .fetch_optional(pool)
                .await
                .map_err(db),
        }
    }

    /// Stores a consumed row's outcome; the rows changed (0 or 1).
    async fn write_outcome(&self, id: &str, outcome_json: String) -> Result<u64, LedgerError> {
        let pool = self.ready().await?;
        match &self.writer {
            Some(writer) => writer
                .record_outcome(id, outcome_json)
                .await
                .map(|n| n as u64),
            None => {
                let done = sqlx::query(sql::SQLITE.record_outcome)
                    .bind(id)
                    .bind(outcome_json)
                    .execute(pool)
                    .await
                    .map_err(db)?;
                Ok(done.rows_affected())
            }
        }
    }

    /// The audit batch on the writer thread (a file ledger), else on sqlx's connection.
    pub(crate) fn audit_writer(&self) -> Option<&Writer> {
        self.writer.as_ref()
    }

    /// A transaction that takes the write lock at once: a deferred one that read first could
    /// not upgrade after another process wrote (SQLITE_BUSY_SNAPSHOT, which no timeout waits out).
    pub(crate) async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>, LedgerError> {
        self.ready()
            .await?
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db)
    }
}

/// Opens (creating) `path` and takes an exclusive advisory lock on it, released on drop. The
/// lock is tried at once; only when another process holds it (migrating the same new file) does
/// a blocking-pool thread wait for it, so the usual first start spawns no thread for it.
async fn lock_file(path: PathBuf) -> Result<std::fs::File, LedgerError> {
    let lock_error = |e: std::io::Error| LedgerError::Unavailable(format!("migration lock: {e}"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(lock_error)?;
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(e)) => return Err(lock_error(e)),
    }
    tokio::task::spawn_blocking(move || file.lock().map(|()| file))
        .await
        .map_err(|e| LedgerError::Unavailable(format!("migration lock: {e}")))?
        .map_err(lock_error)
}

crate::audit_store::impl_audit_store!(SqliteLedger);
crate::shared::impl_ledger!(SqliteLedger, "sqlite", sql::SQLITE);

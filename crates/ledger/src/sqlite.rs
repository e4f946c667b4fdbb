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

use crate::connect::ConnectError;
use crate::error::{db, migrate};
use crate::rows::{
    self, ApprovalRecord, AuditRow, AwaitingRecord, CsatCountRecord, DecisionRecord,
    KpiSeriesRecord, millis,
};
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
        let migrate_lock =
            (!file.as_os_str().is_empty() && file != Path::new(":memory:")).then(|| {
                let mut name = file.as_os_str().to_owned();
                name.push(".migrate-lock");
                PathBuf::from(name)
            });
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
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
        })
    }

    /// The pool, once migrations are applied.
    pub(crate) async fn ready(&self) -> Result<&SqlitePool, LedgerError> {
        self.migrated
            .get_or_try_init(|| async {
                // Role processes may open a fresh file at once, and SQLite gives sqlx's migrator
                // no lock of its own: an exclusive lock on a sibling file lets one process
                // migrate while the others wait, then find everything applied.
                let _held = match &self.migrate_lock {
                    Some(path) => Some(lock_file(path.clone()).await?),
                    None => None,
                };
                MIGRATOR.run(&self.pool).await.map_err(migrate)
            })
            .await?;
        Ok(&self.pool)
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

/// Opens (creating) `path` and takes an exclusive advisory lock on it, released on drop.
async fn lock_file(path: PathBuf) -> Result<std::fs::File, LedgerError> {
    tokio::task::spawn_blocking(move || {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        file.lock()?;
        Ok::<_, std::io::Error>(file)
    })
    .await
    .map_err(|e| LedgerError::Unavailable(format!("migration lock: {e}")))?
    .map_err(|e| LedgerError::Unavailable(format!("migration lock: {e}")))
}

crate::shared::impl_ledger!(SqliteLedger, "sqlite", sql::SQLITE);

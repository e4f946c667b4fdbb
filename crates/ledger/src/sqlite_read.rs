//! SQLite reads answered on the calling thread, over connections of their own (rusqlite on the
//! same bundled SQLite that sqlx links, so one copy of the library). A primary-key read costs a
//! few µs here; through sqlx it is a hand-off to the connection's worker thread and back, plus
//! one more per row, each a cross-CPU wake-up on a small machine. In WAL mode a reader never
//! waits for a writer, so the caller blocks for the statement alone. Writes stay on sqlx.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Duration;

use care_core::ledger::LedgerError;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::clients::{CLIENT_BY_KEY, ClientRecord};
use crate::rows::{ApprovalRecord, KpiSeriesRecord};
use crate::sql;

/// sqlx's record of applied migrations, in its order.
const APPLIED_MIGRATIONS: &str =
    "SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version";

/// How long a read waits when the file is locked for recovery (never for an ordinary writer).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Read connections a process keeps at most: one per runtime worker thread on a two-core
/// machine, so two overlapping reads (HTTP clients) do not queue on a lock.
const READERS: usize = 2;

/// The read connections, each opened on first use (after migrations) and reopened after a
/// failure. The second opens only when a read finds the first busy, so a stdio process, whose
/// reads never overlap, keeps one.
#[derive(Debug)]
pub(crate) struct Reader {
    path: PathBuf,
    conns: [Mutex<Option<Connection>>; READERS],
}

impl Reader {
    pub(crate) fn new(path: PathBuf) -> Self {
        Reader {
            path,
            conns: std::array::from_fn(|_| Mutex::new(None)),
        }
    }

    /// The first idle connection slot, else (every one busy) the first, waited for.
    fn slot(&self) -> MutexGuard<'_, Option<Connection>> {
        // A panic while holding a slot leaves nothing half-written: a poisoned one is reusable.
        let idle = self.conns.iter().find_map(|slot| match slot.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        });
        idle.unwrap_or_else(|| self.conns[0].lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Runs `read` on the connection; a failed statement drops the connection so the next
    /// read starts from a fresh one.
    fn with<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, LedgerError> {
        let mut guard = self.slot();
        if guard.is_none() {
            *guard = Some(self.open().map_err(unavailable)?);
        }
        let Some(conn) = guard.as_ref() else {
            return Err(LedgerError::Unavailable(
                "sqlite reader not open".to_owned(),
            ));
        };
        let result = read(conn);
        if result.is_err() {
            *guard = None;
        }
        result.map_err(unavailable)
    }

    /// Closes the connections (a later read reopens one).
    pub(crate) fn close(&self) {
        for slot in &self.conns {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = None;
        }
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        // The file exists and is migrated: the migration's connection created it before any read.
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.set_prepared_statement_cache_capacity(16);
        Ok(conn)
    }

    /// Whether the file holds exactly `expected` (version, checksum) as applied migrations, all
    /// successful: then sqlx's migrator would find nothing to do, and its connection, its lock
    /// and its five statements are spared. Anything else (no file, no table, a failed, missing,
    /// changed or unknown migration) is false, and the migrator decides.
    pub(crate) fn migrations_current(&self, expected: &[(i64, &[u8])]) -> bool {
        let applied = self.with(|conn| {
            conn.prepare_cached(APPLIED_MIGRATIONS)?
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, bool>(1)?,
                        r.get::<_, Vec<u8>>(2)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        });
        let Ok(applied) = applied else {
            return false;
        };
        applied.len() == expected.len()
            && applied
                .iter()
                .zip(expected)
                .all(|((version, success, checksum), (v, c))| {
                    *success && version == v && checksum.as_slice() == *c
                })
    }

    pub(crate) fn approval(&self, id: &str) -> Result<Option<ApprovalRecord>, LedgerError> {
        self.with(|conn| {
            conn.prepare_cached(sql::SQLITE.select_approval)?
                .query_row([id], ApprovalRecord::from_sqlite)
                .optional()
        })
    }

    /// The listing, read in one snapshot, or `None` when a live approval has lapsed: storing
    /// it `expired` comes first, and that is a write.
    pub(crate) fn approvals_unless_lapsed(
        &self,
        status: Option<&str>,
        limit: i64,
    ) -> Result<Option<Vec<ApprovalRecord>>, LedgerError> {
        self.with(|conn| {
            // Dropped unfinished: a read-only transaction rolls back to nothing.
            let snapshot = conn.unchecked_transaction()?;
            let lapsed: bool = snapshot
                .prepare_cached(sql::SQLITE_ANY_LAPSED)?
                .query_row([], |r| r.get(0))?;
            if lapsed {
                return Ok(None);
            }
            snapshot
                .prepare_cached(sql::SQLITE.list_approvals)?
                .query_map(
                    rusqlite::params![status, limit],
                    ApprovalRecord::from_sqlite,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map(Some)
        })
    }

    pub(crate) fn client_by_key(&self, key_id: &str) -> Result<Option<ClientRecord>, LedgerError> {
        self.with(|conn| {
            conn.prepare_cached(CLIENT_BY_KEY)?
                .query_row([key_id], ClientRecord::from_sqlite)
                .optional()
        })
    }

    pub(crate) fn kpi_series(
        &self,
        metric: Option<&str>,
        since: Option<i64>,
    ) -> Result<Vec<KpiSeriesRecord>, LedgerError> {
        self.with(|conn| {
            conn.prepare_cached(sql::KPI_SERIES)?
                .query_map(
                    rusqlite::params![metric, since],
                    KpiSeriesRecord::from_sqlite,
                )?
                .collect()
        })
    }
}

fn unavailable(e: rusqlite::Error) -> LedgerError {
    LedgerError::Unavailable(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_overlapping_another_takes_the_second_connection() {
        let reader = Reader::new(PathBuf::from("/nonexistent/ledger.db"));
        let first = reader.slot();
        // With one slot this would wait for `first`, held by this same thread: a deadlock.
        let second = reader.slot();
        assert!(!std::ptr::eq(&raw const *first, &raw const *second));
    }
}

//! WAL checkpoints off the commit path. SQLite's automatic checkpoint runs inside the commit
//! that crosses its threshold, so one call in a thousand pages pays for copying the WAL back and
//! syncing the file (milliseconds on a busy disk; it was the p99 of every SQLite write). A
//! thread of its own checkpoints instead, PASSIVE (it never waits for readers or writers, nor
//! blocks them), every [`EVERY`]; the writer's own threshold stays as a backstop.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::ledger_thread::{self, Running};

/// How often the thread checkpoints.
const EVERY: Duration = Duration::from_millis(200);

/// The writer connection's automatic checkpoint, in pages: reached only if this thread stalls.
pub(crate) const BACKSTOP_PAGES: u32 = 10_000;

/// A small stack: the thread runs one pragma in a loop.
const STACK: usize = 256 * 1024;

#[derive(Debug)]
pub(crate) struct Checkpointer {
    path: PathBuf,
    running: Running<()>,
}

impl Checkpointer {
    pub(crate) fn new(path: PathBuf) -> Self {
        Checkpointer {
            path,
            running: Mutex::new(None),
        }
    }

    /// Starts the thread (once the file exists and is migrated); a no-op when running.
    pub(crate) fn start(&self) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.is_some() {
            return;
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let path = self.path.clone();
        match std::thread::Builder::new()
            .name("sqlite-checkpoint".to_owned())
            .stack_size(STACK)
            .spawn(move || run(&path, &stopped))
        {
            Ok(thread) => *running = Some((stop, thread)),
            // The writer's backstop threshold still checkpoints.
            Err(e) => tracing::warn!(error = %e, "sqlite checkpoint thread not started"),
        }
    }

    /// Stops the thread after a last checkpoint and waits for it.
    pub(crate) async fn stop(&self) {
        ledger_thread::stop(&self.running).await;
    }
}

fn run(path: &Path, stopped: &Receiver<()>) {
    // Opened at the first round, not when the thread starts: a role's start-up (measured in
    // bench/ as cold start) does not pay for a third connection reading the schema.
    let mut conn: Option<Connection> = None;
    let mut warned = false;
    loop {
        let stop = match stopped.recv_timeout(EVERY) {
            Err(RecvTimeoutError::Timeout) => false,
            // Stopped, or the ledger is gone: one last checkpoint, then out.
            Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
        };
        if conn.is_none() {
            match open(path) {
                Ok(opened) => conn = Some(opened),
                Err(e) if !warned => {
                    warned = true;
                    tracing::warn!(error = %e, "sqlite checkpoint connection not opened; retrying");
                }
                Err(_) => {}
            }
        }
        // BUSY (another process's checkpoint is running) is harmless: the next round retries.
        if let Some(conn) = &conn
            && let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
        {
            tracing::debug!(error = %e, "sqlite checkpoint skipped");
        }
        if stop {
            break;
        }
    }
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // The same durability as the writers: the checkpoint syncs the database file.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

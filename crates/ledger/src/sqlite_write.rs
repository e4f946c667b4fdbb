//! SQLite's per-call writes on a thread of their own, over a connection of its own (rusqlite,
//! like `sqlite_read`): the audit trail's batches, the consume and the outcome it leads to.
//! Through sqlx each statement of a transaction is a hand-off to the connection's worker thread
//! and back (an audit batch took four: begin, rows, head, commit), each a cross-CPU wake-up on a
//! small machine; here a whole job is one hand-off, and the answer comes back on a oneshot.
//! Jobs that queued up while the thread was busy share one transaction (`sqlite_group`).
//! The rarer writes (approvals, decisions, KPI and CSAT rows, tickets, client windows) stay on
//! sqlx's connection; when the two meet, SQLite's busy handler makes one wait for the other.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use care_core::ledger::{AuditBatch, LedgerError};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use tokio::sync::oneshot;

use crate::ledger_thread::{self, Running};
use crate::rows::{self, ApprovalRecord, millis};
use crate::sql;
use crate::sqlite_checkpoint::BACKSTOP_PAGES;
use crate::sqlite_group;

/// How long a write waits for another connection's write lock (the same as sqlx's side).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// SQLite's statements run on this thread's stack: far below the default 2 MiB, above what a
/// prepared insert or update needs.
const STACK: usize = 512 * 1024;

/// One audit row's insert, executed once per row inside the batch's transaction.
const INSERT_AUDIT_ROW: &str = "INSERT INTO audit (at, role, client, tool, outcome, error_code, approval_id, duration_us, \
     args_digest, capability, session, decision, rules, denied_by, output_bytes, output_items, \
     output_truncated, approval_trail, chain_id, chain_seq, prev_hash, row_hash) VALUES \
     (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, \
     ?21, ?22)";

/// The chain head's upsert.
const UPSERT_CHAIN_HEAD: &str = "INSERT INTO audit_chains \
     (chain_id, started_at, head_seq, head_hash, head_mac) VALUES (?1, ?2, ?3, ?4, ?5) \
     ON CONFLICT (chain_id) DO UPDATE SET head_seq = excluded.head_seq, \
     head_hash = excluded.head_hash, head_mac = excluded.head_mac";

pub(crate) type Reply<T> = oneshot::Sender<Result<T, LedgerError>>;

/// What the thread is asked to do.
pub(crate) enum Job {
    /// The rows and the head in one write transaction.
    Audit(Box<AuditBatch>, Reply<()>),
    /// The one conditional update; the row when it won.
    Consume {
        id: String,
        action: String,
        payload_hash: String,
        checked_facts_json: String,
        reply: Reply<Option<ApprovalRecord>>,
    },
    /// Rows changed by the outcome's update (0 or 1).
    Outcome {
        id: String,
        outcome_json: String,
        reply: Reply<usize>,
    },
}

/// The writer thread, started at the first write (after migrations) and again if it is gone.
#[derive(Debug)]
pub(crate) struct Writer {
    path: PathBuf,
    running: Running<Job>,
}

impl Writer {
    pub(crate) fn new(path: PathBuf) -> Self {
        Writer {
            path,
            running: Mutex::new(None),
        }
    }

    pub(crate) async fn append_audit(&self, batch: &AuditBatch) -> Result<(), LedgerError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Audit(Box::new(batch.clone()), reply))?;
        receive(answer).await
    }

    pub(crate) async fn consume(
        &self,
        id: &str,
        action: &str,
        payload_hash: &str,
        checked_facts_json: &str,
    ) -> Result<Option<ApprovalRecord>, LedgerError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Consume {
            id: id.to_owned(),
            action: action.to_owned(),
            payload_hash: payload_hash.to_owned(),
            checked_facts_json: checked_facts_json.to_owned(),
            reply,
        })?;
        receive(answer).await
    }

    pub(crate) async fn record_outcome(
        &self,
        id: &str,
        outcome_json: String,
    ) -> Result<usize, LedgerError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Outcome {
            id: id.to_owned(),
            outcome_json,
            reply,
        })?;
        receive(answer).await
    }

    /// Hands `job` to the thread, starting it if it is not running (or has died).
    fn submit(&self, job: Job) -> Result<(), LedgerError> {
        // The caller waits for the writer thread's answer: awake, not on a halted CPU.
        care_core::awake::ledger_answer_due();
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let job = match running.as_ref() {
            Some((jobs, _)) => match jobs.send(job) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let (jobs, queue) = mpsc::channel();
        let path = self.path.clone();
        let thread = std::thread::Builder::new()
            .name("sqlite-writer".to_owned())
            .stack_size(STACK)
            .spawn(move || run(&path, &queue))
            .map_err(|e| LedgerError::Unavailable(format!("sqlite writer thread: {e}")))?;
        jobs.send(job)
            .map_err(|_| LedgerError::Unavailable("sqlite writer stopped".to_owned()))?;
        *running = Some((jobs, thread));
        Ok(())
    }

    /// Finishes the queued jobs, closes the connection and waits for the thread.
    pub(crate) async fn stop(&self) {
        ledger_thread::stop(&self.running).await;
    }
}

async fn receive<T>(answer: oneshot::Receiver<Result<T, LedgerError>>) -> Result<T, LedgerError> {
    answer
        .await
        .unwrap_or_else(|_| Err(LedgerError::Unavailable("sqlite writer stopped".to_owned())))
}

fn run(path: &Path, queue: &Receiver<Job>) {
    let mut conn: Option<Connection> = None;
    while let Ok(first) = queue.recv() {
        let mut jobs = vec![first];
        // Whatever queued up meanwhile goes in the same transaction: under concurrent callers
        // one commit (its WAL frames, its lock) serves them all instead of one each.
        while jobs.len() < sqlite_group::MAX_JOBS {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let opened = match conn.take() {
            Some(c) => Ok(c),
            None => open(path),
        };
        let c = match opened {
            Ok(c) => c,
            Err(e) => {
                jobs.into_iter().for_each(|job| refuse(job, &e));
                continue;
            }
        };
        // A failed statement drops the connection: the next job starts from a fresh one.
        let healthy = match <[Job; 1]>::try_from(jobs) {
            Ok([job]) => perform(&c, job),
            Err(jobs) => sqlite_group::perform(&c, jobs),
        };
        if healthy {
            conn = Some(c);
        }
    }
}

/// Runs one `job` in a transaction of its own (the consume and the outcome: one statement)
/// and answers it; false when it failed.
fn perform(conn: &Connection, job: Job) -> bool {
    match job {
        Job::Audit(batch, reply) => answer(reply, append(conn, &batch)),
        job => execute(conn, job).answer(),
    }
}

/// Runs `job`'s statements on `conn` (inside whatever transaction it is in) without answering.
pub(crate) fn execute(conn: &Connection, job: Job) -> Done {
    match job {
        Job::Audit(batch, reply) => Done::Audit(reply, append_rows(conn, &batch)),
        Job::Consume {
            id,
            action,
            payload_hash,
            checked_facts_json,
            reply,
        } => Done::Consume(
            reply,
            conn.prepare_cached(sql::SQLITE.consume).and_then(|mut s| {
                // By name: SQLite numbers `$n` parameters in order of appearance, not by n.
                s.query_row(
                    rusqlite::named_params! {
                        "$1": id, "$2": action, "$3": payload_hash, "$4": checked_facts_json,
                    },
                    ApprovalRecord::from_sqlite,
                )
                .optional()
            }),
        ),
        Job::Outcome {
            id,
            outcome_json,
            reply,
        } => Done::Outcome(
            reply,
            conn.prepare_cached(sql::SQLITE.record_outcome)
                .and_then(|mut s| {
                    s.execute(rusqlite::named_params! { "$1": id, "$2": outcome_json })
                }),
        ),
    }
}

/// A job whose statements ran, with its result, not yet answered.
// Held only in the writer thread's group for the length of one transaction; a box would be one
// more allocation per consume.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Done {
    Audit(Reply<()>, rusqlite::Result<()>),
    Consume(
        Reply<Option<ApprovalRecord>>,
        rusqlite::Result<Option<ApprovalRecord>>,
    ),
    Outcome(Reply<usize>, rusqlite::Result<usize>),
}

impl Done {
    pub(crate) fn failed(&self) -> bool {
        match self {
            Done::Audit(_, r) => r.is_err(),
            Done::Consume(_, r) => r.is_err(),
            Done::Outcome(_, r) => r.is_err(),
        }
    }

    /// Sends the result; false when it was an error.
    pub(crate) fn answer(self) -> bool {
        match self {
            Done::Audit(reply, r) => answer(reply, r),
            Done::Consume(reply, r) => answer(reply, r),
            Done::Outcome(reply, r) => answer(reply, r),
        }
    }

    /// Answers `e` instead of the result: what it did was not committed.
    pub(crate) fn fail(self, e: &rusqlite::Error) {
        let e = unavailable_ref(e);
        match self {
            Done::Audit(reply, _) => drop(reply.send(Err(e))),
            Done::Consume(reply, _) => drop(reply.send(Err(e))),
            Done::Outcome(reply, _) => drop(reply.send(Err(e))),
        }
    }
}

fn answer<T>(reply: Reply<T>, result: rusqlite::Result<T>) -> bool {
    let ok = result.is_ok();
    // A caller that stopped waiting changes nothing: the write is done or failed either way.
    let _ = reply.send(result.map_err(unavailable));
    ok
}

pub(crate) fn refuse(job: Job, e: &rusqlite::Error) {
    match job {
        Job::Audit(_, reply) => {
            let _ = reply.send(Err(unavailable_ref(e)));
        }
        Job::Consume { reply, .. } => {
            let _ = reply.send(Err(unavailable_ref(e)));
        }
        Job::Outcome { reply, .. } => {
            let _ = reply.send(Err(unavailable_ref(e)));
        }
    }
}

/// The rows and the chain's new head, both or neither (the transaction rolls back on drop).
fn append(conn: &Connection, batch: &AuditBatch) -> rusqlite::Result<()> {
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    append_rows(&tx, batch)?;
    tx.commit()
}

/// The rows and the chain's new head, in the transaction `conn` is in.
fn append_rows(conn: &Connection, batch: &AuditBatch) -> rusqlite::Result<()> {
    {
        let mut insert = conn.prepare_cached(INSERT_AUDIT_ROW)?;
        for (r, link) in &batch.rows {
            let output = r.output;
            insert.execute(rusqlite::params![
                millis(r.at),
                r.role,
                r.client,
                r.tool,
                r.outcome,
                r.error_code,
                r.approval_id,
                rows::duration_us(r.duration_us),
                r.args_digest,
                r.capability,
                r.session,
                r.decision,
                r.rules.join(","),
                r.denied_by,
                output.map(|o| rows::duration_us(o.bytes)),
                output.map(|o| rows::duration_us(o.items)),
                output.map(|o| o.truncated),
                r.approval_trail,
                link.chain,
                link.seq,
                link.prev_hash,
                link.hash,
            ])?;
        }
        let head = &batch.head;
        conn.prepare_cached(UPSERT_CHAIN_HEAD)?
            .execute(rusqlite::params![
                head.chain,
                millis(head.started_at),
                head.seq,
                head.hash,
                head.mac,
            ])?;
    }
    Ok(())
}

/// The writer connection's page cache, in SQLite's negative-means-KiB form: 256 KiB. Appends
/// touch a few pages at the right edge of each b-tree; at 512 KiB the cache still filled in a
/// 2,100-call session, for no measured gain in write latency (bench/: RSS −0.3 MiB).
const WRITER_CACHE_SIZE: i64 = -256;

fn open(path: &Path) -> rusqlite::Result<Connection> {
    // The file exists and is migrated: the sqlx pool created it before any write came here.
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // The settings of sqlx's writer connection (`SqliteLedger::from_options`).
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "wal_autocheckpoint", BACKSTOP_PAGES)?;
    // Appends touch the right edge of each b-tree; a page read again comes from the OS's page
    // cache. SQLite's default (2 MiB) filled up in a 2,100-call session: a third of its heap.
    conn.pragma_update(None, "cache_size", WRITER_CACHE_SIZE)?;
    conn.set_prepared_statement_cache_capacity(8);
    Ok(conn)
}

fn unavailable(e: rusqlite::Error) -> LedgerError {
    unavailable_ref(&e)
}

fn unavailable_ref(e: &rusqlite::Error) -> LedgerError {
    LedgerError::Unavailable(e.to_string())
}

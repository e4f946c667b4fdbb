//! Group commit for SQLite's writer thread: the jobs that queued up while it was busy (audit
//! batches, consumes, outcomes) run in one transaction, each inside a savepoint of its own, and
//! are answered only once that transaction has committed.
//!
//! What each caller is promised does not change. A consume is still one conditional statement,
//! run after every job queued before it on one thread; its answer (and so the external write)
//! waits for the commit that made it durable. A job whose statement fails is rolled back to its
//! savepoint alone and answered with its error. If the transaction itself is lost (SQLite rolls
//! it back, or the commit fails), every job of the group is answered `Unavailable` and none of
//! them has changed anything: a consume answered so was not consumed.

use rusqlite::{Connection, TransactionBehavior};

use crate::sqlite_write::{Done, Job, execute, refuse};

/// At most this many jobs share a transaction, so one commit's answers are not held up behind
/// an unbounded queue (eight workers queue a handful; 32 a few dozen).
pub(crate) const MAX_JOBS: usize = 64;

/// Runs `jobs` in one transaction and answers each; false when any of them failed (the
/// connection is then dropped, as after a single job's failure).
pub(crate) fn perform(conn: &Connection, jobs: Vec<Job>) -> bool {
    let tx = match rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            jobs.into_iter().for_each(|job| refuse(job, &e));
            return false;
        }
    };
    let lost = rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some("the group's transaction was rolled back".to_owned()),
    );
    let mut healthy = true;
    let mut done = Vec::with_capacity(jobs.len());
    let mut jobs = jobs.into_iter();
    for job in jobs.by_ref() {
        if let Err(e) = tx.execute_batch("SAVEPOINT job") {
            refuse(job, &e);
            healthy = false;
            break;
        }
        let ran = execute(&tx, job);
        healthy &= !ran.failed();
        done.push(ran);
        // SQLite rolls a whole transaction back on some errors (a full disk, an I/O error,
        // RAISE(ROLLBACK)): what ran before is gone, and a statement run now would commit on
        // its own. RELEASE would be such a statement: stop before it.
        if tx.is_autocommit() {
            break;
        }
        let end = if healthy_of(done.last()) {
            "RELEASE job"
        } else {
            "ROLLBACK TO job; RELEASE job"
        };
        if tx.execute_batch(end).is_err() {
            healthy = false;
            break;
        }
    }
    jobs.for_each(|job| refuse(job, &lost));
    if tx.is_autocommit() {
        done.into_iter().for_each(|ran| ran.fail(&lost));
        return false;
    }
    match tx.commit() {
        Ok(()) => done.into_iter().fold(healthy, |ok, ran| ran.answer() && ok),
        Err(e) => {
            done.into_iter().for_each(|ran| ran.fail(&e));
            false
        }
    }
}

/// Whether the job that just ran succeeded.
fn healthy_of(ran: Option<&Done>) -> bool {
    ran.is_some_and(|r| !r.failed())
}

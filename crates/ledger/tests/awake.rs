//! The ledger marks the process's activity ([`care_core::awake`]) as it sends each statement
//! whose answer its caller waits for, so a stdio session's thread waits for that answer awake
//! instead of on a halted CPU: every Postgres statement, every job of SQLite's writer thread.
//! One test alone in its binary: the activity is the process's, and statements of tests running
//! beside it would mark it too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::task::Poll;

use care_core::awake::{FOR_LEDGER_ANSWER, process};
use care_core::ledger::Ledger;
use care_ledger::test_support::{fresh_postgres_db, temp_sqlite};

const ACTION: &str = "mail_send";
const HASH: &str = "5e1d000000000000000000000000000000000000000000000000000000000001";

async fn open(url: &str) -> Arc<dyn Ledger> {
    care_ledger::connect(Some(url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap()
}

/// Whether the activity is marked while a consume of an unknown approval is on its way: polled
/// until it is answered, looking at the activity between polls (on Postgres a task of the
/// ledger's sends it, a poll or two after the call). A few tries, so that one preemption of
/// this thread for longer than the window cannot fail the test; a ledger that never marks
/// fails every try.
async fn marked_by_a_statement(ledger: &dyn Ledger) -> bool {
    for _ in 0..3 {
        tokio::time::sleep(FOR_LEDGER_ANSWER * 3).await;
        assert!(!process().due(), "nothing is due before the statement");
        let consume = ledger.consume("apr_unknown", ACTION, HASH, "{}");
        tokio::pin!(consume);
        let mut due = false;
        loop {
            let polled = futures::poll!(&mut consume);
            // Looked at after every poll, the last one too: on a loaded machine the writer
            // thread can answer before this thread polls again, and the call then ends in one poll.
            due |= process().due();
            if let Poll::Ready(answer) = polled {
                assert!(answer.is_err(), "an unknown approval is refused");
                break;
            }
            tokio::task::yield_now().await;
        }
        if due {
            return true;
        }
    }
    false
}

/// Opens the ledger at `url`, has it open, migrated and (SQLite) its writer thread started
/// before anything is looked at, then asks [`marked_by_a_statement`].
async fn marks_on(url: &str) -> bool {
    let ledger = open(url).await;
    assert!(
        ledger
            .consume("apr_warm", ACTION, HASH, "{}")
            .await
            .is_err()
    );
    let marked = marked_by_a_statement(ledger.as_ref()).await;
    ledger.close().await;
    marked
}

#[tokio::test(flavor = "current_thread")]
async fn each_statement_sent_keeps_the_thread_awake_for_its_answer() {
    let (url, _dir) = temp_sqlite();
    assert!(
        marks_on(&url).await,
        "SQLite: a job for the writer thread did not mark the activity"
    );

    let (url, _db) = fresh_postgres_db().await;
    assert!(
        marks_on(&url).await,
        "Postgres: a statement did not mark the activity"
    );

    // Long after the last answer nothing is due: a mark is a moment, never a state.
    tokio::time::sleep(FOR_LEDGER_ANSWER * 3).await;
    assert!(!process().due());
}

//! SQLite's writer thread runs the jobs that queued up while it was busy in one transaction
//! (`sqlite_group`). These tests queue a group on purpose: another connection holds the write
//! lock while the consumes arrive, so the first waits alone and the rest queue behind it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Only its approval helpers; the suite itself runs in sqlite.rs and postgres.rs.
#[allow(unused_macros, unused_imports)]
mod conformance;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use care_core::ledger::{ApprovalRow, ApprovalStatus, ConsumeError, Ledger};
use care_ledger::test_support::temp_sqlite;
use conformance::{ACTION, FACTS, HASH, approved};
use tokio::task::JoinHandle;

type Answer = Result<ApprovalRow, ConsumeError>;

async fn open(url: &str) -> Arc<dyn Ledger> {
    care_ledger::connect(Some(url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap()
}

fn file_of(url: &str) -> PathBuf {
    PathBuf::from(url.trim_start_matches("sqlite://"))
}

/// Another connection on the file, for what the ledger never does (triggers, the write lock).
fn side_connection(url: &str) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(file_of(url)).unwrap();
    c.busy_timeout(Duration::from_secs(5)).unwrap();
    c
}

fn consume(l: &Arc<dyn Ledger>, id: &str) -> JoinHandle<(String, Answer)> {
    let (l, id) = (Arc::clone(l), id.to_owned());
    tokio::spawn(async move {
        let answer = l.consume(&id, ACTION, HASH, FACTS).await;
        (id, answer)
    })
}

/// Consumes `first` alone (it waits for the write lock `side` holds), then `group`, queued
/// behind it in its order, released together; every answer, `first`'s included.
async fn queue_a_group(
    l: &Arc<dyn Ledger>,
    side: &rusqlite::Connection,
    first: &str,
    group: &[String],
) -> Vec<(String, Answer)> {
    side.execute_batch("BEGIN IMMEDIATE").unwrap();
    let mut tasks = vec![consume(l, first)];
    tokio::time::sleep(Duration::from_millis(150)).await;
    // One at a time, so the queue holds them in this order.
    for id in group {
        tasks.push(consume(l, id));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    side.execute_batch("COMMIT").unwrap();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    answers
}

async fn status(l: &Arc<dyn Ledger>, id: &str) -> ApprovalStatus {
    l.approval(id).await.unwrap().unwrap().status
}

/// Every approval of a group wins once, even when the group holds two consumes of it: the
/// second runs after the first in the same transaction and is told `Consumed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_consumes_each_approval_once() {
    let (url, _dir) = temp_sqlite();
    let l = open(&url).await;
    let ids: Vec<String> = (0..10).map(|i| format!("g{i}")).collect();
    approved(l.as_ref(), "first").await;
    for id in &ids {
        approved(l.as_ref(), id).await;
    }
    let twice: Vec<String> = ids.iter().chain(ids.iter()).cloned().collect();
    let side = side_connection(&url);

    let answers = queue_a_group(&l, &side, "first", &twice).await;

    for id in ids.iter().chain(std::iter::once(&"first".to_owned())) {
        let mine: Vec<&Answer> = answers
            .iter()
            .filter(|(i, _)| i == id)
            .map(|(_, a)| a)
            .collect();
        let won = mine.iter().filter(|a| a.is_ok()).count();
        assert_eq!(won, 1, "{id}: {mine:?}");
        assert!(
            mine.iter()
                .all(|a| matches!(a, Ok(_) | Err(ConsumeError::Consumed))),
            "{id}: {mine:?}"
        );
        assert_eq!(status(&l, id).await, ApprovalStatus::Consumed, "{id}");
    }
    l.close().await;
}

/// A ledger with `first` and nine approvals approved, `boom` in the middle of them (jobs before
/// it and after it in one group), and a side connection whose trigger makes the consume of
/// `boom` `RAISE(<raise>, …)`: ABORT fails the statement, ROLLBACK the whole transaction.
async fn with_boom(
    raise: &str,
) -> (
    Arc<dyn Ledger>,
    rusqlite::Connection,
    Vec<String>,
    tempfile::TempDir,
) {
    let (url, dir) = temp_sqlite();
    let l = open(&url).await;
    let ids: Vec<String> = ["g0", "g1", "g2", "g3", "boom", "g4", "g5", "g6", "g7"]
        .map(str::to_owned)
        .to_vec();
    approved(l.as_ref(), "first").await;
    for id in &ids {
        approved(l.as_ref(), id).await;
    }
    let side = side_connection(&url);
    side.execute_batch(&format!(
        "CREATE TRIGGER boom BEFORE UPDATE OF status ON approvals WHEN NEW.id = 'boom' \
         BEGIN SELECT RAISE({raise}, 'boom'); END"
    ))
    .unwrap();
    (l, side, ids, dir)
}

/// A job whose statement fails is rolled back alone: the rest of its group commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_leaves_the_rest_of_its_group() {
    let (l, side, ids, _dir) = with_boom("ABORT").await;

    let answers = queue_a_group(&l, &side, "first", &ids).await;

    for (id, answer) in &answers {
        if id == "boom" {
            assert!(matches!(answer, Err(ConsumeError::Ledger(_))), "{answer:?}");
            assert_eq!(status(&l, id).await, ApprovalStatus::Approved);
        } else {
            assert!(answer.is_ok(), "{id}: {answer:?}");
            assert_eq!(status(&l, id).await, ApprovalStatus::Consumed, "{id}");
        }
    }
    l.close().await;
}

/// A job that makes SQLite roll the whole transaction back fails its whole group: no consume
/// of it is answered as won, none is stored, and none ran afterwards on its own. The writer
/// then goes on with a fresh connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_transaction_fails_its_whole_group() {
    let (l, side, ids, _dir) = with_boom("ROLLBACK").await;

    let answers = queue_a_group(&l, &side, "first", &ids).await;

    for (id, answer) in &answers {
        if id == "first" {
            assert!(answer.is_ok(), "{answer:?}");
            continue;
        }
        assert!(
            matches!(answer, Err(ConsumeError::Ledger(_))),
            "{id}: {answer:?}"
        );
        assert_eq!(status(&l, id).await, ApprovalStatus::Approved, "{id}");
    }
    side.execute_batch("DROP TRIGGER boom").unwrap();
    for id in &ids {
        let won = l.consume(id, ACTION, HASH, FACTS).await;
        assert!(won.is_ok(), "{id}: {won:?}");
    }
    l.close().await;
}

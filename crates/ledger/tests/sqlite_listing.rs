//! Listing approvals on a SQLite file reads without the write lock unless a live row has
//! lapsed: an agent listing in a loop neither waits for another process's write nor holds
//! one up. (What a listing returns, lapsed rows included, is the conformance suite's.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Only its approval helpers; the suite itself runs in sqlite.rs and postgres.rs.
#[allow(unused_macros, unused_imports)]
mod conformance;

use std::path::{Path, PathBuf};
use std::time::Duration;

use care_core::ledger::{ApprovalStatus, Ledger};
use care_ledger::test_support::temp_sqlite;
use conformance::{new_approval, short_lived, wait_past};

fn file_of(url: &str) -> PathBuf {
    PathBuf::from(url.trim_start_matches("sqlite://"))
}

#[tokio::test]
async fn a_listing_does_not_wait_for_another_processs_write() {
    let (url, _dir) = temp_sqlite();
    let ledger = care_ledger::connect(Some(&url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap();
    let ledger: &dyn Ledger = ledger.as_ref();
    ledger
        .create_approval(&new_approval(ledger, "w1").await)
        .await
        .unwrap();

    // Another process in the middle of a write transaction holds the file's write lock.
    let other = rusqlite::Connection::open(file_of(&url)).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    for _ in 0..3 {
        let listed = tokio::time::timeout(Duration::from_secs(2), ledger.list_approvals(None, 10))
            .await
            .expect("the listing waited for another connection's write lock")
            .unwrap();
        assert_eq!(
            listed
                .iter()
                .map(|r| (r.id.as_str(), r.status))
                .collect::<Vec<_>>(),
            [("w1", ApprovalStatus::Pending)]
        );
    }
    other.execute_batch("COMMIT").unwrap();
}

#[tokio::test]
async fn a_lapsed_row_is_stored_expired_once_the_write_lock_is_free() {
    let (url, _dir) = temp_sqlite();
    let ledger = care_ledger::connect(Some(&url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap();
    let ledger: &dyn Ledger = ledger.as_ref();
    let lapsing = short_lived(ledger, "w2", 200).await;
    ledger.create_approval(&lapsing).await.unwrap();
    wait_past(ledger, lapsing.expires_at).await;

    // The listing must write, so it waits (within the busy timeout) for the other writer.
    let other = rusqlite::Connection::open(file_of(&url)).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let listing = ledger.list_approvals(Some(ApprovalStatus::Pending), 10);
    let release = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        other.execute_batch("COMMIT").unwrap();
    };
    let (listed, ()) = tokio::join!(listing, release);
    assert!(listed.unwrap().is_empty(), "w2 is no longer pending");
    let row = rusqlite::Connection::open(file_of(&url))
        .unwrap()
        .query_row("SELECT status FROM approvals WHERE id = 'w2'", [], |r| {
            r.get::<_, String>(0)
        })
        .unwrap();
    assert_eq!(row, "expired", "stored, not only reported");
}

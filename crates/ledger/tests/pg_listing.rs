//! Postgres's listing of approvals reads in one statement and writes only when a live row has
//! lapsed: a replica listing in a loop neither waits for another's write to the table nor
//! holds one up, and a lapsed row is still stored `expired` before it is listed.
//! (`CARE_TEST_DATABASE_URL`, as for `postgres.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Only its approval helpers; the suite itself runs in sqlite.rs and postgres.rs.
#[allow(unused_macros, unused_imports)]
mod conformance;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use care_core::ledger::{ApprovalStatus, Ledger};
use care_ledger::test_support::{PgTestDb, fresh_postgres_db};
use conformance::{listed_ids, new_approval, short_lived, wait_past};
use sqlx::{Connection, PgConnection};

async fn open() -> (Arc<dyn Ledger>, PgTestDb) {
    let (url, db) = fresh_postgres_db().await;
    let ledger = care_ledger::connect(Some(&url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap();
    (ledger, db)
}

async fn create_pending(l: &dyn Ledger, id: &str) {
    l.create_approval(&new_approval(l, id).await).await.unwrap();
}

/// Another session in the middle of a transaction that holds the approvals table against
/// every write (`SHARE` conflicts with the `ROW EXCLUSIVE` an `UPDATE` takes) but not reads.
async fn hold_table_against_writes(db: &PgTestDb) -> PgConnection {
    let mut other = PgConnection::connect(db.url()).await.unwrap();
    sqlx::raw_sql("BEGIN; LOCK TABLE approvals IN SHARE MODE")
        .execute(&mut other)
        .await
        .unwrap();
    other
}

#[tokio::test]
async fn a_listing_does_not_wait_for_a_write_to_the_table() {
    let (ledger, db) = open().await;
    let ledger: &dyn Ledger = ledger.as_ref();
    create_pending(ledger, "p1").await;

    let mut other = hold_table_against_writes(&db).await;
    for status in [
        None,
        Some(ApprovalStatus::Pending),
        Some(ApprovalStatus::Expired),
    ] {
        let listed =
            tokio::time::timeout(Duration::from_secs(2), ledger.list_approvals(status, 10))
                .await
                .expect("the listing waited for another session's lock on the table")
                .unwrap();
        let expected: &[(&str, ApprovalStatus)] = if status == Some(ApprovalStatus::Expired) {
            &[]
        } else {
            &[("p1", ApprovalStatus::Pending)]
        };
        assert_eq!(
            listed
                .iter()
                .map(|r| (r.id.as_str(), r.status))
                .collect::<Vec<_>>(),
            expected,
            "{status:?}"
        );
    }
    sqlx::raw_sql("COMMIT").execute(&mut other).await.unwrap();
    other.close().await.unwrap();
    ledger.close().await;
}

#[tokio::test]
async fn a_lapsed_row_is_stored_expired_once_the_table_is_free() {
    let (ledger, db) = open().await;
    let ledger: &dyn Ledger = ledger.as_ref();
    create_pending(ledger, "p2").await;
    let lapsing = short_lived(ledger, "p3", 200).await;
    ledger.create_approval(&lapsing).await.unwrap();
    wait_past(ledger, lapsing.expires_at).await;

    // The listing must write, so it waits for the other session's transaction.
    let mut other = hold_table_against_writes(&db).await;
    let listing = listed_ids(ledger, Some(ApprovalStatus::Expired));
    let release = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        sqlx::raw_sql("COMMIT").execute(&mut other).await.unwrap();
    };
    let (listed, ()) = tokio::join!(listing, release);
    assert_eq!(listed, ["p3"], "the lapsed row is listed as expired");

    let stored: Vec<(String, String)> =
        sqlx::query_as("SELECT id, status FROM approvals ORDER BY id")
            .fetch_all(&mut other)
            .await
            .unwrap();
    assert_eq!(
        stored,
        [
            ("p2".to_owned(), "pending".to_owned()),
            ("p3".to_owned(), "expired".to_owned())
        ],
        "stored, not only reported"
    );
    other.close().await.unwrap();
    ledger.close().await;
}

/// An empty table, and a page the filter leaves empty: one row that carries only the flag,
/// read as no approval.
#[tokio::test]
async fn an_empty_page_lists_nothing() {
    let (ledger, _db) = open().await;
    let ledger: &dyn Ledger = ledger.as_ref();
    assert!(listed_ids(ledger, None).await.is_empty());
    create_pending(ledger, "p4").await;
    for status in [ApprovalStatus::Approved, ApprovalStatus::Consumed] {
        assert!(
            listed_ids(ledger, Some(status)).await.is_empty(),
            "{status:?}"
        );
    }
    ledger.close().await;
}

//! A SQLite file ledger has two writing connections in one process: its writer thread's (audit
//! batches, consumes, outcomes) and sqlx's (everything else). These tests make them meet, and
//! check that the start-up shortcut past sqlx's migrator never hides a migration that differs.
//! A listing of approvals takes neither unless a live row has lapsed: it reads without the
//! write lock, so an agent listing in a loop neither waits for another process's write nor
//! holds one up.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Only its approval helpers; the suite itself runs in sqlite.rs and postgres.rs.
#[allow(unused_macros, unused_imports)]
mod conformance;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use care_core::audit::Auditor;
use care_core::audit_chain;
use care_core::ledger::{
    ApprovalStatus, AuditQuery, AuditRecord, ConsumeError, Decision, KpiEntry, Ledger, WriteOutcome,
};
use care_ledger::test_support::{execute, temp_sqlite};
use chrono::Utc;
use conformance::{ACTION, FACTS, HASH, a, decision, legacy, new_approval, short_lived, wait_past};

const SALT: &[u8] = b"sk-demo-sqlite-writer-salt";

async fn open(url: &str) -> Arc<dyn Ledger> {
    care_ledger::connect(Some(url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap()
}

fn file_of(url: &str) -> PathBuf {
    PathBuf::from(url.trim_start_matches("sqlite://"))
}

fn row(i: u64) -> AuditRecord {
    AuditRecord {
        at: Utc::now(),
        role: "ops".to_owned(),
        client: "agent".to_owned(),
        tool: "kpi_record".to_owned(),
        outcome: "ok".to_owned(),
        duration_us: i,
        args_digest: "d".to_owned(),
        ..AuditRecord::default()
    }
}

fn kpi(i: u32) -> KpiEntry {
    KpiEntry {
        metric: format!("m{}", i % 5),
        value: f64::from(i),
        target: None,
        unit: None,
        higher_is_better: true,
        recorded_at: Utc::now(),
        recorded_by_role: "ops".to_owned(),
    }
}

/// Audit rows, approvals, decisions, consumes, outcomes and KPI rows from many tasks at once,
/// on both of the process's connections: nothing fails with `database is locked`, each
/// approval is consumed once, and the chain holds every row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_writing_connections_of_one_process_interleave() {
    let (url, _dir) = temp_sqlite();
    let ledger = open(&url).await;
    let auditor = Auditor::new(Arc::clone(&ledger), SALT);
    let mut tasks = Vec::new();
    for i in 0..40u32 {
        let (l, au) = (Arc::clone(&ledger), auditor.clone());
        tasks.push(tokio::spawn(async move {
            let id = format!("w{i}");
            l.create_approval(&new_approval(l.as_ref(), &id).await)
                .await
                .unwrap();
            l.record_decision(&decision(&id, &a(), Decision::Approve, i), &legacy())
                .await
                .unwrap();
            au.record_now(&row(u64::from(i))).await.unwrap();
            l.record_kpi(&kpi(i)).await.unwrap();
            let won = l.consume(&id, ACTION, HASH, FACTS).await.unwrap();
            assert_eq!(won.id, id);
            let again = l.consume(&id, ACTION, HASH, FACTS).await;
            assert!(matches!(again, Err(ConsumeError::Consumed)), "{again:?}");
            l.record_outcome(&id, &WriteOutcome::Sent).await.unwrap();
            au.record(&row(1000 + u64::from(i))).await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    auditor.flush().await;

    let rows = ledger
        .audit_rows(&AuditQuery {
            limit: 1000,
            oldest_first: true,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(rows.len(), 80);
    let heads = ledger.audit_heads().await.unwrap();
    assert!(audit_chain::verify(SALT, rows, &heads).intact());
    let series = ledger.kpi_series(None, None).await.unwrap();
    assert_eq!(series.iter().map(|s| s.count).sum::<u64>(), 40);
    for i in 0..40 {
        let row = ledger.approval(&format!("w{i}")).await.unwrap().unwrap();
        assert!(row.outcome.is_some(), "w{i} has no outcome");
    }
    ledger.close().await;
}

/// Closing the last ledger on a file checkpoints and removes its WAL: the writer thread's
/// connection is closed too, not left holding the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_leaves_no_wal_behind() {
    let (url, _dir) = temp_sqlite();
    let ledger = open(&url).await;
    let auditor = Auditor::new(Arc::clone(&ledger), SALT);
    for i in 0..50 {
        auditor.record_now(&row(i)).await.unwrap();
    }
    ledger.record_kpi(&kpi(1)).await.unwrap();
    let mut wal = file_of(&url).into_os_string();
    wal.push("-wal");
    assert!(Path::new(&wal).exists(), "the writes went through the WAL");
    ledger.close().await;
    assert!(!Path::new(&wal).exists(), "a -wal file was left behind");
}

/// A file whose record of a migration differs from this build's (edited, or one this build
/// does not know) is refused as sqlx's migrator refuses it: the shortcut that skips the
/// migrator on an up-to-date file must not take it for up to date.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_with_a_changed_or_unknown_migration_is_refused() {
    for tamper in [
        "UPDATE _sqlx_migrations SET checksum = X'00' WHERE version = \
         (SELECT MIN(version) FROM _sqlx_migrations)",
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99990101000000, 'from a newer build', 1, X'00', 0)",
        "UPDATE _sqlx_migrations SET success = 0 WHERE version = \
         (SELECT MAX(version) FROM _sqlx_migrations)",
    ] {
        let (url, _dir) = temp_sqlite();
        let first = open(&url).await;
        first.ping().await.unwrap();
        first.close().await;
        assert_eq!(execute(&url, tamper).await.unwrap(), 1, "{tamper}");

        let second = open(&url).await;
        assert!(second.ping().await.is_err(), "accepted after: {tamper}");
        assert!(
            second.approval("nope").await.is_err(),
            "read after: {tamper}"
        );
        second.close().await;
    }
}

/// An up-to-date file opens without sqlx's migrator, and a fresh one still gets every
/// migration from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_file_is_migrated_and_a_current_one_reopens() {
    let (url, _dir) = temp_sqlite();
    let first = open(&url).await;
    assert!(first.approval("nope").await.unwrap().is_none());
    first.close().await;
    let second = open(&url).await;
    assert!(second.approval("nope").await.unwrap().is_none());
    let auditor = Auditor::new(Arc::clone(&second), SALT);
    auditor.record_now(&row(1)).await.unwrap();
    second.close().await;
}

#[tokio::test]
async fn a_listing_does_not_wait_for_another_processs_write() {
    let (url, _dir) = temp_sqlite();
    let ledger = open(&url).await;
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
    let ledger = open(&url).await;
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

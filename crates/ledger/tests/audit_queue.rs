//! The audit writer's promises for an ordinary call's row, which the call does not wait for, on
//! both backends: the row reaches the ledger on its own within a bounded time (no flush, no
//! later call to carry it), and a flush returns only once every row queued before it is
//! stored, in call order, on one chain that verifies. (The stderr line is written before the
//! row is queued: `Auditor::record`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use care_core::audit::Auditor;
use care_core::audit_chain;
use care_core::ledger::{AuditQuery, AuditRecord, Ledger};
use care_ledger::test_support::{fresh_postgres_db, temp_sqlite};
use chrono::Utc;

const SALT: &[u8] = b"sk-demo-audit-queue-salt";

/// Far beyond the writer's linger (2 ms) and any commit on a loaded CI machine: a liveness
/// bound, not a speed target.
const BOUND: Duration = Duration::from_secs(10);

/// More than one batch holds (256), so a flush has to wait for two commits.
const BURST: u64 = 300;

fn row(n: u64) -> AuditRecord {
    AuditRecord {
        at: Utc::now(),
        role: "ops".to_owned(),
        client: "queue".to_owned(),
        tool: "kpi_report".to_owned(),
        outcome: "ok".to_owned(),
        duration_us: n,
        args_digest: "d".repeat(64),
        session: "s-queue".to_owned(),
        decision: "allow".to_owned(),
        ..AuditRecord::default()
    }
}

async fn open(url: &str) -> Arc<dyn Ledger> {
    care_ledger::connect(Some(url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap()
}

async fn stored(ledger: &dyn Ledger) -> Vec<AuditRecord> {
    ledger.recent_audit(1000).await.unwrap()
}

async fn a_queued_row_reaches_the_ledger_unprompted(ledger: Arc<dyn Ledger>) {
    let auditor = Auditor::new(Arc::clone(&ledger), SALT);
    auditor.record(&row(7)).await;
    let started = Instant::now();
    loop {
        if stored(ledger.as_ref())
            .await
            .iter()
            .any(|r| r.duration_us == 7)
        {
            break;
        }
        assert!(
            started.elapsed() < BOUND,
            "a queued audit row was not stored within {BOUND:?} without a flush"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // The auditor is still alive and nobody flushed: the writer stored it on its own.
    drop(auditor);
    ledger.close().await;
}

async fn a_flush_returns_once_every_queued_row_is_stored(ledger: Arc<dyn Ledger>) {
    let auditor = Auditor::new(Arc::clone(&ledger), SALT);
    for n in 0..BURST {
        auditor.record(&row(n)).await;
    }
    auditor.flush().await;
    let rows = ledger
        .audit_rows(&AuditQuery {
            oldest_first: true,
            limit: 1000,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    let order: Vec<u64> = rows.iter().map(|r| r.record.duration_us).collect();
    assert_eq!(
        order,
        (0..BURST).collect::<Vec<_>>(),
        "every row, in call order"
    );
    let heads = ledger.audit_heads().await.unwrap();
    assert_eq!(heads.len(), 1, "one chain per auditor");
    let report = audit_chain::verify(SALT, rows, &heads);
    assert!(report.intact(), "{report:?}");
    ledger.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_queued_row_reaches_the_ledger_unprompted() {
    let (url, _dir) = temp_sqlite();
    a_queued_row_reaches_the_ledger_unprompted(open(&url).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_queued_row_reaches_the_ledger_unprompted() {
    let (url, _db) = fresh_postgres_db().await;
    a_queued_row_reaches_the_ledger_unprompted(open(&url).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_flush_returns_once_every_queued_row_is_stored() {
    let (url, _dir) = temp_sqlite();
    a_flush_returns_once_every_queued_row_is_stored(open(&url).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_flush_returns_once_every_queued_row_is_stored() {
    let (url, _db) = fresh_postgres_db().await;
    a_flush_returns_once_every_queued_row_is_stored(open(&url).await).await;
}

//! Six role processes share one SQLite file: six ledgers (separate pools, as separate
//! processes would have) opening one fresh file at once all become ready, and then write
//! concurrently without `database is locked` failures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use care_core::audit::Auditor;
use care_core::ledger::{AuditRecord, Ledger};
use care_ledger::SqliteLedger;
use chrono::Utc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_ledgers_open_and_write_one_fresh_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared/ledger.db");
    let ledgers: Vec<Arc<dyn Ledger>> = (0..6)
        .map(|_| Arc::new(SqliteLedger::open(&path).unwrap()) as Arc<dyn Ledger>)
        .collect();

    let pings: Vec<_> = ledgers
        .iter()
        .map(|l| {
            let l = l.clone();
            tokio::spawn(async move { l.ping().await })
        })
        .collect();
    for p in pings {
        p.await.unwrap().unwrap();
    }

    // One auditor (one chain) per process, all appending at once to one file.
    let auditors: Vec<Auditor> = ledgers
        .iter()
        .map(|l| Auditor::new(l.clone(), b"sk-demo-shared-file-salt"))
        .collect();
    let writes: Vec<_> = auditors
        .iter()
        .enumerate()
        .flat_map(|(i, a)| (0..20).map(move |j| (i, j, a.clone())))
        .map(|(i, j, a)| {
            tokio::spawn(async move {
                a.record_now(&AuditRecord {
                    at: Utc::now(),
                    role: format!("role{i}"),
                    client: "c".to_owned(),
                    tool: "kpi_record".to_owned(),
                    outcome: "ok".to_owned(),
                    duration_us: j,
                    args_digest: "d".to_owned(),
                    ..AuditRecord::default()
                })
                .await
            })
        })
        .collect();
    for w in writes {
        w.await.unwrap().unwrap();
    }
    let heads = ledgers[0].audit_heads().await.unwrap();
    assert_eq!(heads.len(), 6);
    assert!(heads.iter().all(|h| h.seq == 20), "{heads:?}");
    let rows = ledgers[0]
        .audit_rows(&care_core::ledger::AuditQuery {
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap();
    let report = care_core::audit_chain::verify(b"sk-demo-shared-file-salt", rows, &heads);
    assert!(report.intact(), "{report:?}");
    assert_eq!(ledgers[0].recent_audit(1000).await.unwrap().len(), 120);
}

/// A process that finds the migration lock of a new file held (another process migrating it)
/// waits for it without failing, then finds every migration applied.
#[tokio::test]
async fn a_ledger_waits_while_another_process_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let other = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.path().join("ledger.db.migrate-lock"))
        .unwrap();
    other.lock().unwrap();

    let ledger = SqliteLedger::open(&path).unwrap();
    let ready = tokio::spawn(async move { ledger.ping().await });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !ready.is_finished(),
        "the ledger went on while another process held the migration lock"
    );
    other.unlock().unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), ready)
        .await
        .expect("still waiting after the lock was released")
        .unwrap()
        .unwrap();
}

//! The process that finds a SQLite file new migrates it on a connection it then closes. A role
//! session's calls go to the reader and the writer, so a migration connection left open would
//! be a thread and SQLite's caches kept for the process's life. Alone in its file: it counts
//! this test process's threads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use care_core::ledger::KpiEntry;
use care_ledger::test_support::temp_sqlite;
use chrono::Utc;

/// Threads of this process running a sqlx SQLite connection (the name is cut to 15 bytes).
fn sqlx_connection_threads() -> usize {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    tasks
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|name| name.starts_with("sqlx-sqlite-wor"))
        })
        .count()
}

/// The count once it settles on `want` (a closed connection's thread ends just after), or
/// what it is after two seconds.
async fn settled_threads(want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let n = sqlx_connection_threads();
        if n == want || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn migrating_a_new_file_leaves_no_connection_open() {
    let (url, _dir) = temp_sqlite();
    let ledger = care_ledger::connect(Some(&url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap();
    assert_eq!(sqlx_connection_threads(), 0, "nothing opened at start");

    // The first call migrates the new file, then reads on the reader's connection.
    let missing = ledger.approval(&format!("apr_{}", "0".repeat(32))).await;
    assert!(missing.unwrap().is_none());
    let listed = ledger.list_approvals(None, 10).await.unwrap();
    assert!(listed.is_empty());
    assert_eq!(
        settled_threads(0).await,
        0,
        "the migration's connection is still open after the first calls"
    );

    // A call that needs sqlx's own connection opens it then (what the count above would see).
    let entry = KpiEntry {
        metric: "first_response_minutes".to_owned(),
        value: 12.0,
        target: None,
        unit: None,
        higher_is_better: false,
        recorded_at: Utc::now(),
        recorded_by_role: "ops".to_owned(),
    };
    ledger.record_kpi(&entry).await.unwrap();
    assert_eq!(settled_threads(1).await, 1);
    ledger.close().await;
}

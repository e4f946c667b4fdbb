//! Consumption across OS processes: the test binary re-runs itself as child processes
//! (`race_child`), each racing several tasks to consume one approval; exactly one call in
//! all of them wins and every other one is told `Consumed`. Both backends.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use care_core::ledger::{ApprovalStatus, ConsumeError};
use care_ledger::test_support::{approved_approval, fresh_postgres_db, temp_sqlite};
use chrono::{TimeDelta, Utc};

const PROCESSES: usize = 2;
const TASKS: usize = 8;
const ACTION: &str = "mail_send";
const HASH: &str = "5e1d000000000000000000000000000000000000000000000000000000000001";
/// Set only in child processes: the ledger URL, the approval id, and the start time (Unix ms).
const ENV_URL: &str = "CARE_RACE_URL";
const ENV_ID: &str = "CARE_RACE_ID";
const ENV_START: &str = "CARE_RACE_START_MS";
const RESULT_PREFIX: &str = "RACE_RESULT";

/// The child side: without the environment it is a no-op (the normal test run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn race_child() {
    let (Ok(url), Ok(id), Ok(start)) = (
        std::env::var(ENV_URL),
        std::env::var(ENV_ID),
        std::env::var(ENV_START),
    ) else {
        return;
    };
    let ledger = care_ledger::connect(Some(&url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap();
    // Connect and migrate before the start line so the race is on the update alone.
    ledger.ping().await.unwrap();
    let start: i64 = start.parse().unwrap();
    let wait = start - Utc::now().timestamp_millis();
    if let Ok(ms) = u64::try_from(wait) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let ledger = ledger.clone();
            let id = id.clone();
            tokio::spawn(async move { ledger.consume(&id, ACTION, HASH, "{}").await })
        })
        .collect();
    let (mut won, mut consumed, mut other) = (0, 0, Vec::new());
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(ConsumeError::Consumed) => consumed += 1,
            Err(e) => other.push(e.to_string()),
        }
    }
    eprintln!(
        "{RESULT_PREFIX} won={won} consumed={consumed} other={}",
        other.len()
    );
    assert!(other.is_empty(), "unexpected consume errors: {other:?}");
}

async fn race(url: &str) {
    let ledger = care_ledger::connect(Some(url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap();
    let id = format!("race-{}", uuid::Uuid::new_v4().simple());
    approved_approval(ledger.as_ref(), &id, ACTION, HASH)
        .await
        .unwrap();

    // Every child waits for the same start line, well after all of them are up.
    let start = (Utc::now() + TimeDelta::milliseconds(2500)).timestamp_millis();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            tokio::process::Command::new(&exe)
                .args(["race_child", "--exact", "--nocapture", "--test-threads=1"])
                .env(ENV_URL, url)
                .env(ENV_ID, &id)
                .env(ENV_START, start.to_string())
                .output()
        })
        .collect();
    let (mut won, mut consumed) = (0, 0);
    for child in children {
        let out = child.await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed: {stderr}");
        let line = stderr
            .lines()
            .find_map(|l| l.strip_prefix(RESULT_PREFIX))
            .unwrap_or_else(|| panic!("child printed no result: {stderr}"));
        for field in line.split_whitespace() {
            match field.split_once('=') {
                Some(("won", n)) => won += n.parse::<usize>().unwrap(),
                Some(("consumed", n)) => consumed += n.parse::<usize>().unwrap(),
                _ => {}
            }
        }
    }
    assert_eq!(won, 1, "exactly one consumer wins");
    assert_eq!(
        consumed,
        PROCESSES * TASKS - 1,
        "every other consumer is told Consumed"
    );
    let row = ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);
}

#[tokio::test]
async fn consume_race_across_processes_sqlite() {
    let (url, _dir) = temp_sqlite();
    race(&url).await;
}

#[tokio::test]
async fn consume_race_across_processes_postgres() {
    let (url, _db) = fresh_postgres_db().await;
    race(&url).await;
}

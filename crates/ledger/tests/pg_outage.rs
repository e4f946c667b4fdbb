//! A Postgres that is down at start, goes away and comes back: the ledger is built while it
//! is down, answers `Unavailable` while it is down, and recovers by itself (migrations
//! included) once it is up. Runs its own throwaway cluster (initdb/pg_ctl).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use std::time::{Duration, Instant};

use care_core::approvals::{ApproverKey, RowPolicy};
use care_core::canonical::HashEncoding;
use care_core::ledger::{Ledger, LedgerError, NewApproval};
use care_ledger::test_support::ThrowawayCluster as Cluster;
use chrono::TimeDelta;

/// Asserts the ledger answers `Unavailable` (a ping, a read, a listing), and promptly (the acquire timeout, not a hang).
async fn assert_unavailable(ledger: &dyn Ledger) {
    let t = Instant::now();
    let ping = ledger.ping().await;
    assert!(
        matches!(ping, Err(LedgerError::Unavailable(_))),
        "ping: {ping:?}"
    );
    let read = ledger.approval("o-1").await;
    assert!(
        matches!(read, Err(LedgerError::Unavailable(_))),
        "approval: {read:?}"
    );
    let listed = ledger.list_approvals(None, 10).await;
    assert!(
        matches!(listed, Err(LedgerError::Unavailable(_))),
        "list: {listed:?}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t.elapsed()
    );
}

/// Waits (bounded) for the ledger to answer again after the database returned.
async fn assert_recovers(ledger: &dyn Ledger) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match ledger.ping().await {
            Ok(()) => return,
            Err(e) if Instant::now() < deadline => {
                eprintln!("not yet recovered: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("ledger did not recover: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outage_at_start_and_midway_recovers() {
    let started = Instant::now();
    let cluster = Cluster::init();

    // Down at start: construction still succeeds, calls answer Unavailable.
    let ledger = care_ledger::connect(Some(&cluster.url()), Path::new("/nonexistent/unused.db"))
        .await
        .expect("the ledger is built while Postgres is down");
    assert_eq!(ledger.backend(), "postgres");
    assert_unavailable(ledger.as_ref()).await;

    // Up: the same ledger connects and applies its migrations.
    cluster.start();
    assert_recovers(ledger.as_ref()).await;
    let now = ledger.clock().await.unwrap();
    ledger
        .create_approval(&NewApproval {
            id: "o-1".to_owned(),
            action: "mail_send".to_owned(),
            arguments_json: "{}".to_owned(),
            payload_hash: "00".to_owned(),
            requested_by_role: "mail".to_owned(),
            requested_by_client: "outage".to_owned(),
            reason: None,
            created_at: now,
            expires_at: now + TimeDelta::minutes(10),
            hash_encoding: HashEncoding::Jcs,
            policy: RowPolicy::new(vec![approver()], 1),
            checked_facts_json: "{}".to_owned(),
            card_event_id: None,
            card_text: None,
        })
        .await
        .unwrap();

    // Down midway: pooled connections are dead, calls answer Unavailable.
    cluster.stop();
    assert_unavailable(ledger.as_ref()).await;

    // Back: recovered without a restart, data intact.
    cluster.start();
    assert_recovers(ledger.as_ref()).await;
    let row = ledger.approval("o-1").await.unwrap();
    assert!(row.is_some(), "the row written before the outage is there");
    let listed = ledger.list_approvals(None, 10).await.unwrap();
    assert_eq!(listed.len(), 1, "and listed again");

    eprintln!("outage test took {:?}", started.elapsed());
}

/// A throwaway approver key (secret `0x11…11`).
fn approver() -> ApproverKey {
    ApproverKey::from_hex(&"11".repeat(32)).unwrap()
}

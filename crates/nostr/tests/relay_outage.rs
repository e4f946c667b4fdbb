//! The relay failing: down during a request (unavailable, no row left), cut off while the
//! server runs (status still answers from the ledger, never wrongly), back again (reconnect
//! with backoff, resubscribe, catch up), and a restarted server catching up on older cards.
//! These control the server's path to the relay, so they always use the in-process relay.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use care_core::approval_channel::ApprovalChannel;
use common::{Setup, World, fast_options, free_port, reply_args};
use serde_json::json;

fn request_args() -> serde_json::Value {
    json!({"action": "asc_review_reply", "arguments": reply_args("hi")})
}

async fn wait_not_live(w: &World) {
    let deadline = tokio::time::Instant::now() + common::DEADLINE;
    while w.channel.is_live().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still live after the cut"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn in_process() -> bool {
    // An external relay cannot be cut by the test; these cases need the in-process one.
    common::external_relay().is_none()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_down_during_the_request_is_upstream_unavailable_and_leaves_no_row() {
    // Nothing listens on this port: the server still starts and serves.
    let w = World::new(Setup {
        relay_url: Some(format!("ws://127.0.0.1:{}", free_port())),
        ..Setup::default()
    })
    .await;
    let err = w
        .call("approval_request", request_args())
        .await
        .unwrap_err();
    assert_eq!(err, "UPSTREAM_UNAVAILABLE");
    let rows = w.ledger.list_approvals(None, 100).await.unwrap();
    assert!(rows.is_empty(), "a row was left behind: {rows:?}");
    assert!(!w.channel.is_live().await);
    // The other tools still serve.
    assert!(w.call("kpi_report", json!({})).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_off_mid_session_requests_fail_cleanly_then_the_server_reconnects() {
    if !in_process() {
        return;
    }
    let w = World::new(Setup {
        via_proxy: true,
        ..Setup::default()
    })
    .await;
    let proxy = w.proxy.clone().unwrap();
    w.wait_live().await;
    proxy.cut();
    wait_not_live(&w).await;
    assert_eq!(
        w.call("approval_request", request_args())
            .await
            .unwrap_err(),
        "UPSTREAM_UNAVAILABLE"
    );
    assert!(w.ledger.list_approvals(None, 100).await.unwrap().is_empty());

    proxy.restore().await;
    w.wait_live().await;
    let (id, card) = w.request("hi").await;
    w.react(&w.approvers[0], card, "+").await;
    w.wait_status(&id, "approved").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_never_gives_a_wrong_answer_and_reactions_during_it_are_caught_up() {
    if !in_process() {
        return;
    }
    let w = World::new(Setup {
        via_proxy: true,
        ..Setup::default()
    })
    .await;
    let proxy = w.proxy.clone().unwrap();
    w.wait_live().await;
    let (id, card) = w.request("hello").await;

    proxy.cut();
    wait_not_live(&w).await;
    // An approver reacts while the server cannot hear the relay.
    w.react(&w.approvers[0], card, "✅").await;
    // approval_status still answers, from the ledger: stale, never wrong.
    assert_eq!(w.status(&id).await, "pending");
    let row = w.ledger.approval(&id).await.unwrap().unwrap();
    assert!(
        w.channel.refresh(&row).await.is_err(),
        "a refresh without any relay claimed success"
    );
    // No relay to confirm on: no consume (and it was not approved anyway).
    assert_eq!(
        w.send("hello", &id).await.unwrap_err(),
        "UPSTREAM_UNAVAILABLE"
    );

    // Back: the pool reconnects (with backoff) and the resubscription catches up.
    proxy.restore().await;
    w.wait_status(&id, "approved").await;
    assert!(w.send("hello", &id).await.is_ok());
    assert_eq!(w.sent().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_fetches_reactions_to_older_cards_on_read() {
    let first = World::new(Setup::default()).await;
    first.wait_live().await;
    let (id, card) = first.request("hello").await;
    first.channel.shutdown().await;
    first.react(&first.approvers[0], card, "👍").await;
    // The new process subscribes from "now": its live subscription alone would never see the
    // reaction; the first read of the older card fetches it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut options = fast_options();
    options.catch_up = Duration::ZERO;
    let second = first.restarted(options).await;
    second.wait_live().await;
    assert_eq!(
        second.ledger_status(&id).await,
        care_core::ledger::ApprovalStatus::Pending
    );
    assert_eq!(second.status(&id).await, "approved");
}

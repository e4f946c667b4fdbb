//! The channel is the truth of a decision; the ledger caches it. Before a consume the server
//! reads the card's reactions from the relay itself, so a rejection made while no server process
//! ran, or while the server could not reach the relay, still wins; a relay that does not answer
//! completely means no consume at all. Rows carry their policy, and the ledger's clock decides
//! time: processes configured differently, or with a clock that is off, judge alike.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use care_core::ledger::{ApprovalStatus, Decision};
use care_nostr::evidence::verify_decision;
use common::{Setup, World, fast_options};
use serde_json::json;

/// A restart whose live subscription reaches back nowhere: whatever it learns about reactions
/// made before it started, it learns from the confirmation, not from the subscription.
fn no_look_back() -> care_nostr::ChannelOptions {
    care_nostr::ChannelOptions {
        catch_up: Duration::ZERO,
        ..fast_options()
    }
}

fn in_process() -> bool {
    // These cut or restart the server's own path to the relay: in-process relay only.
    common::external_relay().is_none()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_made_while_no_server_runs_wins() {
    let first = World::new(Setup::default()).await;
    first.wait_live().await;
    let (id, card) = first.request("Thanks for the review!").await;
    first.react(&first.approvers[0], card, "✅").await;
    first.wait_status(&id, "approved").await;
    // The agent session ends: no server process is listening any more.
    first.channel.shutdown().await;
    // Meanwhile the second approver rejects, in their own client, on the relay (a few
    // seconds before the next process starts: its subscription reaches back to its start).
    let rejection = first.react_ago(&first.approvers[1], card, "❌", 3).await;
    // A fresh process (its subscription reaching back nowhere) is asked to send.
    let fresh = first.restarted(no_look_back()).await;
    fresh.wait_live().await;
    assert_eq!(
        fresh.ledger_status(&id).await,
        ApprovalStatus::Approved,
        "the ledger alone still says approved"
    );
    let refused = fresh.send("Thanks for the review!", &id).await.unwrap_err();
    assert_eq!(refused, "APPROVAL_REJECTED");
    assert!(fresh.sent().is_empty(), "nothing may be sent");
    assert!(first.sent().is_empty());
    assert_eq!(fresh.ledger_status(&id).await, ApprovalStatus::Rejected);
    // The signed rejection is on record and verifies offline.
    let row = fresh.ledger.approval(&id).await.unwrap().unwrap();
    let decisions = fresh.ledger.decisions(&id).await.unwrap();
    let reject = decisions
        .iter()
        .find(|d| d.decision == Decision::Reject)
        .expect("the rejection is stored");
    assert_eq!(
        verify_decision(row.card_event_id.as_deref(), reject),
        Ok(rejection.id)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_relay_answering_means_no_consume_and_the_approval_waits() {
    if !in_process() {
        return;
    }
    let w = World::new(Setup {
        via_proxy: true,
        ..Setup::default()
    })
    .await;
    w.wait_live().await;
    let (id, card) = w.request("Glad it works again.").await;
    w.react(&w.approvers[0], card, "+").await;
    w.wait_status(&id, "approved").await;

    // Cut off: no relay connected.
    let proxy = w.proxy.clone().unwrap();
    proxy.cut();
    let refused = w.send("Glad it works again.", &id).await.unwrap_err();
    assert_eq!(refused, "UPSTREAM_UNAVAILABLE");
    assert!(w.sent().is_empty());
    assert_eq!(
        w.ledger_status(&id).await,
        ApprovalStatus::Approved,
        "nothing consumed"
    );

    // Back: the same approval goes out, once.
    proxy.restore().await;
    w.wait_live().await;
    let sent = w.send("Glad it works again.", &id).await.unwrap();
    assert_eq!(sent["approval"]["status"], "consumed", "{sent}");
    assert_eq!(w.sent().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_that_stops_answering_is_no_answer() {
    if !in_process() {
        return;
    }
    let w = World::new(Setup {
        via_proxy: true,
        ..Setup::default()
    })
    .await;
    w.wait_live().await;
    let (id, card) = w.request("We fixed the sync issue.").await;
    w.react(&w.approvers[0], card, "+").await;
    w.wait_status(&id, "approved").await;
    // Connected, but nothing comes back: no EOSE within the bound is not "no reactions".
    let proxy = w.proxy.clone().unwrap();
    proxy.stall();
    let refused = w.send("We fixed the sync issue.", &id).await.unwrap_err();
    assert_eq!(refused, "UPSTREAM_UNAVAILABLE");
    assert!(w.sent().is_empty());
    assert_eq!(w.ledger_status(&id).await, ApprovalStatus::Approved);
    proxy.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_made_while_the_server_was_cut_off_wins_once_it_is_back() {
    if !in_process() {
        return;
    }
    let w = World::new(Setup {
        via_proxy: true,
        options: no_look_back(),
        ..Setup::default()
    })
    .await;
    w.wait_live().await;
    let (id, card) = w.request("Thanks, we are on it.").await;
    w.react(&w.approvers[0], card, "+").await;
    w.wait_status(&id, "approved").await;
    let proxy = w.proxy.clone().unwrap();
    proxy.cut();
    w.react(&w.approvers[1], card, "-").await;
    proxy.restore().await;
    w.wait_live().await;
    let refused = w.send("Thanks, we are on it.", &id).await.unwrap_err();
    assert_eq!(refused, "APPROVAL_REJECTED");
    assert!(w.sent().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dry_run_reports_the_state_after_the_same_confirmation() {
    let first = World::new(Setup {
        write_enabled: false,
        ..Setup::default()
    })
    .await;
    first.wait_live().await;
    let (id, card) = first.request("Thanks!").await;
    first.react(&first.approvers[0], card, "+").await;
    first.wait_status(&id, "approved").await;
    first.channel.shutdown().await;
    first.react_ago(&first.approvers[1], card, "-", 3).await;
    let fresh = first.restarted(no_look_back()).await;
    fresh.wait_live().await;
    let dry = fresh.send("Thanks!", &id).await.unwrap();
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert_eq!(dry["approval"]["status"], "rejected", "{dry}");
    assert_eq!(dry["approval"]["confirmed_on_channel"], true, "{dry}");
    assert!(fresh.sent().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_with_different_policies_judge_a_card_alike() {
    // The requesting process: approvers A and B, both needed.
    let strict = World::new(Setup {
        approvers: 3,
        threshold: 1,
        ..Setup::default()
    })
    .await;
    let (a, b, c) = (
        strict.approvers[0].clone(),
        strict.approvers[1].clone(),
        strict.approvers[2].clone(),
    );
    let strict = strict.other_process(&[&a, &b], 2).await;
    strict.wait_live().await;
    // A process with a looser policy: only C, threshold 1.
    let loose = strict.other_process(&[&c], 1).await;
    loose.wait_live().await;

    let (id, card) = strict.request("We shipped the fix in 4.2.").await;
    let row = strict.ledger.approval(&id).await.unwrap().unwrap();
    let policy = row.policy.expect("the row carries its policy");
    assert_eq!(policy.threshold(), 2);
    assert_eq!(policy.approvers().len(), 2);

    // C is an approver only in the loose process's configuration: it never counts.
    strict.react(&c, card, "+").await;
    strict.settle_with(&[&a, &b]).await;
    loose.settle_with(&[&c]).await;
    assert_eq!(loose.status(&id).await, "pending");
    let refused = loose
        .send("We shipped the fix in 4.2.", &id)
        .await
        .unwrap_err();
    assert_eq!(refused, "APPROVAL_REQUIRED", "C's approval must not count");

    // One of the two needed approvals: still pending everywhere, threshold 2 from the row.
    strict.react(&a, card, "+").await;
    strict.wait_status(&id, "pending").await;
    let refused = loose
        .send("We shipped the fix in 4.2.", &id)
        .await
        .unwrap_err();
    assert_eq!(refused, "APPROVAL_REQUIRED", "one approval of two");

    // Both: the loose process, which follows neither A nor B, confirms and sends.
    strict.react(&b, card, "+").await;
    let sent = loose.send("We shipped the fix in 4.2.", &id).await.unwrap();
    assert_eq!(sent["approval"]["status"], "consumed", "{sent}");
    assert_eq!(loose.sent().len(), 1);
    assert!(strict.sent().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_process_clock_neither_expires_nor_extends_approvals() {
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    // Two hours fast: with the process clock deciding, this approval (60 minutes) would
    // read expired here and be stored expired for everyone.
    let fast = w
        .restarted_with(Setup {
            clock_skew: chrono::Duration::hours(2),
            ..Setup::default()
        })
        .await;
    fast.wait_live().await;
    let (id, card) = fast
        .request_with("Thanks!", json!({"ttl_minutes": 60}))
        .await;
    let row = fast.ledger.approval(&id).await.unwrap().unwrap();
    let lifetime = row.expires_at - row.created_at;
    assert_eq!(lifetime, chrono::Duration::minutes(60));
    assert!(
        (row.created_at - chrono::Utc::now()).num_minutes().abs() < 1,
        "dated by the ledger's clock, not the fast one"
    );
    fast.react(&fast.approvers[0], card, "+").await;
    fast.wait_status(&id, "approved").await;
    assert_eq!(w.status(&id).await, "approved");
    let sent = fast.send("Thanks!", &id).await.unwrap();
    assert_eq!(sent["approval"]["status"], "consumed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_process_clock_cannot_consume_an_expired_approval() {
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    let (id, card) = w.request("Thanks!").await;
    w.react(&w.approvers[0], card, "+").await;
    w.wait_status(&id, "approved").await;
    // Shorten the approval's life to what has already passed, by the ledger's clock.
    let row = w.ledger.approval(&id).await.unwrap().unwrap();
    common::expire_now(&w, &row.id).await;
    // Two hours slow: by this clock the approval has most of its life left.
    let slow = w
        .restarted_with(Setup {
            clock_skew: chrono::Duration::hours(-2),
            ..Setup::default()
        })
        .await;
    slow.wait_live().await;
    let refused = slow.send("Thanks!", &id).await.unwrap_err();
    assert_eq!(refused, "APPROVAL_EXPIRED");
    assert!(slow.sent().is_empty());
}

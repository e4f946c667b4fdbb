//! The approval flow over a real relay and real websockets: the card is on the relay, an
//! approver's reaction moves the row, the write goes out once; and every reaction that must not
//! count does not. Runs against `CARE_TEST_NOSTR_RELAY` when set (see docs/approvals-nostr.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use care_core::ledger::{ApprovalStatus, Decision};
use care_nostr::apply::{Applied, apply_reaction};
use care_nostr::card::{
    BLOCK_PREFIX, CARD_KIND, TAG_ACTION, TAG_APPROVAL, TAG_PAYLOAD_HASH, tag_value,
};
use care_nostr::evidence::verify_decision;
use chrono::Duration;
use common::{Setup, World, forged};
use nostr_relay_builder::prelude::{
    Event, EventBuilder, EventId, Keys, Kind, Tag, TagKind, Timestamp,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_by_reaction_the_write_goes_out_once() {
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    let body = "Thanks! Fixed in 2.1 \u{202e}.";
    let (id, card) = w.request(body).await;

    // The card is on the relay, signed by the server, saying what will happen.
    let event = w.card_on_relay(card).await.expect("card on the relay");
    assert!(event.verify().is_ok());
    assert_eq!(event.kind, CARD_KIND);
    assert_eq!(event.pubkey, w.server.public_key());
    assert_eq!(tag_value(&event, "h"), Some(w.group.as_str()));
    assert_eq!(tag_value(&event, TAG_APPROVAL), Some(id.as_str()));
    assert_eq!(tag_value(&event, TAG_ACTION), Some("asc_review_reply"));
    let row = w.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(
        tag_value(&event, TAG_PAYLOAD_HASH),
        Some(row.payload_hash.as_str())
    );
    assert_eq!(row.card_event_id.as_deref(), Some(card.to_hex().as_str()));
    // The card's labelled lines (issue 7 layout), the body as a prefixed block.
    assert!(
        event
            .content
            .contains("\nTarget: review rev-123 of Demo Care, in en-US\n"),
        "{}",
        event.content
    );
    assert!(event.content.contains(&format!(
        "\n{BLOCK_PREFIX}Thanks! Fixed in 2.1 \\u{{202e}}.\n"
    )));
    assert!(!event.content.contains('\u{202e}'));

    // Not yet approved: the write is refused and nothing is sent.
    assert_eq!(w.send(body, &id).await.unwrap_err(), "APPROVAL_REQUIRED");

    let reaction = w.react(&w.approvers[0], card, "👍").await;
    w.wait_status(&id, "approved").await;
    let data = w.send(body, &id).await.unwrap();
    assert_eq!(data["sent"]["response_id"], "resp-1", "{data}");
    assert_eq!(w.sent().len(), 1);
    assert_eq!(w.sent()[0].approval_id, id);
    assert_eq!(w.sent()[0].body, body);
    assert_eq!(w.status(&id).await, "consumed");
    assert_eq!(w.send(body, &id).await.unwrap_err(), "APPROVAL_CONSUMED");
    assert_eq!(w.sent().len(), 1);

    // The signed reaction is the evidence, and it verifies offline.
    let decisions = w.ledger.decisions(&id).await.unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].approver, w.approvers[0].public_key().to_hex());
    assert_eq!(
        verify_decision(row.card_event_id.as_deref(), &decisions[0]),
        Ok(reaction.id)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reaction_from_an_unlisted_key_does_not_count() {
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    let (id, card) = w.request("hello").await;
    let event = w.react(&w.stranger, card, "✅").await;
    w.settle().await;
    assert_eq!(w.status(&id).await, "pending");
    assert!(w.ledger.decisions(&id).await.unwrap().is_empty());
    // Refused before any ledger work: no approval of ours lists the key.
    assert!(matches!(
        apply_reaction(w.ledger.as_ref(), &w.judge(), &event)
            .await
            .unwrap(),
        Applied::Dropped { .. }
    ));
    assert_eq!(w.send("hello", &id).await.unwrap_err(), "APPROVAL_REQUIRED");
    assert!(w.sent().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_reaction_does_not_count_even_when_listed() {
    let w = World::new(Setup {
        server_listed: true,
        ..Setup::default()
    })
    .await;
    w.wait_live().await;
    let (id, card) = w.request("hello").await;
    w.react(&w.server, card, "+").await;
    w.settle().await;
    assert_eq!(w.status(&id).await, "pending");
    assert!(w.ledger.decisions(&id).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_reaction_planted_in_the_relay_does_not_count() {
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    let (id, card) = w.request("hello").await;
    // A genuine rejection by an approver, its content turned into an approval: same id and
    // signature, so the signature no longer matches. A well-behaved relay refuses it (the
    // in-process one does), so it is planted the way a relay that accepts anything would
    // serve it: stored, and pushed to live subscribers. Against an external relay it can only
    // be offered, and is fed straight to the handler below.
    let genuine = EventBuilder::new(Kind::Reaction, "-")
        .tags([
            Tag::event(card),
            Tag::custom(TagKind::h(), [w.group.as_str()]),
        ])
        .sign_with_keys(&w.approvers[0])
        .unwrap();
    let forgery = forged(&genuine, "+");
    match &w.relay {
        Some(relay) => relay.plant(&forgery).await,
        None => {
            let offered = care_nostr::publish::publish(
                std::slice::from_ref(&w.relay_url),
                &forgery,
                std::time::Duration::from_secs(5),
            )
            .await;
            assert!(
                offered.is_err(),
                "the external relay accepted a forged event"
            );
        }
    }
    w.settle().await;
    assert_eq!(w.status(&id).await, "pending");
    // The handler itself refuses it, whatever the relay or the client library checked.
    assert_eq!(
        apply_reaction(w.ledger.as_ref(), &w.judge(), &forgery)
            .await
            .unwrap(),
        Applied::Dropped {
            reason: "the event id or signature does not verify".into()
        }
    );
    // A fetch-on-read (a fresh process that must catch up) refuses it too.
    let restarted = w.restarted(common::fast_options()).await;
    restarted.wait_live().await;
    assert_eq!(restarted.status(&id).await, "pending");
    assert!(w.ledger.decisions(&id).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reaction_to_another_event_does_not_count() {
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    let (id, card) = w.request("hello").await;
    let (other_id, other_card) = w.request("another reply").await;

    // Another message in the same group, with the server named: not a card of this approval.
    let chat = EventBuilder::new(Kind::Custom(9), "lunch?")
        .tag(Tag::custom(TagKind::h(), [w.group.as_str()]))
        .sign_with_keys(&w.stranger)
        .unwrap();
    w.publish(&chat).await;
    w.react(&w.approvers[0], chat.id, "+").await;
    // This card first, another one last: NIP-25 says the last `e` tag is the target.
    let aimed_elsewhere = EventBuilder::new(Kind::Reaction, "+")
        .tags([
            Tag::event(card),
            Tag::event(other_card),
            Tag::custom(TagKind::h(), [w.group.as_str()]),
        ])
        .sign_with_keys(&w.approvers[1])
        .unwrap();
    w.publish(&aimed_elsewhere).await;

    w.wait_status(&other_id, "approved").await;
    w.settle().await;
    assert_eq!(w.status(&id).await, "pending");
    assert!(w.ledger.decisions(&id).await.unwrap().is_empty());
    assert_eq!(w.send("hello", &id).await.unwrap_err(), "APPROVAL_REQUIRED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reaction_dated_after_the_expiry_does_not_count() {
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    let (id, card) = w
        .request_with("hello", serde_json::json!({"ttl_minutes": 1}))
        .await;
    let row = w.ledger.approval(&id).await.unwrap().unwrap();
    let late = EventBuilder::new(Kind::Reaction, "+")
        .tags([
            Tag::event(card),
            Tag::custom(TagKind::h(), [w.group.as_str()]),
        ])
        .custom_created_at(Timestamp::from_secs(
            (row.expires_at + Duration::seconds(30)).timestamp() as u64,
        ))
        .sign_with_keys(&w.approvers[0])
        .unwrap();
    w.publish(&late).await;
    w.settle().await;
    assert_eq!(w.status(&id).await, "pending");
    assert_eq!(
        apply_reaction(w.ledger.as_ref(), &w.judge(), &late)
            .await
            .unwrap(),
        Applied::Refused {
            approval_id: id.clone(),
            reason: "dated after the approval expired".into()
        }
    );
    // Once the approval has expired by the ledger's clock, even a fresh reaction is refused.
    common::expire_now(&w, &id).await;
    let in_time = bare_reaction(&w.approvers[1], card, "+");
    assert!(matches!(
        apply_reaction(w.ledger.as_ref(), &w.judge(), &in_time)
            .await
            .unwrap(),
        Applied::Refused { .. }
    ));
    assert_eq!(
        w.ledger.approval(&id).await.unwrap().unwrap().status,
        ApprovalStatus::Expired
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threshold_two_needs_two_distinct_approvers() {
    let w = World::new(Setup {
        approvers: 2,
        threshold: 2,
        ..Setup::default()
    })
    .await;
    w.wait_live().await;
    let (id, card) = w.request("hello").await;
    w.react(&w.approvers[0], card, "✅").await;
    // The same approver twice is still one approver.
    w.decide_like_the_cli(&w.approvers[0], card, Decision::Approve)
        .await;
    let sentinel_approver = &w.approvers[0];
    let (sentinel, sentinel_card) = w.request("sentinel").await;
    w.react(sentinel_approver, sentinel_card, "+").await;
    w.react(&w.approvers[1], sentinel_card, "+").await;
    w.wait_status(&sentinel, "approved").await;
    assert_eq!(w.status(&id).await, "pending");
    assert_eq!(w.send("hello", &id).await.unwrap_err(), "APPROVAL_REQUIRED");
    assert!(w.sent().is_empty());

    w.react(&w.approvers[1], card, "👍").await;
    w.wait_status(&id, "approved").await;
    assert!(w.send("hello", &id).await.is_ok());
    assert_eq!(w.sent().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_after_an_approval_wins_before_consumption() {
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    let (id, card) = w.request("hello").await;
    w.react(&w.approvers[0], card, "+").await;
    w.wait_status(&id, "approved").await;
    w.decide_like_the_cli(&w.approvers[1], card, Decision::Reject)
        .await;
    w.wait_status(&id, "rejected").await;
    assert_eq!(w.send("hello", &id).await.unwrap_err(), "APPROVAL_REJECTED");
    assert!(w.sent().is_empty());
    // An approval arriving after the rejection does not revive it.
    w.react(&w.approvers[0], card, "✅").await;
    w.settle().await;
    assert_eq!(w.status(&id).await, "rejected");
    let decisions = w.ledger.decisions(&id).await.unwrap();
    let row = w.ledger.approval(&id).await.unwrap().unwrap();
    for d in &decisions {
        assert!(
            verify_decision(row.card_event_id.as_deref(), d).is_ok(),
            "{d:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_reactions_are_ignored() {
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    let (id, card) = w.request("hello").await;
    for content in ["❤️", "🤙", "", "+1", "approve"] {
        w.react(&w.approvers[0], card, content).await;
    }
    w.settle().await;
    assert_eq!(w.status(&id).await, "pending");
    assert!(w.ledger.decisions(&id).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reaction_with_only_its_e_tag_counts() {
    // NIP-25 asks a reaction for `e` and says it SHOULD carry `p`: a client that writes only
    // the `e` tag (no `p`, no group) still reacts to the card, and its approver's decision
    // must reach the status an agent polls, not only the confirm before a write.
    let w = World::new(Setup::default()).await;
    w.wait_live().await;
    let (id, card) = w.request("hello").await;
    w.publish(&bare_reaction(&w.approvers[0], card, "+")).await;
    w.wait_status(&id, "approved").await;
    let data = w.send("hello", &id).await.unwrap();
    assert_eq!(data["sent"]["response_id"], "resp-1", "{data}");
    assert_eq!(w.sent().len(), 1);

    // A bare rejection after an approval shows too, and wins before the approval is used.
    let (other, other_card) = w.request("another reply").await;
    w.react(&w.approvers[0], other_card, "+").await;
    w.wait_status(&other, "approved").await;
    w.publish(&bare_reaction(&w.approvers[1], other_card, "-"))
        .await;
    w.wait_status(&other, "rejected").await;
    assert_eq!(
        w.send("another reply", &other).await.unwrap_err(),
        "APPROVAL_REJECTED"
    );
    assert_eq!(w.sent().len(), 1);
}

/// A reaction with nothing but the card's `e` tag.
fn bare_reaction(keys: &Keys, card: EventId, content: &str) -> Event {
    EventBuilder::new(Kind::Reaction, content)
        .tag(Tag::event(card))
        .sign_with_keys(keys)
        .unwrap()
}

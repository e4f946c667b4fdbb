//! Reactions (NIP-25, kind 7): which contents decide what, the pure evaluator that says whether
//! one reaction counts for one card, and building the reaction an approver signs.
//!
//! The evaluator trusts nothing from the relay: it re-verifies id and signature, takes the
//! target from the LAST `e` tag (as NIP-25 says), and checks the time window and the author.

use care_core::approvals::{ApproverKey, RowPolicy};
use care_core::ledger::Decision;
use chrono::{DateTime, Utc};
use nostr_sdk::{Event, EventBuilder, EventId, Keys, Kind, PublicKey, Tag, TagKind};

use crate::card::CARD_KIND;
use crate::error::NostrError;

/// Contents that approve, in the order the card lists them.
pub const APPROVE_CONTENTS: [&str; 3] = ["✅", "👍", "+"];
/// Contents that reject, in the order the card lists them.
pub const REJECT_CONTENTS: [&str; 3] = ["❌", "👎", "-"];

/// How far a reaction may be dated before its card: approvers' clocks drift, and a reaction
/// cannot really precede the card anyway (it names the card's id, known only once signed).
pub const CLOCK_SKEW_SECS: i64 = 60;

/// The decision a reaction's content stands for; anything else is not a decision.
/// Emoji variation selectors and skin-tone modifiers (👍🏽) do not change the meaning.
pub fn decision_of(content: &str) -> Option<Decision> {
    let bare: String = content
        .trim()
        .chars()
        .filter(|c| !matches!(c, '\u{fe0f}' | '\u{fe0e}' | '\u{1f3fb}'..='\u{1f3ff}'))
        .collect();
    if APPROVE_CONTENTS.contains(&bare.as_str()) {
        Some(Decision::Approve)
    } else if REJECT_CONTENTS.contains(&bare.as_str()) {
        Some(Decision::Reject)
    } else {
        None
    }
}

/// The card a reaction is checked against, as the ledger row knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CardWindow {
    pub event_id: EventId,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// Why a reaction does not count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the event id or signature does not verify")]
    BadSignature,
    #[error("not a kind-7 reaction")]
    NotAReaction,
    #[error("no e tag, or its last e tag is not an event id")]
    NoTarget,
    #[error("the reaction targets another event")]
    OtherEvent,
    #[error("the content is neither an approval nor a rejection")]
    NotADecision,
    #[error("dated before the card")]
    BeforeCard,
    #[error("dated after the approval expired")]
    AfterExpiry,
    #[error("signed by the server's own key")]
    ServerKey,
    #[error("signed by a key that is not an approver of this approval")]
    NotAnApprover,
}

/// The event a reaction targets: its last `e` tag (NIP-25). A malformed last `e` tag is no
/// target at all, never a fall-back to an earlier one.
pub fn target(event: &Event) -> Result<EventId, Refusal> {
    let last = event
        .tags
        .iter()
        .filter(|t| t.kind() == TagKind::e())
        .last()
        .ok_or(Refusal::NoTarget)?;
    last.content()
        .and_then(|id| EventId::from_hex(id).ok())
        .ok_or(Refusal::NoTarget)
}

/// The checks that need nothing but the event itself (no ledger, no row): id and signature,
/// kind, and the card it targets. A flood of forged events stops here.
pub fn verify_shape(event: &Event) -> Result<EventId, Refusal> {
    event.verify().map_err(|_| Refusal::BadSignature)?;
    if event.kind != Kind::Reaction {
        return Err(Refusal::NotAReaction);
    }
    target(event)
}

/// Whether `event` is a counted decision on `card` by one of the row's `approvers` (never the
/// server's own key), and whose.
pub fn evaluate(
    event: &Event,
    card: &CardWindow,
    approvers: &RowPolicy,
    server_key: Option<&ApproverKey>,
) -> Result<(ApproverKey, Decision), Refusal> {
    if verify_shape(event)? != card.event_id {
        return Err(Refusal::OtherEvent);
    }
    let decision = decision_of(&event.content).ok_or(Refusal::NotADecision)?;
    let at = i64::try_from(event.created_at.as_secs()).unwrap_or(i64::MAX);
    if at < card.created_at.timestamp() - CLOCK_SKEW_SECS {
        return Err(Refusal::BeforeCard);
    }
    if at > card.expires_at.timestamp() {
        return Err(Refusal::AfterExpiry);
    }
    let key = ApproverKey::from_hex(&event.pubkey.to_hex()).ok_or(Refusal::NotAnApprover)?;
    if server_key == Some(&key) {
        return Err(Refusal::ServerKey);
    }
    if !approvers.lists(&key) {
        return Err(Refusal::NotAnApprover);
    }
    Ok((key, decision))
}

/// The reaction an approver signs: `+` or `-` with `e` = card, `p` = the server (the card's
/// author), `h` = the group, `k` = 9 (the card's kind), as NIP-25 and NIP-29 clients write it.
pub fn build_reaction(
    keys: &Keys,
    card: EventId,
    server: Option<PublicKey>,
    group: Option<&str>,
    decision: Decision,
) -> Result<Event, NostrError> {
    let content = match decision {
        Decision::Approve => "+",
        Decision::Reject => "-",
    };
    let mut tags = vec![Tag::event(card)];
    if let Some(server) = server {
        tags.push(Tag::public_key(server));
    }
    if let Some(group) = group {
        tags.push(Tag::custom(TagKind::h(), [group]));
    }
    tags.push(Tag::custom(TagKind::k(), [CARD_KIND.as_u16().to_string()]));
    EventBuilder::new(Kind::Reaction, content)
        .tags(tags)
        .sign_with_keys(keys)
        .map_err(|e| NostrError::Client(e.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use chrono::Duration;
    use nostr_sdk::{JsonUtil, Timestamp};

    struct World {
        server: Keys,
        approver: Keys,
        stranger: Keys,
        policy: RowPolicy,
        server_key: ApproverKey,
        card: CardWindow,
    }

    fn key(k: &Keys) -> ApproverKey {
        ApproverKey::from_hex(&k.public_key().to_hex()).unwrap()
    }

    fn world() -> World {
        let server = Keys::generate();
        let approver = Keys::generate();
        let stranger = Keys::generate();
        // Even a row that lists the server's key does not let it approve.
        let policy = RowPolicy::new(vec![key(&approver), key(&server)], 1);
        let created_at = Utc::now() - Duration::minutes(5);
        let card = CardWindow {
            event_id: EventId::all_zeros(),
            created_at,
            expires_at: created_at + Duration::minutes(60),
        };
        World {
            server_key: key(&server),
            server,
            approver,
            stranger,
            policy,
            card,
        }
    }

    fn react(w: &World, keys: &Keys, content: &str) -> Event {
        EventBuilder::new(Kind::Reaction, content)
            .tag(Tag::event(w.card.event_id))
            .sign_with_keys(keys)
            .unwrap()
    }

    #[test]
    fn contents_map_to_decisions() {
        for c in ["+", "👍", "✅", "👍🏽", "✅\u{fe0f}", " + "] {
            assert_eq!(decision_of(c), Some(Decision::Approve), "{c}");
        }
        for c in ["-", "👎", "❌", "👎🏿"] {
            assert_eq!(decision_of(c), Some(Decision::Reject), "{c}");
        }
        for c in ["", "❤️", "🤙", "++", "yes", "+1", "ok", ":+1:"] {
            assert_eq!(decision_of(c), None, "{c}");
        }
    }

    #[test]
    fn an_approvers_reaction_counts() {
        let w = world();
        let (who, decision) = evaluate(
            &react(&w, &w.approver, "✅"),
            &w.card,
            &w.policy,
            Some(&w.server_key),
        )
        .unwrap();
        assert_eq!(who, key(&w.approver));
        assert_eq!(decision, Decision::Approve);
        let (_, decision) = evaluate(
            &react(&w, &w.approver, "👎"),
            &w.card,
            &w.policy,
            Some(&w.server_key),
        )
        .unwrap();
        assert_eq!(decision, Decision::Reject);
    }

    #[test]
    fn other_keys_do_not_count() {
        let w = world();
        assert_eq!(
            evaluate(
                &react(&w, &w.stranger, "+"),
                &w.card,
                &w.policy,
                Some(&w.server_key)
            ),
            Err(Refusal::NotAnApprover)
        );
        assert_eq!(
            evaluate(
                &react(&w, &w.server, "+"),
                &w.card,
                &w.policy,
                Some(&w.server_key)
            ),
            Err(Refusal::ServerKey)
        );
    }

    #[test]
    fn a_forged_reaction_is_refused() {
        let w = world();
        let valid = react(&w, &w.approver, "-");
        // Same id and signature, content changed to approve.
        let json = valid
            .as_json()
            .replace("\"content\":\"-\"", "\"content\":\"+\"");
        let forged = Event::from_json(&json).unwrap();
        assert_eq!(forged.content, "+");
        assert_eq!(
            evaluate(&forged, &w.card, &w.policy, Some(&w.server_key)),
            Err(Refusal::BadSignature)
        );
        // A flipped signature byte.
        let mut value: serde_json::Value = serde_json::from_str(&valid.as_json()).unwrap();
        let sig = value["sig"].as_str().unwrap().to_owned();
        let flipped = if sig.starts_with('0') { "1" } else { "0" };
        value["sig"] = format!("{flipped}{}", &sig[1..]).into();
        let forged = Event::from_json(value.to_string()).unwrap();
        assert_eq!(
            evaluate(&forged, &w.card, &w.policy, Some(&w.server_key)),
            Err(Refusal::BadSignature)
        );
    }

    #[test]
    fn the_last_e_tag_is_the_target() {
        let w = world();
        let other = EventId::from_hex(&"11".repeat(32)).unwrap();
        let to_other = EventBuilder::new(Kind::Reaction, "+")
            .tags([Tag::event(w.card.event_id), Tag::event(other)])
            .sign_with_keys(&w.approver)
            .unwrap();
        assert_eq!(
            evaluate(&to_other, &w.card, &w.policy, Some(&w.server_key)),
            Err(Refusal::OtherEvent)
        );
        let malformed_last = EventBuilder::new(Kind::Reaction, "+")
            .tags([
                Tag::event(w.card.event_id),
                Tag::custom(TagKind::e(), ["not-an-id"]),
            ])
            .sign_with_keys(&w.approver)
            .unwrap();
        assert_eq!(
            evaluate(&malformed_last, &w.card, &w.policy, Some(&w.server_key)),
            Err(Refusal::NoTarget)
        );
        let untargeted = EventBuilder::new(Kind::Reaction, "+")
            .sign_with_keys(&w.approver)
            .unwrap();
        assert_eq!(
            evaluate(&untargeted, &w.card, &w.policy, Some(&w.server_key)),
            Err(Refusal::NoTarget)
        );
    }

    #[test]
    fn only_reactions_with_decisions_count() {
        let w = world();
        let note = EventBuilder::new(Kind::TextNote, "+")
            .tag(Tag::event(w.card.event_id))
            .sign_with_keys(&w.approver)
            .unwrap();
        assert_eq!(
            evaluate(&note, &w.card, &w.policy, Some(&w.server_key)),
            Err(Refusal::NotAReaction)
        );
        assert_eq!(
            evaluate(
                &react(&w, &w.approver, "❤️"),
                &w.card,
                &w.policy,
                Some(&w.server_key)
            ),
            Err(Refusal::NotADecision)
        );
    }

    #[test]
    fn the_time_window_is_the_cards() {
        let w = world();
        let at = |t: DateTime<Utc>| {
            EventBuilder::new(Kind::Reaction, "+")
                .tag(Tag::event(w.card.event_id))
                .custom_created_at(Timestamp::from_secs(t.timestamp() as u64))
                .sign_with_keys(&w.approver)
                .unwrap()
        };
        assert!(
            evaluate(
                &at(w.card.expires_at),
                &w.card,
                &w.policy,
                Some(&w.server_key)
            )
            .is_ok()
        );
        assert_eq!(
            evaluate(
                &at(w.card.expires_at + Duration::seconds(1)),
                &w.card,
                &w.policy,
                Some(&w.server_key)
            ),
            Err(Refusal::AfterExpiry)
        );
        assert!(
            evaluate(
                &at(w.card.created_at - Duration::seconds(30)),
                &w.card,
                &w.policy,
                Some(&w.server_key)
            )
            .is_ok()
        );
        assert_eq!(
            evaluate(
                &at(w.card.created_at - Duration::minutes(5)),
                &w.card,
                &w.policy,
                Some(&w.server_key)
            ),
            Err(Refusal::BeforeCard)
        );
    }

    #[test]
    fn built_reactions_evaluate_as_their_decision() {
        let w = world();
        for decision in [Decision::Approve, Decision::Reject] {
            let event = build_reaction(
                &w.approver,
                w.card.event_id,
                Some(w.server.public_key()),
                Some("care"),
                decision,
            )
            .unwrap();
            assert_eq!(
                evaluate(&event, &w.card, &w.policy, Some(&w.server_key))
                    .unwrap()
                    .1,
                decision
            );
            assert_eq!(crate::card::tag_value(&event, "h"), Some("care"));
            assert_eq!(crate::card::tag_value(&event, "k"), Some("9"));
            assert_eq!(
                event.tags.public_keys().next(),
                Some(&w.server.public_key())
            );
        }
    }
}

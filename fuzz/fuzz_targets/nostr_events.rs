//! Nostr events from the relay (anyone can publish): arbitrary JSON never panics the parser or
//! the evaluator; a signed reaction counts exactly when the rules say so (kind 7, last `e` tag
//! is the card, an approving or rejecting content, inside the card's window, by a listed
//! approver, never the server); and any change to a signed event's bytes that changes what it
//! says makes it count for nothing. Card tags are read back only as their exact values.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use care_core::approvals::{ApproverKey, RowPolicy};
use care_core::ledger::{Decision, DecisionRow};
use care_nostr::card::tag_value;
use care_nostr::evidence::verify_decision;
use care_nostr::reaction::{CLOCK_SKEW_SECS, CardWindow, decision_of, evaluate};
use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use nostr_sdk::{Event, EventBuilder, EventId, JsonUtil, Keys, Kind, Tag, Timestamp};

const CARD_CREATED: i64 = 1_900_000_000;
const CARD_EXPIRES: i64 = CARD_CREATED + 3_600;

struct World {
    approver: Keys,
    server: Keys,
    stranger: Keys,
    card: CardWindow,
    policy: RowPolicy,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let key = |hex: &str| Keys::parse(hex).expect("a fixed test key");
        let approver = key("0000000000000000000000000000000000000000000000000000000000000001");
        let server = key("0000000000000000000000000000000000000000000000000000000000000002");
        let stranger = key("0000000000000000000000000000000000000000000000000000000000000003");
        let listed = ApproverKey::from_hex(&approver.public_key().to_hex()).expect("hex key");
        World {
            card: CardWindow {
                event_id: EventId::from_hex(&"ab".repeat(32)).expect("hex id"),
                created_at: Utc.timestamp_opt(CARD_CREATED, 0).unwrap(),
                expires_at: Utc.timestamp_opt(CARD_EXPIRES, 0).unwrap(),
            },
            policy: RowPolicy::new(vec![listed], 1),
            approver,
            server,
            stranger,
        }
    })
}

#[derive(Debug, Arbitrary)]
enum Input {
    /// Whatever a relay could send.
    Raw(Vec<u8>),
    /// A signed event of the fuzzer's making, then maybe one byte of its JSON changed.
    Signed {
        signer: u8,
        kind: u16,
        content: String,
        /// `true`: the card's id as the tag value.
        tags: Vec<(String, bool, String)>,
        offset: i32,
        flip: Option<(u16, u8)>,
    },
}

fn server_key() -> ApproverKey {
    ApproverKey::from_hex(&world().server.public_key().to_hex()).expect("hex key")
}

/// What the rules say of `event`, written independently of the evaluator.
fn oracle(event: &Event) -> Option<Decision> {
    let w = world();
    if event.kind != Kind::Reaction {
        return None;
    }
    let last_e = event
        .tags
        .iter()
        .filter(|t| t.as_slice().first().map(String::as_str) == Some("e"))
        .last()?;
    if last_e.as_slice().get(1)? != &w.card.event_id.to_hex() {
        return None;
    }
    let decision = decision_of(&event.content)?;
    let at = i64::try_from(event.created_at.as_secs()).ok()?;
    if at < CARD_CREATED - CLOCK_SKEW_SECS || at > CARD_EXPIRES {
        return None;
    }
    (event.pubkey == w.approver.public_key()).then_some(decision)
}

fn check_parsed(event: &Event) {
    let w = world();
    let server = server_key();
    let counted = evaluate(event, &w.card, &w.policy, Some(&server));
    if let Ok((key, _)) = &counted {
        assert!(event.verify().is_ok(), "an unverified event counted");
        assert_eq!(key.to_string(), w.approver.public_key().to_hex());
    }
    let row = DecisionRow {
        approval_id: "apr_fuzz".into(),
        approver: event.pubkey.to_hex(),
        decision: Decision::Approve,
        evidence: event.as_json(),
        decided_at: Utc::now(),
    };
    let _ = verify_decision(Some(&w.card.event_id.to_hex()), &row);
    for name in ["approval", "payload_hash", "action", "h"] {
        if let Some(value) = tag_value(event, name) {
            assert!(
                event
                    .tags
                    .iter()
                    .any(|t| t.as_slice().get(1).map(String::as_str) == Some(value))
            );
        }
    }
}

fuzz_target!(|input: Input| {
    let w = world();
    match input {
        Input::Raw(bytes) => {
            if let Ok(event) = Event::from_json(&bytes) {
                check_parsed(&event);
            }
        }
        Input::Signed {
            signer,
            kind,
            content,
            tags,
            offset,
            flip,
        } => {
            let keys = match signer % 3 {
                0 => &w.approver,
                1 => &w.server,
                _ => &w.stranger,
            };
            let tags: Vec<Tag> = tags
                .into_iter()
                .take(6)
                .filter_map(|(name, card, value)| {
                    let value = if card {
                        w.card.event_id.to_hex()
                    } else {
                        value
                    };
                    Tag::parse([name, value]).ok()
                })
                .collect();
            let at = u64::try_from(CARD_CREATED + i64::from(offset)).unwrap_or(0);
            let Ok(event) = EventBuilder::new(Kind::from(kind), content)
                .tags(tags)
                .custom_created_at(Timestamp::from(at))
                .sign_with_keys(keys)
            else {
                return;
            };
            let expected = oracle(&event);
            let got = evaluate(&event, &w.card, &w.policy, Some(&server_key()))
                .ok()
                .map(|(_, d)| d);
            assert_eq!(
                got,
                expected,
                "the evaluator and the rules disagree on {}",
                event.as_json()
            );
            check_parsed(&event);
            if let Some((at, byte)) = flip {
                let mut json = event.as_json().into_bytes();
                let i = usize::from(at) % json.len();
                json[i] = byte;
                if let Ok(changed) = Event::from_json(&json) {
                    let same = changed.id == event.id
                        && changed.pubkey == event.pubkey
                        && changed.kind == event.kind
                        && changed.created_at == event.created_at
                        && changed.content == event.content
                        && changed.tags == event.tags
                        && changed.sig == event.sig;
                    if !same {
                        assert!(
                            evaluate(&changed, &w.card, &w.policy, Some(&server_key())).is_err(),
                            "a changed event still counted"
                        );
                    }
                    check_parsed(&changed);
                }
            }
        }
    }
});

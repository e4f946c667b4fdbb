//! The approval card: a NIP-29 group chat message (kind 9) whose text says in plain words what
//! will happen, with machine tags that bind it to one approval and one payload.
//!
//! # Layout
//!
//! The layout is the server's; the agent and the domain fill values and blocks, never lines.
//!
//! 1. Facts, each on its own line after a server label, values escaped as single lines by
//!    [`care_core::display::escape_line`] (a `\n` in a value shows as `\u{a}` and cannot start a
//!    line): `Approval needed: <title>`, `Action: <tool>`, `Target: <target>`, each
//!    [`CardFact`](care_core::approval_channel::CardFact) as `<label>: <value>`, `Requested by: the <role>
//!    agent`, `Expires: <UTC time>`, `Approval id: <id>`, `Payload hash: <64 hex>` (in full, so
//!    an approver can compare it with a hash they recompute).
//! 2. The text to send, if the write sends one: a header line of the server's with the size of
//!    the original text (`Text to send (3 lines, 120 characters):`, characters being Unicode
//!    scalar values), then every line of the text, an empty one too, after [`BLOCK_PREFIX`],
//!    escaped by [`care_core::display::escape_block`]. When any code point had to be escaped, a
//!    warning line before the header says how many; another counts the Nostr references
//!    (`nostr:npub1…`, `nostr:nevent1…`), whose colon is escaped so that a chat client cannot
//!    show a profile's name or a quoted note (another card) in their place.
//! 3. The agent's reason, if it gave one, the same way (`Reason given by the agent (…):`).
//! 4. The footer: which reactions approve, which reject.
//!
//! Sections are separated by one empty line. So every line that does not start with
//! [`BLOCK_PREFIX`] is the server's whatever the agent wrote (a body imitating the card's lines
//! shows them prefixed), and no invisible or formatting code point reaches the card except as a
//! visible `\u{..}` escape (the set and its exceptions: [`care_core::display`]). For example:
//!
//! ```text
//! Approval needed: reply to an App Store review
//! Action: asc_review_reply
//! Target: review rev-1 of Demo Care (KOR), reply in ko
//! Replaces an existing response: no
//! Requested by: the reviews agent
//! Expires: 2030-01-02 03:04:05 UTC
//! Approval id: apr_0123
//! Payload hash: abababababababababababababababababababababababababababababababab
//!
//! ⚠ The text contains 1 invisible or formatting character, shown below as \u{…}.
//! Text to send (2 lines, 31 characters):
//! │ Thank you\u{200b} for the review!
//! │ 고마워요
//!
//! Reason given by the agent (1 line, 14 characters):
//! │ angry customer
//!
//! React ✅ 👍 + to approve, ❌ 👎 - to reject. Other reactions are ignored.
//! ```

use care_core::approval_channel::ApprovalCard;
use care_core::display::{block, counted, escape_line};
use chrono::{DateTime, Utc};
use nostr_sdk::{Event, EventBuilder, Keys, Kind, Tag, TagKind, Timestamp};

use crate::error::NostrError;
use crate::reaction::{APPROVE_CONTENTS, REJECT_CONTENTS};

/// NIP-29 group chat message: what group chat clients display.
pub const CARD_KIND: Kind = Kind::Custom(9);
/// Tag carrying the approval id.
pub const TAG_APPROVAL: &str = "approval";
/// Tag carrying the full hex payload hash.
pub const TAG_PAYLOAD_HASH: &str = "payload_hash";
/// Tag carrying the external-write tool name.
pub const TAG_ACTION: &str = "action";
/// Starts every line of agent-written text on the card (U+2502 and a space); no line of the
/// server's starts with it.
pub const BLOCK_PREFIX: &str = "│ ";

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A value escaped for its one line.
fn line(value: &str) -> String {
    escape_line(value).text
}

/// Appends `label: value` as one line.
fn push_fact(out: &mut String, label: &str, value: &str) {
    out.push_str(label);
    out.push_str(": ");
    out.push_str(&line(value));
    out.push('\n');
}

/// Appends agent-written `text` as a block: the warning if anything was escaped, the header
/// with the size of the text, then its prefixed lines.
fn push_block(out: &mut String, what: &str, header: &str, text: &str) {
    let block = block(text, BLOCK_PREFIX);
    if block.invisible() > 0 {
        out.push_str(&format!(
            "⚠ The {what} contains {}, shown below as \\u{{…}}.\n",
            counted(block.invisible(), "invisible or formatting character")
        ));
    }
    if block.references > 0 {
        let colon = if block.references == 1 {
            "its colon"
        } else {
            "their colons"
        };
        out.push_str(&format!(
            "⚠ The {what} contains {}, {colon} shown below as \\u{{3a}} so that no app shows \
             a mention or another note in their place.\n",
            counted(block.references, "Nostr reference")
        ));
    }
    out.push_str(&format!("{header} ({}):\n", block.size()));
    out.push_str(&block.lines);
    out.push('\n');
}

/// The card's text, shown by any group chat client (layout: the module doc).
pub fn card_text(card: &ApprovalCard) -> String {
    let content = &card.content;
    let mut text = String::new();
    push_fact(&mut text, "Approval needed", &content.title);
    push_fact(&mut text, "Action", &card.action);
    push_fact(&mut text, "Target", &content.target);
    for fact in &content.facts {
        push_fact(&mut text, &line(&fact.label), &fact.value);
    }
    text.push_str(&format!(
        "Requested by: the {} agent\n",
        line(&card.requested_by_role)
    ));
    push_fact(&mut text, "Expires", &when(card.expires_at));
    push_fact(&mut text, "Approval id", &card.approval_id);
    push_fact(&mut text, "Payload hash", &card.payload_hash);
    if let Some(body) = &content.text {
        text.push('\n');
        push_block(&mut text, "text", "Text to send", body);
    }
    if let Some(reason) = &card.reason {
        text.push('\n');
        push_block(&mut text, "reason", "Reason given by the agent", reason);
    }
    text.push('\n');
    text.push_str(&format!(
        "React {} to approve, {} to reject. Other reactions are ignored.",
        APPROVE_CONTENTS.join(" "),
        REJECT_CONTENTS.join(" ")
    ));
    text
}

/// The one-line NIP-31 `alt` summary: the approval id and the title, no agent-written text.
pub fn alt_text(card: &ApprovalCard) -> String {
    format!(
        "Approval request {}: {}",
        line(&card.approval_id),
        line(&card.content.title)
    )
}

fn seconds(t: DateTime<Utc>) -> Timestamp {
    Timestamp::from_secs(u64::try_from(t.timestamp()).unwrap_or(0))
}

/// Signs the card as `keys` for `group`, dated at the card's creation.
pub fn sign_card_event(card: &ApprovalCard, keys: &Keys, group: &str) -> Result<Event, NostrError> {
    EventBuilder::new(CARD_KIND, card_text(card))
        .tags([
            Tag::custom(TagKind::h(), [group]),
            Tag::custom(TagKind::custom(TAG_APPROVAL), [card.approval_id.as_str()]),
            Tag::custom(
                TagKind::custom(TAG_PAYLOAD_HASH),
                [card.payload_hash.as_str()],
            ),
            Tag::custom(TagKind::custom(TAG_ACTION), [card.action.as_str()]),
            Tag::expiration(seconds(card.expires_at)),
            Tag::alt(alt_text(card)),
        ])
        .custom_created_at(seconds(card.created_at))
        .sign_with_keys(keys)
        .map_err(|e| NostrError::Client(e.to_string()))
}

/// The value of the first tag named `name`, if any.
pub fn tag_value<'a>(event: &'a Event, name: &str) -> Option<&'a str> {
    event
        .tags
        .iter()
        .find(|t| t.kind().as_str() == name)
        .and_then(|t| t.content())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn card(summary: &str, reason: Option<&str>) -> ApprovalCard {
        let created_at = Utc::now();
        ApprovalCard {
            approval_id: "apr_0123".into(),
            action: "asc_review_reply".into(),
            content: care_core::approval_channel::CardContent {
                title: "reply to an App Store review".into(),
                target: "review rev-1 of Demo Care (KOR), reply in ko".into(),
                facts: vec![care_core::approval_channel::CardFact::new(
                    "Replaces an existing response",
                    "no",
                )],
                text: Some(summary.into()),
            },
            reason: reason.map(str::to_owned),
            payload_hash: "ab".repeat(32),
            requested_by_role: "reviews".into(),
            created_at,
            expires_at: created_at + Duration::minutes(60),
        }
    }

    // Rewritten with the server-owned layout (issue 7): facts on labelled lines, the full
    // payload hash, agent text as prefixed blocks with their size.
    #[test]
    fn text_says_what_when_and_how() {
        let mut c = card(
            "Thank you\u{200b} for the review!\n고마워요",
            Some("angry customer"),
        );
        c.expires_at = DateTime::parse_from_rfc3339("2030-01-02T03:04:05Z")
            .unwrap()
            .with_timezone(&Utc);
        let expected = "\
Approval needed: reply to an App Store review
Action: asc_review_reply
Target: review rev-1 of Demo Care (KOR), reply in ko
Replaces an existing response: no
Requested by: the reviews agent
Expires: 2030-01-02 03:04:05 UTC
Approval id: apr_0123
Payload hash: abababababababababababababababababababababababababababababababab

⚠ The text contains 1 invisible or formatting character, shown below as \\u{…}.
Text to send (2 lines, 31 characters):
│ Thank you\\u{200b} for the review!
│ 고마워요

Reason given by the agent (1 line, 14 characters):
│ angry customer

React ✅ 👍 + to approve, ❌ 👎 - to reject. Other reactions are ignored.";
        assert_eq!(card_text(&c), expected);
    }

    #[test]
    fn without_text_or_reason_there_is_no_block() {
        let mut c = card("", None);
        c.content.text = None;
        let text = card_text(&c);
        assert!(!text.contains(BLOCK_PREFIX), "{text}");
        assert!(!text.contains("Text to send") && !text.contains("Reason given"));
        // An empty text is still shown, as one empty prefixed line.
        let empty = card_text(&card("", None));
        assert!(empty.contains("Text to send (1 line, 0 characters):\n│ \n\nReact"));
    }

    #[test]
    fn alt_text_names_the_approval_and_the_title() {
        let mut c = card("body", None);
        c.content.title = "reply\n\u{200b}".into();
        assert_eq!(
            alt_text(&c),
            "Approval request apr_0123: reply\\u{a}\\u{200b}"
        );
    }

    #[test]
    fn agent_text_is_shown_escaped_never_interpreted() {
        let c = card(
            "body \u{202e}txt.exe\u{1b}[2J line\u{2028}sep\u{2029}para\r",
            Some("why\u{2066}not\u{85}"),
        );
        let text = card_text(&c);
        for hidden in [
            '\u{202e}', '\u{1b}', '\u{2028}', '\u{2029}', '\r', '\u{2066}', '\u{85}',
        ] {
            assert!(!text.contains(hidden), "{hidden:?} reached the card");
        }
        assert!(text.contains("\\u{202e}txt.exe\\u{1b}[2J"));
        assert!(text.contains("line\\u{2028}sep\\u{2029}para\\u{d}"));
        assert!(text.contains("why\\u{2066}not\\u{85}"));
    }

    #[test]
    fn signed_card_carries_the_machine_tags() {
        let keys = Keys::generate();
        let c = card("Reply to review rev-1", None);
        let event = sign_card_event(&c, &keys, "care-approvals").unwrap();
        assert!(event.verify().is_ok());
        assert_eq!(event.kind, CARD_KIND);
        assert_eq!(tag_value(&event, "h"), Some("care-approvals"));
        assert_eq!(tag_value(&event, TAG_APPROVAL), Some("apr_0123"));
        assert_eq!(
            tag_value(&event, TAG_PAYLOAD_HASH),
            Some(c.payload_hash.as_str())
        );
        assert_eq!(tag_value(&event, TAG_ACTION), Some("asc_review_reply"));
        let expiration = c.expires_at.timestamp().to_string();
        assert_eq!(tag_value(&event, "expiration"), Some(expiration.as_str()));
        assert!(tag_value(&event, "alt").unwrap().contains("apr_0123"));
        assert_eq!(event.created_at.as_secs(), c.created_at.timestamp() as u64);
        assert!(!event.content.contains("Reason given"));
    }
}

//! The approval card: a NIP-29 group chat message (kind 9) whose text says in plain words what
//! will happen, with machine tags that bind it to one approval and one payload.
//!
//! The summary (which holds the full body an agent wrote, and third-party text it quotes) and
//! the reason are agent-controlled: both pass `escape_for_display`, so control characters, line
//! and paragraph separators and bidi overrides are shown as visible `\u{..}` escapes.

use care_core::channel::ApprovalCard;
use care_core::fence::escape_for_display;
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
/// How many hex characters of the payload hash the text shows.
pub const SHORT_HASH_CHARS: usize = 12;

/// What the action does, in words an approver reads first.
pub fn title(action: &str) -> String {
    match action {
        "asc_review_reply" => "reply to an App Store review".to_owned(),
        "discourse_post_reply" => "reply on the community forum".to_owned(),
        "mail_send" => "send an e-mail".to_owned(),
        "cluster_restart_workload" => "restart a Kubernetes workload".to_owned(),
        other => format!("run {}", escape_for_display(other)),
    }
}

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// The card's text, shown by any group chat client.
pub fn card_text(card: &ApprovalCard) -> String {
    let short_hash: String = card.payload_hash.chars().take(SHORT_HASH_CHARS).collect();
    let mut text = format!(
        "Approval needed: {}\n\n",
        escape_for_display(&card.content.title)
    );
    text.push_str(&escape_for_display(&card.content.one_line()));
    if let Some(body) = &card.content.text {
        text.push_str(&format!(": «{}»", escape_for_display(body)));
    }
    text.push_str("\n\n");
    if let Some(reason) = &card.reason {
        text.push_str(&format!("Reason given: {}\n", escape_for_display(reason)));
    }
    text.push_str(&format!(
        "Requested by: the {} agent\nExpires: {}\nApproval id: {}\nPayload hash: {}\n\n",
        escape_for_display(&card.requested_by_role),
        when(card.expires_at),
        card.approval_id,
        short_hash
    ));
    text.push_str(&format!(
        "React {} to approve, {} to reject. Other reactions are ignored.",
        APPROVE_CONTENTS.join(" "),
        REJECT_CONTENTS.join(" ")
    ));
    text
}

/// The one-line NIP-31 `alt` summary: no agent-written text in it.
pub fn alt_text(card: &ApprovalCard) -> String {
    format!(
        "Approval request {}: {}",
        card.approval_id,
        escape_for_display(&card.content.title)
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
            content: care_core::channel::CardContent {
                title: "reply to an App Store review".into(),
                target: "review rev-1 of Demo Care".into(),
                facts: Vec::new(),
                text: Some(summary.into()),
            },
            reason: reason.map(str::to_owned),
            payload_hash: "ab".repeat(32),
            requested_by_role: "reviews".into(),
            created_at,
            expires_at: created_at + Duration::minutes(60),
        }
    }

    #[test]
    fn text_says_what_when_and_how() {
        let c = card(
            "Reply to review rev-1 of Demo Care in ko: «고마워요»",
            Some("angry customer"),
        );
        let text = card_text(&c);
        assert!(text.starts_with("Approval needed: reply to an App Store review\n"));
        assert!(text.contains("Reply to review rev-1 of Demo Care in ko: «고마워요»"));
        assert!(text.contains("Reason given: angry customer"));
        assert!(text.contains("Approval id: apr_0123"));
        assert!(text.contains(&format!("Payload hash: {}\n", &c.payload_hash[..12])));
        assert!(text.contains("Requested by: the reviews agent"));
        assert!(text.contains("Expires: "));
        assert!(text.contains("✅") && text.contains("❌"));
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

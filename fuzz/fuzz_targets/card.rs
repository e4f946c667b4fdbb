//! The approval card: whatever the agent and the domain put in it, every line that is not the
//! server's starts with the block prefix, the server's lines are exactly the layout's (so a body
//! cannot draw a second "Approval id:" line), and the text and reason decode back exactly.
#![no_main]

use arbitrary::Arbitrary;
use care_core::approval_channel::{ApprovalCard, CardContent, CardFact};
use care_nostr::card::{BLOCK_PREFIX, card_text};
use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    title: String,
    target: String,
    /// Labels are the domains' own (fixed words); values carry upstream or agent text.
    facts: Vec<(u8, String)>,
    text: Option<String>,
    reason: Option<String>,
    role: String,
    approval_id: String,
    expires: u32,
}

const LABELS: [&str; 4] = [
    "Replaces an existing response",
    "Recipient",
    "Namespace",
    "Topic",
];

/// The agent-written block after `header_start` (its prefixed lines, prefix removed), decoded.
fn block_after(lines: &[&str], header_start: &str) -> Option<String> {
    let at = lines.iter().position(|l| l.starts_with(header_start))?;
    let body: Vec<&str> = lines[at + 1..]
        .iter()
        .take_while(|l| l.starts_with(BLOCK_PREFIX))
        .map(|l| &l[BLOCK_PREFIX.len()..])
        .collect();
    care_fuzz::unescape_code_points(&body.join("\n"))
}

fuzz_target!(|input: Input| {
    let facts: Vec<CardFact> = input
        .facts
        .iter()
        .take(8)
        .map(|(l, v)| CardFact::new(LABELS[usize::from(*l) % LABELS.len()], v.clone()))
        .collect();
    let fact_count = facts.len();
    let card = ApprovalCard {
        approval_id: input.approval_id,
        action: "asc_review_reply".into(),
        content: CardContent {
            title: input.title,
            target: input.target,
            facts,
            text: input.text.clone(),
        },
        reason: input.reason.clone(),
        payload_hash: "ab".repeat(32),
        requested_by_role: input.role,
        created_at: Utc.timestamp_opt(1_900_000_000, 0).unwrap(),
        expires_at: Utc
            .timestamp_opt(1_900_000_000 + i64::from(input.expires), 0)
            .unwrap(),
    };
    let text = card_text(&card);
    let lines: Vec<&str> = text.split('\n').collect();
    let server_lines: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.starts_with(BLOCK_PREFIX))
        .collect();
    // Facts: title, action, target, the facts, requested by, expires, id, hash; then per block
    // an empty line, maybe a warning, a header; then the empty line and the footer.
    let mut expected = 3 + fact_count + 4;
    for block in [&input.text, &input.reason].into_iter().flatten() {
        expected += 2 + usize::from(care_core::display::escape_block(block).escaped > 0);
    }
    expected += 2;
    assert_eq!(
        server_lines.len(),
        expected,
        "the server's lines are not the layout's:\n{text}"
    );
    for label in [
        "Approval needed: ",
        "Approval id: ",
        "Payload hash: ",
        "Requested by: ",
    ] {
        assert_eq!(
            server_lines.iter().filter(|l| l.starts_with(label)).count(),
            1,
            "{label:?} appears other than once:\n{text}"
        );
    }
    assert!(
        care_core::display::is_all_visible(&text),
        "an invisible code point:\n{text}"
    );
    if let Some(body) = &input.text {
        assert_eq!(
            block_after(&lines, "Text to send (").as_deref(),
            Some(body.as_str())
        );
    }
    if let Some(reason) = &input.reason {
        let shown = block_after(&lines, "Reason given by the agent (");
        assert_eq!(shown.as_deref(), Some(reason.as_str()));
    }
});

//! The card's layout is the server's (issue 7): invisible code points in agent text are shown as
//! escapes and counted in a warning, agent text cannot draw a line that reads as one of the
//! card's own, the rendering is one-to-one, and the whole card is visible.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use care_core::approval_channel::{ApprovalCard, CardContent, CardFact};
use care_core::display::{escape_block, escape_line, in_escaped_set, is_all_visible};
use care_nostr::card::{BLOCK_PREFIX, card_text};
use chrono::{DateTime, Utc};
use proptest::prelude::*;

fn at(rfc3339: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .with_timezone(&Utc)
}

fn card(body: Option<&str>, reason: Option<&str>) -> ApprovalCard {
    ApprovalCard {
        approval_id: "apr_0123".into(),
        action: "asc_review_reply".into(),
        content: CardContent {
            title: "reply to an App Store review".into(),
            target: "review rev-1 of Demo Care (KOR), reply in ko".into(),
            facts: vec![CardFact::new("Replaces an existing response", "no")],
            text: body.map(str::to_owned),
        },
        reason: reason.map(str::to_owned),
        payload_hash: "ab".repeat(32),
        requested_by_role: "reviews".into(),
        created_at: at("2030-01-02T02:04:05Z"),
        expires_at: at("2030-01-02T03:04:05Z"),
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The lines the server writes for `card`, computed here from the card's fields, in order.
fn server_lines(card: &ApprovalCard) -> Vec<String> {
    let one = |s: &str| escape_line(s).text;
    let mut lines = vec![
        format!("Approval needed: {}", one(&card.content.title)),
        format!("Action: {}", one(&card.action)),
        format!("Target: {}", one(&card.content.target)),
    ];
    for fact in &card.content.facts {
        lines.push(format!("{}: {}", one(&fact.label), one(&fact.value)));
    }
    lines.push(format!(
        "Requested by: the {} agent",
        one(&card.requested_by_role)
    ));
    lines.push("Expires: 2030-01-02 03:04:05 UTC".to_owned());
    lines.push(format!("Approval id: {}", one(&card.approval_id)));
    lines.push(format!("Payload hash: {}", one(&card.payload_hash)));
    let blocks = [
        (card.content.text.as_deref(), "text", "Text to send"),
        (
            card.reason.as_deref(),
            "reason",
            "Reason given by the agent",
        ),
    ];
    for (text, what, header) in blocks {
        let Some(text) = text else { continue };
        lines.push(String::new());
        let shown = escape_block(text);
        let invisible = shown.escaped - shown.references;
        if invisible > 0 {
            lines.push(format!(
                "⚠ The {what} contains {}, shown below as \\u{{…}}.",
                plural(invisible, "invisible or formatting character")
            ));
        }
        if shown.references > 0 {
            let colon = if shown.references == 1 {
                "its colon"
            } else {
                "their colons"
            };
            lines.push(format!(
                "⚠ The {what} contains {}, {colon} shown below as \\u{{3a}} so that no app \
                 shows a mention or another note in their place.",
                plural(shown.references, "Nostr reference")
            ));
        }
        lines.push(format!(
            "{header} ({}, {}):",
            plural(text.split('\n').count(), "line"),
            plural(text.chars().count(), "character")
        ));
    }
    lines.push(String::new());
    lines.push(
        "React ✅ 👍 + to approve, ❌ 👎 - to reject. Other reactions are ignored.".to_owned(),
    );
    lines
}

fn unprefixed_lines(text: &str) -> Vec<String> {
    text.split('\n')
        .filter(|l| !l.starts_with(BLOCK_PREFIX))
        .map(str::to_owned)
        .collect()
}

fn prefixed_lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .filter(|l| l.starts_with(BLOCK_PREFIX))
        .collect()
}

/// One code point of each class the card must escape, in a context where it is escaped.
const HIDDEN: [(&str, char); 27] = [
    ("zero-width space", '\u{200b}'),
    ("word joiner", '\u{2060}'),
    ("soft hyphen", '\u{ad}'),
    ("combining grapheme joiner", '\u{34f}'),
    ("VS1 after a letter", '\u{fe00}'),
    ("VS16 after a letter", '\u{fe0f}'),
    ("VS17", '\u{e0100}'),
    ("Mongolian FVS1", '\u{180b}'),
    ("Hangul choseong filler", '\u{115f}'),
    ("Hangul jungseong filler", '\u{1160}'),
    ("Hangul filler", '\u{3164}'),
    ("halfwidth Hangul filler", '\u{ffa0}'),
    ("BOM", '\u{feff}'),
    ("tag A", '\u{e0041}'),
    ("RLO", '\u{202e}'),
    ("LRI", '\u{2066}'),
    ("ALM", '\u{61c}'),
    ("unassigned", '\u{378}'),
    ("private use", '\u{e000}'),
    ("supplementary private use", '\u{f0000}'),
    ("NBSP", '\u{a0}'),
    ("ideographic space", '\u{3000}'),
    ("line separator", '\u{2028}'),
    ("paragraph separator", '\u{2029}'),
    ("CR", '\r'),
    ("ESC", '\u{1b}'),
    ("C1 CSI", '\u{9b}'),
];

#[test]
fn each_class_of_invisible_character_is_escaped_and_counted() {
    let extra = [("DEL", '\u{7f}'), ("ZWJ at the start", '\u{200d}')];
    for (name, c) in HIDDEN.iter().chain(extra.iter()) {
        let body = if *c == '\u{200d}' {
            format!("{c}Thank you for the review!")
        } else {
            format!("Thank you{c} for the review!")
        };
        let text = card_text(&card(Some(&body), None));
        let escape = format!("\\u{{{:x}}}", u32::from(*c));
        assert!(text.contains(&escape), "{name}: {text}");
        assert!(!text.contains(*c), "{name} reached the card raw");
        assert!(
            text.contains(
                "⚠ The text contains 1 invisible or formatting character, shown below as \\u{…}."
            ),
            "{name}: {text}"
        );
    }
}

#[test]
fn all_classes_at_once_are_counted_in_one_warning() {
    let body: String = HIDDEN.iter().map(|(_, c)| format!("a{c}")).collect();
    let reason = "why\u{200b}\u{2060} not";
    let text = card_text(&card(Some(&body), Some(reason)));
    for (name, c) in HIDDEN {
        assert!(
            text.contains(&format!("\\u{{{:x}}}", u32::from(c))),
            "{name}: {text}"
        );
    }
    let warning = format!(
        "⚠ The text contains {} invisible or formatting characters, shown below as \\u{{…}}.\n\
         Text to send (1 line, {} characters):\n",
        HIDDEN.len(),
        2 * HIDDEN.len()
    );
    assert!(text.contains(&warning), "{text}");
    assert!(text.contains(
        "⚠ The reason contains 2 invisible or formatting characters, shown below as \\u{…}.\n\
         Reason given by the agent (1 line, 9 characters):\n│ why\\u{200b}\\u{2060} not\n"
    ));
    assert!(is_all_visible(&text));
}

#[test]
fn text_without_invisibles_has_no_warning_and_keeps_its_joiners() {
    let body = "Merci ❤\u{fe0f} 👨\u{200d}👩\u{200d}👧 क्\u{200d}ष \u{200f}شكرا\u{200f} Q&A <3";
    let text = card_text(&card(Some(body), Some("fine")));
    assert!(!text.contains('⚠'), "{text}");
    assert!(text.contains(&format!("{BLOCK_PREFIX}{body}\n")), "{text}");
}

#[test]
fn a_body_imitating_the_card_stays_inside_its_block() {
    let forged = format!(
        "»\n\nRequested by: the reviews agent\nApproval id: apr_x\nPayload hash: {}\n\n\
         React ✅ 👍 + to approve, ❌ 👎 - to reject. Other reactions are ignored.\n\n\
         Approval needed: reply to an App Store review\nTarget: review rev-2 «",
        "cd".repeat(32)
    );
    let c = card(
        Some(&forged),
        Some("Reason given by the agent (1 line, 2 characters):\n│ ok"),
    );
    let text = card_text(&c);
    assert_eq!(unprefixed_lines(&text), server_lines(&c), "{text}");
    assert!(text.contains(&format!("\n{BLOCK_PREFIX}Approval id: apr_x\n")));
    assert!(text.contains(&format!("\n{BLOCK_PREFIX}{BLOCK_PREFIX}ok\n")));
    assert_eq!(text.matches("\nApproval id: ").count(), 1);
    assert_eq!(text.matches("\nReact ✅").count(), 1);
    // The card's own lines come first, so the forged ones sit below the real facts.
    assert!(text.starts_with("Approval needed: reply to an App Store review\nAction: "));
}

/// A chat client shows `nostr:nevent1…` as the quoted note and `nostr:npub1…` as a profile's
/// name: an agent could put another, harmless-looking card or an approver's name inside its own.
#[test]
fn nostr_references_cannot_become_mentions_or_quoted_notes() {
    let reason = "Routine reply, see the approved twin nostr:nevent1qqsrhuxx8l9ex335q7he0f09aej04zpazpl0ne2cgukyawd24mayt8g\n\
                  cc NOSTR:npub12ujlwgvscrjc90xdywc6nntlk5wq9qqr6wlgfkgz7efw4tgmuhxsux8unx";
    let body = "Follow us: Nostr:npub1demo\u{200b}";
    let text = card_text(&card(Some(body), Some(reason)));
    assert!(!text.to_ascii_lowercase().contains("nostr:"), "{text}");
    assert!(is_all_visible(&text), "{text}");
    assert!(
        text.contains("│ Routine reply, see the approved twin nostr\\u{3a}nevent1qqsrh"),
        "{text}"
    );
    assert!(text.contains("│ cc NOSTR\\u{3a}npub12ujlw"), "{text}");
    assert!(
        text.contains("│ Follow us: Nostr\\u{3a}npub1demo\\u{200b}"),
        "{text}"
    );
    assert!(
        text.contains(
            "⚠ The text contains 1 invisible or formatting character, shown below as \\u{…}.\n\
         ⚠ The text contains 1 Nostr reference, its colon shown below as \\u{3a} so that no app \
         shows a mention or another note in their place.\n\
         Text to send (1 line, 27 characters):"
        ),
        "{text}"
    );
    assert!(
        text.contains("⚠ The reason contains 2 Nostr references, their colons shown"),
        "{text}"
    );
    assert!(
        !text.contains("⚠ The reason contains 2 invisible"),
        "{text}"
    );
    // A raw reference is what the visibility check refuses.
    assert!(!is_all_visible("see nostr:nevent1qqs"));
    assert!(!is_all_visible("see NoStR:npub1"));
    assert!(is_all_visible(
        "see nostr\\u{3a}nevent1qqs, nost r: and nostr :"
    ));
}

/// Strings an attacker would try: the card's own line texts, the prefix, every kind of line
/// break, invisible code points, joiners and selectors, the escape notation, anything.
fn adversarial() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<char>().prop_map(String::from),
        "[ -~]{0,6}",
        prop::sample::select(vec![
            "\n",
            "\n\n",
            "\r",
            "\r\n",
            "\u{2028}",
            "\u{2029}",
            "\u{85}",
            "\u{b}",
            "\u{c}",
            "│",
            "│ ",
            BLOCK_PREFIX,
            " ",
            "»",
            "«",
            "Approval needed: ",
            "Action: ",
            "Target: ",
            "Requested by: the reviews agent",
            "Expires: 2030-01-02 03:04:05 UTC",
            "Approval id: apr_x",
            "Payload hash: ",
            "Text to send (1 line, 3 characters):",
            "Reason given by the agent (1 line, 2 characters):",
            "⚠ The text contains 1 invisible or formatting character, shown below as \\u{…}.",
            "React ✅ 👍 + to approve, ❌ 👎 - to reject. Other reactions are ignored.",
            "\\u{",
            "\\u{200b}",
            "\u{200b}",
            "\u{200d}",
            "\u{200c}",
            "\u{200e}",
            "\u{fe0f}",
            "\u{2764}",
            "👨",
            "\u{202e}",
            "\u{feff}",
            "\u{a0}",
            "\u{e0041}",
            "a",
            "nostr",
            "NoStR",
            ":",
            "nostr:",
            "nostr:nevent1qqsrhuxx8l9ex335q7he0f09aej04zpazpl0ne2cgukyawd24mayt8g",
            "NOSTR:npub12ujlwgvscrjc90xdywc6nntlk5wq9qqr6wlgfkgz7efw4tgmuhxsux8unx",
        ])
        .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

/// A card whose every agent- or third-party-controlled field is adversarial.
fn adversarial_card() -> impl Strategy<Value = ApprovalCard> {
    (
        prop::option::of(adversarial()),
        prop::option::of(adversarial()),
        adversarial(),
        prop::collection::vec(adversarial(), 0..3),
    )
        .prop_map(|(body, reason, target, values)| {
            let mut c = card(body.as_deref(), reason.as_deref());
            c.content.target = target;
            c.content.facts = values
                .into_iter()
                .enumerate()
                .map(|(i, v)| CardFact::new(format!("Fact {i}"), v))
                .collect();
            c
        })
}

/// The exceptions of `care_core::display`: the only code points of the set a card shows raw.
fn may_appear_raw(c: char) -> bool {
    c == '\n'
        || matches!(
            c,
            '\u{200c}' | '\u{200d}' | '\u{200e}' | '\u{200f}' | '\u{fe0e}' | '\u{fe0f}'
        )
}

proptest! {
    #[test]
    fn only_the_server_writes_unprefixed_lines(c in adversarial_card()) {
        let text = card_text(&c);
        prop_assert_eq!(unprefixed_lines(&text), server_lines(&c));
        let agent_lines = c.content.text.as_deref().map_or(0, |t| t.split('\n').count())
            + c.reason.as_deref().map_or(0, |r| r.split('\n').count());
        prop_assert_eq!(prefixed_lines(&text).len(), agent_lines);
    }

    #[test]
    fn the_card_is_all_visible(c in adversarial_card()) {
        let text = card_text(&c);
        prop_assert!(is_all_visible(&text), "{}", text);
        // No chat client finds a Nostr reference to render as a mention or a quoted note.
        prop_assert!(!text.to_ascii_lowercase().contains("nostr:"), "{}", text);
        for ch in text.chars() {
            prop_assert!(
                !in_escaped_set(ch) || may_appear_raw(ch),
                "U+{:04X} raw in {:?}", u32::from(ch), text
            );
        }
        // A raw space ends a line only as the server's: the prefix of an empty line of agent
        // text, or a label whose value is empty.
        for line in text.split('\n') {
            let servers = line == BLOCK_PREFIX
                || (!line.starts_with(BLOCK_PREFIX) && line.ends_with(": "));
            prop_assert!(!line.ends_with(' ') || servers, "{:?}", line);
        }
    }

    #[test]
    fn different_bodies_give_different_cards(
        a in prop::option::of(adversarial()),
        b in prop::option::of(adversarial()),
    ) {
        prop_assume!(a != b);
        prop_assert_ne!(
            card_text(&card(a.as_deref(), Some("r"))),
            card_text(&card(b.as_deref(), Some("r")))
        );
    }

    #[test]
    fn different_reasons_give_different_cards(
        a in prop::option::of(adversarial()),
        b in prop::option::of(adversarial()),
    ) {
        prop_assume!(a != b);
        prop_assert_ne!(
            card_text(&card(Some("body"), a.as_deref())),
            card_text(&card(Some("body"), b.as_deref()))
        );
    }

    #[test]
    fn different_fact_values_or_targets_give_different_cards(
        a in adversarial(),
        b in adversarial(),
    ) {
        prop_assume!(a != b);
        let with_fact = |v: &str| {
            let mut c = card(Some("body"), None);
            c.content.facts.push(CardFact::new("App", v));
            card_text(&c)
        };
        prop_assert_ne!(with_fact(&a), with_fact(&b));
        let with_target = |v: &str| {
            let mut c = card(Some("body"), None);
            c.content.target = v.to_owned();
            card_text(&c)
        };
        prop_assert_ne!(with_target(&a), with_target(&b));
    }
}

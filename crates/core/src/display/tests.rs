//! Tests of the person-facing escaping: one per class of the module doc, the exceptions, the
//! block layout, and properties (all visible, reversible, one-to-one).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use proptest::prelude::*;

fn line(text: &str) -> String {
    escape_line(text).text
}

fn shown_block(text: &str) -> String {
    escape_block(text).text
}

/// Asserts that `c` after `before` and before `after` is escaped in both modes, once.
fn assert_escaped(c: char, before: &str, after: &str) {
    let input = format!("{before}{c}{after}");
    let expected = format!("{before}\\u{{{:x}}}{after}", u32::from(c));
    for shown in [escape_line(&input), escape_block(&input)] {
        assert_eq!(shown.text, expected, "U+{:04X}", u32::from(c));
        assert_eq!(shown.escaped, 1, "U+{:04X}", u32::from(c));
    }
}

fn assert_kept(text: &str) {
    for shown in [escape_line(text), escape_block(text)] {
        assert_eq!(shown.text, text);
        assert_eq!(shown.escaped, 0, "{text:?}");
    }
}

#[test]
fn zero_width_space_and_word_joiner_are_escaped() {
    assert_escaped('\u{200b}', "Thank you", " for the review!");
    assert_escaped('\u{2060}', "Thank", "you");
}

#[test]
fn soft_hyphen_and_combining_grapheme_joiner_are_escaped() {
    assert_escaped('\u{ad}', "re", "view");
    assert_escaped('\u{34f}', "a", "b");
}

#[test]
fn variation_selectors_after_no_emoji_are_escaped() {
    // VS1 after a letter, VS16 after a letter, VS17 (supplement), Mongolian FVS1.
    assert_escaped('\u{fe00}', "a", "b");
    assert_escaped('\u{fe0f}', "a", "b");
    assert_escaped('\u{fe0e}', "a", "b");
    assert_escaped('\u{e0100}', "a", "b");
    assert_escaped('\u{180b}', "\u{1820}", "");
    // At the start there is no emoji to select a presentation for.
    assert_escaped('\u{fe0f}', "", "x");
}

#[test]
fn presentation_selectors_after_an_emoji_are_kept() {
    assert_kept("I \u{2764}\u{fe0f} it \u{263a}\u{fe0f} \u{263a}\u{fe0e} 1\u{fe0f}\u{20e3}");
    // Two selectors in a row: the second follows a selector, not an emoji.
    assert_escaped('\u{fe0f}', "\u{2764}\u{fe0f}", "");
}

#[test]
fn hangul_fillers_are_escaped() {
    for filler in ['\u{115f}', '\u{1160}', '\u{3164}', '\u{ffa0}'] {
        assert_escaped(filler, "안녕", "하세요");
    }
}

#[test]
fn bom_and_tag_characters_are_escaped() {
    assert_escaped('\u{feff}', "", "hello");
    assert_escaped('\u{e0041}', "ok", "");
}

#[test]
fn bidi_controls_and_alm_are_escaped() {
    assert_escaped('\u{202e}', "abc", "fed");
    assert_escaped('\u{2066}', "abc", "def");
    assert_escaped('\u{61c}', "عربي", "123");
}

#[test]
fn lrm_and_rlm_are_kept() {
    assert_kept("mixed \u{200e}English\u{200e} and \u{200f}عربي\u{200f}");
    assert_kept("\u{200f}");
}

#[test]
fn unassigned_and_private_use_are_escaped() {
    assert_escaped('\u{378}', "a", "b");
    assert_escaped('\u{e000}', "a", "b");
    assert_escaped('\u{f0000}', "a", "b");
    assert_escaped('\u{fffe}', "a", "b");
}

#[test]
fn spaces_other_than_u0020_and_separators_are_escaped() {
    assert_escaped('\u{a0}', "100", "€");
    assert_escaped('\u{3000}', "日本", "語");
    assert_escaped('\u{2028}', "line", "sep");
    assert_escaped('\u{2029}', "para", "graph");
    assert_escaped('\u{2009}', "a", "b");
}

#[test]
fn controls_are_escaped() {
    assert_escaped('\r', "x", "y");
    assert_escaped('\u{1b}', "a", "[2Jb");
    assert_escaped('\u{7f}', "a", "b");
    assert_escaped('\u{9b}', "a", "2J");
    assert_escaped('\u{85}', "a", "b");
    assert_escaped('\t', "a", "b");
    assert_escaped('\u{0}', "a", "b");
}

#[test]
fn joiners_inside_words_and_emoji_sequences_are_kept() {
    assert_kept("family 👨\u{200d}👩\u{200d}👧, rainbow 🏳\u{fe0f}\u{200d}🌈, 👍🏽");
    assert_kept("मुझे क्\u{200d}ष और क्\u{200c}ष पसंद है");
    assert_kept("می\u{200c}خواهم");
}

#[test]
fn joiners_at_the_edges_or_next_to_spaces_are_escaped() {
    assert_escaped('\u{200d}', "", "a");
    assert_escaped('\u{200d}', "a", "");
    assert_escaped('\u{200d}', "a ", "b");
    assert_escaped('\u{200d}', "a", " b");
    assert_escaped('\u{200c}', "", "a");
    assert_eq!(line("a\u{200c}\u{200b}"), "a\\u{200c}\\u{200b}");
    // Next to another invisible code point, or doubled, it joins nothing visible.
    assert_eq!(line("a\u{200d}\u{200d}b"), "a\\u{200d}\\u{200d}b");
    assert_eq!(line("a\u{200e}\u{200d}b"), "a\u{200e}\\u{200d}b");
    // A joiner before an escaped backslash would sit next to an escape.
    assert_eq!(line("a\u{200d}\\u{"), "a\\u{200d}\\u{5c}u{");
    // At a line break in a block.
    assert_eq!(shown_block("a\u{200d}\nb"), "a\\u{200d}\nb");
    assert_eq!(shown_block("a\n\u{200d}b"), "a\n\\u{200d}b");
}

#[test]
fn no_html_entities_for_people() {
    assert_kept("Q&A: <b>bold</b> & \"quotes\" 'too'");
}

#[test]
fn trailing_spaces_are_made_visible() {
    assert_eq!(line("Thanks"), "Thanks");
    assert_eq!(line("Thanks "), "Thanks\\u{20}");
    assert_eq!(line("Thanks  "), "Thanks\\u{20}\\u{20}");
    assert_ne!(line("Thanks"), line("Thanks "));
    assert_eq!(shown_block("a \nb "), "a\\u{20}\nb\\u{20}");
    assert_eq!(escape_block("a  \n").escaped, 2);
    // Inner and leading spaces stay; in one line a `\n` is shown, so the space is not last.
    assert_kept(" a b");
    assert_eq!(line("a \nb"), "a \\u{a}b");
    // A space before an escaped character is followed by something visible.
    assert_eq!(line("a \u{a0}"), "a \\u{a0}");
}

#[test]
fn newlines_are_line_breaks_in_blocks_and_escapes_in_lines() {
    assert_eq!(shown_block("one\n\ntwo\n"), "one\n\ntwo\n");
    assert_eq!(escape_block("one\ntwo").escaped, 0);
    assert_eq!(line("one\ntwo"), "one\\u{a}two");
    assert_eq!(escape_line("one\n\ntwo").escaped, 2);
}

#[test]
fn literal_escape_text_is_escaped_so_outputs_stay_distinct() {
    assert_eq!(line("\\u{200b}"), "\\u{5c}u{200b}");
    assert_ne!(line("\\u{200b}"), line("\u{200b}"));
    assert_eq!(line("C:\\Users\\me"), "C:\\Users\\me");
    assert_eq!(line("\\"), "\\");
    assert_eq!(line("\\\u{200b}"), "\\\\u{200b}");
}

#[test]
fn the_colon_of_a_nostr_reference_is_escaped_and_counted() {
    for (input, expected) in [
        ("nostr:npub1abc", "nostr\\u{3a}npub1abc"),
        ("see NoStR:nevent1x", "see NoStR\\u{3a}nevent1x"),
        ("xnostr:note1", "xnostr\\u{3a}note1"),
        ("nostr:nostr:", "nostr\\u{3a}nostr\\u{3a}"),
    ] {
        for shown in [escape_line(input), escape_block(input)] {
            assert_eq!(shown.text, expected);
            assert_eq!(shown.escaped, shown.references, "{input}");
            assert_eq!(
                shown.references,
                expected.matches("\\u{3a}").count(),
                "{input}"
            );
        }
    }
    // Not a reference: a colon elsewhere, or letters a client would not read as the scheme.
    assert_kept("nost r: nostr : nostr https://example.com a:b");
    let split = escape_line("nostr\u{200b}:npub1");
    assert_eq!(split.text, "nostr\\u{200b}:npub1");
    assert_eq!((split.escaped, split.references), (1, 0));
    assert_eq!(escape_line("ｎｏｓｔｒ:x").references, 0);
}

#[test]
fn the_count_is_the_number_of_escapes() {
    let shown = escape_block("a\u{200b}b\u{2060}c \n\\u{");
    assert_eq!(shown.escaped, 4, "{}", shown.text);
    assert_eq!(escape_line("plain text").escaped, 0);
}

#[test]
fn blocks_prefix_every_line_and_count_the_original() {
    let b = block("Hi \u{200b}there\n\nbye", "│ ");
    assert_eq!(b.lines, "│ Hi \\u{200b}there\n│ \n│ bye");
    assert_eq!((b.line_count, b.char_count, b.escaped), (3, 14, 1));
    assert_eq!(b.size(), "3 lines, 14 characters");
    let empty = block("", "│ ");
    assert_eq!(empty.lines, "│ ");
    assert_eq!(empty.size(), "1 line, 0 characters");
    assert_eq!(block("x\n", "> ").lines, "> x\n> ");
    assert_eq!(block("é", "> ").size(), "1 line, 1 character");
}

#[test]
fn the_visibility_check_refuses_raw_invisibles() {
    for raw in [
        "a\u{200b}b",
        "\u{200d}a",
        "a\u{fe0f}",
        "a \u{200d}b",
        "\u{a0}",
        "x\u{202e}",
        "nostr:npub1",
        "a NOSTR:b",
    ] {
        assert!(!is_all_visible(raw), "{raw:?}");
        assert!(is_all_visible(&line(raw)), "{raw:?}");
    }
    assert!(is_all_visible("👨\u{200d}👩 \u{2764}\u{fe0f} \u{200e}"));
    assert!(is_all_visible("🏳\u{fe0f}\u{200d}🌈"));
}

// ----- properties -----

/// Inverse of the escaping, test-only: a round trip proves that no two inputs share an output.
fn unescape(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix(ESCAPE_PREFIX) {
            let end = r.find('}')?;
            let code = u32::from_str_radix(&r[..end], 16).ok()?;
            out.push(char::from_u32(code)?);
            rest = &r[end + 1..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    Some(out)
}

/// The exceptions, as a plain list: the only code points of the set that may appear raw.
fn may_appear_raw(c: char) -> bool {
    matches!(
        c,
        '\u{200c}' | '\u{200d}' | '\u{200e}' | '\u{200f}' | '\u{fe0e}' | '\u{fe0f}'
    )
}

/// Strings made of pieces that stress the escaper: every class above, joiners and selectors
/// next to emoji, letters, spaces and line breaks, and the escape notation itself.
fn tricky() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<char>().prop_map(String::from),
        "[ -~]{0,6}",
        prop::sample::select(vec![
            " ",
            "  ",
            "\n",
            "\r",
            "\t",
            "\\",
            "\\u{",
            "\\u{200b}",
            "\\u{5c}",
            "u{",
            "}",
            "&",
            "\u{0}",
            "\u{1b}",
            "\u{7f}",
            "\u{85}",
            "\u{9b}",
            "\u{ad}",
            "\u{a0}",
            "\u{34f}",
            "\u{61c}",
            "\u{115f}",
            "\u{1160}",
            "\u{3164}",
            "\u{ffa0}",
            "\u{180b}",
            "\u{200b}",
            "\u{200c}",
            "\u{200d}",
            "\u{200e}",
            "\u{200f}",
            "\u{2028}",
            "\u{2029}",
            "\u{202e}",
            "\u{2060}",
            "\u{2066}",
            "\u{3000}",
            "\u{fe00}",
            "\u{fe0e}",
            "\u{fe0f}",
            "\u{feff}",
            "\u{e0041}",
            "\u{e0100}",
            "\u{378}",
            "\u{e000}",
            "\u{f0000}",
            "a",
            "क्",
            "한",
            "ع",
            "👨",
            "👩",
            "\u{2764}",
            "\u{263a}",
            "🏳",
            "1",
            "nostr",
            "NOSTR",
            "nost",
            "r",
            ":",
            "nostr:npub1",
        ])
        .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..32).prop_map(|pieces| pieces.concat())
}

fn check(text: &str) -> Result<(), TestCaseError> {
    for (shown, multi_line) in [(escape_block(text), true), (escape_line(text), false)] {
        let out = &shown.text;
        prop_assert!(is_all_visible(out), "not all visible: {out:?}");
        for c in out.chars() {
            prop_assert!(
                !in_escaped_set(c) || may_appear_raw(c) || (multi_line && c == '\n'),
                "U+{:04X} raw in {out:?}",
                u32::from(c)
            );
        }
        prop_assert!(!out.contains(" \n") && !out.ends_with(' '), "{out:?}");
        let decoded = unescape(out);
        prop_assert_eq!(decoded.as_deref(), Some(text));
        prop_assert_eq!(out.matches(ESCAPE_PREFIX).count(), shown.escaped);
        prop_assert!(!out.to_ascii_lowercase().contains("nostr:"), "{out:?}");
        prop_assert_eq!(out.matches("\\u{3a}").count(), shown.references);
    }
    Ok(())
}

proptest! {
    #[test]
    fn any_text_is_shown_visible_and_reversibly(text in any::<String>()) {
        check(&text)?;
    }

    #[test]
    fn tricky_text_is_shown_visible_and_reversibly(text in tricky()) {
        check(&text)?;
    }

    #[test]
    fn different_texts_are_shown_differently(a in tricky(), b in tricky()) {
        prop_assume!(a != b);
        prop_assert_ne!(escape_line(&a).text, escape_line(&b).text);
        prop_assert_ne!(escape_block(&a).text, escape_block(&b).text);
        prop_assert_ne!(block(&a, "│ ").lines, block(&b, "│ ").lines);
    }
}

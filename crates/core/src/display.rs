//! The escaping of text shown to a person (approval cards, the operator CLI): every code point a
//! reader cannot see as itself is written as a visible escape, so what an approver reads is
//! what will be sent.
//!
//! The model-facing fence ([`crate::fence`]) answers another question (can the text close a tag
//! or drive a terminal?) and uses HTML entities; people get no entities: `Q&A` reads `Q&A`.
//!
//! # What is escaped
//!
//! The set comes from Unicode's property data (ICU4X, `icu_properties`), not from a hand list:
//!
//! - `Default_Ignorable_Code_Point` (zero-width space U+200B, word joiner U+2060, soft hyphen
//!   U+00AD, combining grapheme joiner U+034F, Hangul fillers U+115F U+1160 U+3164 U+FFA0,
//!   BOM U+FEFF, tag characters U+E0000–U+E0FFF, …);
//! - the `Variation_Selector` property (VS1–VS256, Mongolian free variation selectors);
//! - general categories Cc (controls, so CR, ESC, DEL and the C1 controls; tab too), Cf
//!   (formatting: bidi embeddings, overrides and isolates, ALM U+061C, …), Cn (unassigned,
//!   including noncharacters), Co (private use), Zl U+2028 and Zp U+2029;
//! - Zs other than U+0020: NBSP U+00A0, U+3000 and the other spaces look like a space but are
//!   not one;
//! - a U+0020 that ends a line (followed only by spaces up to a line break or the end), so
//!   `Thanks` and `Thanks ` read differently;
//! - `\n` in single-line values ([`escape_line`]); blocks ([`escape_block`]) keep it as a line
//!   break;
//! - a `\` that begins the text `\u{`, written `\u{5c}`, so every `\u{` in the output is an
//!   escape written here and the escaping stays one-to-one.
//! - the `:` of a Nostr reference (`nostr:` in any letter case, NIP-21/NIP-27), written
//!   `\u{3a}`: a chat client shows `nostr:npub1…` as a mention of that profile's name and
//!   `nostr:nevent1…` as the quoted note itself, so an approver would read something other than
//!   the text (another card, a name) inside it. Each is counted apart too ([`Shown::references`]).
//!
//! # Exceptions (real text needs them)
//!
//! - ZWJ U+200D and ZWNJ U+200C inside a word or an emoji sequence: the code points on both
//!   sides exist, are shown as themselves, are not whitespace and are not of the set (on the
//!   left, a kept VS16/VS15 counts: it belongs to its emoji). At the start or end of the text,
//!   next to a space or next to another invisible code point they are escaped.
//! - VS15 U+FE0E and VS16 U+FE0F right after a code point with the `Emoji` property (❤️ ☺️ 1️⃣);
//!   after anything else they are escaped.
//! - LRM U+200E and RLM U+200F, always: mixed right-to-left text needs them, and they can only
//!   act as a strong letter, not reorder a run as the overrides do.
//!
//! # Escape notation
//!
//! `\u{HEX}`: a backslash, `u`, `{`, the code point in lowercase hexadecimal without leading
//! zeros, `}` (Rust's `char::escape_unicode`, the notation of [`crate::fence`]), e.g. U+200B →
//! `\u{200b}`. Both functions return how many code points they escaped, so a caller can warn.

mod block;
mod check;
mod classes;
#[cfg(test)]
mod tests;

pub use block::{Block, block, counted};
pub use check::is_all_visible;
pub use classes::in_escaped_set;

use classes::{LRM, RLM, is_emoji, is_joiner, is_presentation_selector};

/// Starts every escape; an input `\` followed by `u{` is itself escaped.
const ESCAPE_PREFIX: &str = "\\u{";
/// The URI scheme chat clients render as a mention or an embedded note, compared without case.
const NOSTR_SCHEME: &str = "nostr";

/// Text escaped for a person, and how many of its code points were written as escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub text: String,
    /// Every code point written as an escape.
    pub escaped: usize,
    /// Of those, the colons of Nostr references (the rest are invisible or formatting ones).
    pub references: usize,
}

/// Escapes multi-line text (a reply body, a reason): `\n` stays a line break.
#[must_use]
pub fn escape_block(text: &str) -> Shown {
    escape(text, Newlines::Keep)
}

/// Escapes a value shown on one line after a label: `\n` is escaped too.
#[must_use]
pub fn escape_line(text: &str) -> Shown {
    escape(text, Newlines::Escape)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Newlines {
    Keep,
    Escape,
}

fn escape(text: &str, newlines: Newlines) -> Shown {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let trailing = trailing_spaces(&chars, newlines);
    let mut out = String::with_capacity(text.len());
    let mut escaped = 0;
    let mut references = 0;
    let mut run_start = 0;
    // The previous code point if it was shown as itself: joiners and selectors attach to it.
    let mut prev_shown: Option<char> = None;
    for (k, &(i, c)) in chars.iter().enumerate() {
        let hide = match c {
            '\n' => newlines == Newlines::Escape,
            ' ' => trailing.get(k).copied().unwrap_or(false),
            '\\' => text[i..].starts_with(ESCAPE_PREFIX),
            ':' => ends_with_nostr_scheme(&text[..i]),
            LRM | RLM => false,
            c if is_presentation_selector(c) => !prev_shown.is_some_and(is_emoji),
            c if is_joiner(c) => {
                let next = chars.get(k + 1).map(|&(j, n)| (n, &text[j..]));
                !(prev_shown.is_some_and(joins_on_the_left)
                    && next.is_some_and(|(n, rest)| {
                        joins_on_the_right(n) && !rest.starts_with(ESCAPE_PREFIX)
                    }))
            }
            c => in_escaped_set(c),
        };
        if hide {
            out.push_str(&text[run_start..i]);
            out.extend(c.escape_unicode());
            run_start = i + c.len_utf8();
            escaped += 1;
            references += usize::from(c == ':');
            prev_shown = None;
        } else {
            prev_shown = Some(c);
        }
    }
    out.push_str(&text[run_start..]);
    Shown {
        text: out,
        escaped,
        references,
    }
}

/// Whether `before` ends with the letters `nostr` (any case), so a `:` after it would make a
/// Nostr reference. Letters are never escaped, so the output has such a colon only if the input does.
fn ends_with_nostr_scheme(before: &str) -> bool {
    before
        .len()
        .checked_sub(NOSTR_SCHEME.len())
        .and_then(|start| before.get(start..))
        .is_some_and(|tail| tail.eq_ignore_ascii_case(NOSTR_SCHEME))
}

/// Whether a joiner may follow `c`, shown as itself: a visible non-space, or the kept
/// presentation selector of an emoji (🏳️‍🌈).
fn joins_on_the_left(c: char) -> bool {
    !c.is_whitespace() && (!in_escaped_set(c) || is_presentation_selector(c))
}

/// Whether a joiner may precede `c`: a visible non-space.
fn joins_on_the_right(c: char) -> bool {
    !c.is_whitespace() && !in_escaped_set(c)
}

/// For each code point, whether it is a U+0020 followed only by spaces up to the end of its line
/// (the end of the text, or in a block a `\n`): one backward pass.
fn trailing_spaces(chars: &[(usize, char)], newlines: Newlines) -> Vec<bool> {
    let mut trailing = vec![false; chars.len()];
    let mut at_line_end = true;
    for (k, &(_, c)) in chars.iter().enumerate().rev() {
        match c {
            ' ' => trailing[k] = at_line_end,
            '\n' if newlines == Newlines::Keep => at_line_end = true,
            _ => at_line_end = false,
        }
    }
    trailing
}

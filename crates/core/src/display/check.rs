//! The invariant the escaping keeps, checked on its output: no code point of the escaped set is
//! shown raw outside an allowed context, and no Nostr reference's `:` is shown raw. Written
//! apart from the escaper (it reads the output) so tests of cards and the CLI can assert it on
//! whole rendered texts.

use super::classes::{LRM, RLM, in_escaped_set, is_emoji, is_joiner, is_presentation_selector};
use super::{ESCAPE_PREFIX, NOSTR_SCHEME};

/// One code point of displayed text: shown as itself, or written as a `\u{..}` escape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Raw(char),
    Escape,
}

/// Whether a person sees every code point of `shown` as itself or as an escape: any raw code
/// point of the escaped set stands in an allowed context (see the module doc), and no `nostr:`
/// shows its colon raw. `\n` is allowed (a line break is visible); trailing spaces are not
/// checked here.
#[must_use]
pub fn is_all_visible(shown: &str) -> bool {
    let tokens = tokens(shown);
    (0..tokens.len()).all(|t| allowed(&tokens, t))
}

fn allowed(tokens: &[Token], t: usize) -> bool {
    let Some(Token::Raw(c)) = tokens.get(t).copied() else {
        return true;
    };
    let raw = |k: Option<usize>| match k.and_then(|k| tokens.get(k)) {
        Some(Token::Raw(c)) => Some(*c),
        _ => None,
    };
    let prev = raw(t.checked_sub(1));
    let next = raw(t.checked_add(1));
    let visible = |c: char| !c.is_whitespace() && !in_escaped_set(c);
    match c {
        '\n' | LRM | RLM => true,
        ':' => !raw_scheme_before(tokens, t),
        c if is_presentation_selector(c) => prev.is_some_and(is_emoji),
        c if is_joiner(c) => {
            let left = prev.is_some_and(|p| {
                visible(p)
                    || (is_presentation_selector(p)
                        && t.checked_sub(1).is_some_and(|k| allowed(tokens, k)))
            });
            left && next.is_some_and(visible)
        }
        c => !in_escaped_set(c),
    }
}

/// Whether the code points right before `tokens[t]` are the letters `nostr` shown raw (any case).
fn raw_scheme_before(tokens: &[Token], t: usize) -> bool {
    let Some(start) = t.checked_sub(NOSTR_SCHEME.len()) else {
        return false;
    };
    tokens.get(start..t).is_some_and(|letters| {
        letters.iter().zip(NOSTR_SCHEME.chars()).all(
            |(token, letter)| matches!(token, Token::Raw(c) if c.eq_ignore_ascii_case(&letter)),
        )
    })
}

/// Splits displayed text into code points, reading each well-formed `\u{hex}` as one escape.
fn tokens(shown: &str) -> Vec<Token> {
    let mut tokens = Vec::with_capacity(shown.len());
    let mut rest = shown;
    while let Some(c) = rest.chars().next() {
        if let Some(len) = escape_len(rest) {
            tokens.push(Token::Escape);
            rest = &rest[len..];
        } else {
            tokens.push(Token::Raw(c));
            rest = &rest[c.len_utf8()..];
        }
    }
    tokens
}

/// The byte length of the escape `rest` starts with, if it starts with one.
fn escape_len(rest: &str) -> Option<usize> {
    let hex_and_rest = rest.strip_prefix(ESCAPE_PREFIX)?;
    let end = hex_and_rest.find('}')?;
    let hex = &hex_and_rest[..end];
    let valid = (1..=6).contains(&hex.len())
        && hex.chars().all(|h| h.is_ascii_hexdigit())
        && u32::from_str_radix(hex, 16)
            .ok()
            .and_then(char::from_u32)
            .is_some();
    valid.then_some(ESCAPE_PREFIX.len() + end + 1)
}

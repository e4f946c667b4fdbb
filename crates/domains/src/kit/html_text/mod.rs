//! Third-party HTML (forum posts, mail bodies) as plain text, in bounded time and memory.
//!
//! `html2text` lays a document out as a reader would see it, but two things in it grow faster
//! than the document. The html5ever tree builder under it rescans its stack of open elements
//! for many tags, so its time grows with the square of the nesting depth (16,000 nested lists,
//! 128 KB, took 7.9 s on one core, on the session's thread); and each line it writes carries a
//! prefix per quoting or list ancestor, so a few hundred nested quotes around many short
//! paragraphs come out as tens of MB. Here the document is parsed in [`PIECE_BYTES`] pieces
//! through [`depth_guard`], a DOM sink that measures how deep each inserted element lands,
//! and the parse stops once one lands deeper than [`MAX_DEPTH`] (browsers bound nesting the
//! same way: Blink and WebKit at 512 levels); a parsed DOM whose [`weight`] passes its budget
//! ([`LAYOUT_WEIGHT_PER_BYTE`], at most [`MAX_LAYOUT_WEIGHT`]) is not laid out either, and a
//! layout more than [`MAX_GROWTH`] times its HTML is dropped. Such a document, or one
//! `html2text` refuses, is read by [`flat`] instead: every word kept, in order, without layout, under
//! [`FLATTENED_NOTE`]. Tables are laid out without borders: a border line spans every column,
//! so one 250 KiB row of cells came out as 256 MB.

mod depth_guard;
mod flat;
mod weight;

use std::panic::{AssertUnwindSafe, catch_unwind};

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::TreeBuilderOpts;
use html5ever::{ParseOpts, parse_document};

use depth_guard::DepthGuardedDom;

/// Elements nested deeper than this (counting `html` as 1) are not laid out. Real posts and
/// mails stay far below it (a newsletter's nested tables: tens); half Blink's 512 halves the
/// parse's worst case, a 256 KiB document held just under the bound: about 160 ms on one core.
pub const MAX_DEPTH: usize = 256;
/// A DOM whose nodes' depths sum past this is not laid out: a long newsletter (10,000 nodes
/// 30 deep) weighs 300,000; at the bound `html2text` writes a few MB in a few hundred ms.
pub const MAX_LAYOUT_WEIGHT: u64 = 2_000_000;
/// Nor is a smaller one weighing more than this per byte of its HTML (plus [`SLACK_BYTES`]):
/// ordinary documents weigh under one per byte (a forum post 0.3-0.4, a newsletter of nested
/// tables 0.8), 90 quotes around 280 paragraphs (3.9 KB) 19.
pub const LAYOUT_WEIGHT_PER_BYTE: u64 = 16;
/// A layout longer than this many times its HTML (plus [`SLACK_BYTES`]) is not returned: the
/// weight bounds the work, not every line's length (a quote chain at a mail's 100 columns
/// leaves a few characters of text per line; at the forum's 10,000 columns `html2text` pads
/// nested tables' lines to thousands of spaces: a 17 KB newsletter came out as 1.5 MB).
pub const MAX_GROWTH: usize = 16;
/// What every document may weigh or grow by whatever its size.
pub const SLACK_BYTES: usize = 4096;
/// The parse is checked between pieces this large: the most it can overshoot the bound is
/// one piece of tags (`<b>` is 3 bytes: about 340 levels).
pub const PIECE_BYTES: usize = 1024;
/// The first line of a document read without layout.
pub const FLATTENED_NOTE: &str =
    "[this HTML could not be laid out (too deep or too large): its text follows without layout]";

/// Why a document gave no text; what stands in for it is the caller's choice.
#[derive(Debug, thiserror::Error)]
pub enum HtmlTextError {
    /// The parser or the renderer panicked; contained here so one odd document costs only itself.
    #[error("the HTML renderer panicked")]
    Panicked,
}

/// How a document was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Laid out by `html2text`: links, quotes, lists, tables and code as a reader sees them.
    LaidOut,
    /// Too deep, too heavy or refused by `html2text`: its text without layout.
    Flattened,
}

/// The layout `html2text` gives both domains: plain text, tables without borders.
fn layout() -> html2text::config::Config<html2text::render::PlainDecorator> {
    html2text::config::plain().no_table_borders()
}

/// The text of `html`, lines wrapped at `width`, and how it was read.
pub fn to_text(html: &str, width: usize) -> Result<(String, Reading), HtmlTextError> {
    catch_unwind(AssertUnwindSafe(|| {
        let refused = match parse_bounded(html) {
            Parsed::Dom(dom) => {
                let budget = weight_budget(html.len());
                if weight::depth_sum(&dom, budget) > budget {
                    format!("its nodes' depths sum past {budget}")
                } else {
                    let config = layout();
                    match config
                        .dom_to_render_tree(&dom)
                        .and_then(|tree| config.render_to_string(tree, width))
                    {
                        Ok(text) if text.len() <= growth_budget(html.len()) => {
                            return (text, Reading::LaidOut);
                        }
                        Ok(text) => format!("its layout came to {} bytes", text.len()),
                        Err(err) => format!("html2text refused it: {err}"),
                    }
                }
            }
            Parsed::TooDeep { parsed_bytes } => {
                format!("an element lands deeper than {MAX_DEPTH} within {parsed_bytes} bytes")
            }
        };
        // Worth an operator's look: real documents are never refused.
        tracing::warn!(reason = %refused, "an HTML document was read without layout");
        (
            format!("{FLATTENED_NOTE}\n{}", flat::flat_text(html)),
            Reading::Flattened,
        )
    }))
    .map_err(|_| HtmlTextError::Panicked)
}

/// The most a DOM parsed from `html_bytes` of HTML may weigh and still be laid out.
fn weight_budget(html_bytes: usize) -> u64 {
    let per_byte = u64::try_from(html_bytes.saturating_add(SLACK_BYTES))
        .unwrap_or(u64::MAX)
        .saturating_mul(LAYOUT_WEIGHT_PER_BYTE);
    per_byte.min(MAX_LAYOUT_WEIGHT)
}

/// The longest layout returned for `html_bytes` of HTML.
fn growth_budget(html_bytes: usize) -> usize {
    html_bytes
        .saturating_mul(MAX_GROWTH)
        .saturating_add(SLACK_BYTES)
}

/// What the bounded parse made of a document.
enum Parsed {
    /// The DOM as `html2text` would build it.
    Dom(html2text::RcDom),
    /// An element landed deeper than [`MAX_DEPTH`]; the parse stopped after `parsed_bytes`.
    TooDeep { parsed_bytes: usize },
}

/// The DOM of `html`, unless an element lands deeper than [`MAX_DEPTH`]: then the rest of the
/// document is never parsed.
fn parse_bounded(html: &str) -> Parsed {
    // As html2text parses: without scripting, `<noscript>` content is markup, not text.
    let opts = ParseOpts {
        tree_builder: TreeBuilderOpts {
            scripting_enabled: false,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut parser = parse_document(DepthGuardedDom::new(MAX_DEPTH), opts);
    let mut parsed_bytes = 0;
    for piece in pieces(html, PIECE_BYTES) {
        parser.process(StrTendril::from_slice(piece));
        parsed_bytes += piece.len();
        if parser.tokenizer.sink.sink.too_deep() {
            return Parsed::TooDeep { parsed_bytes };
        }
    }
    match parser.finish().into_dom() {
        Some(dom) => Parsed::Dom(dom),
        None => Parsed::TooDeep { parsed_bytes },
    }
}

/// `text` cut into consecutive pieces of at most `max` bytes (at least one character each),
/// each ending on a character boundary.
fn pieces(text: &str, max: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = max.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end == 0 {
            // `max` is smaller than the first character: take the whole character.
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

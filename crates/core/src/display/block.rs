//! Agent or third-party text laid out as a block whose every line starts with a prefix the
//! caller owns, so no line of the text can pass for a line of the surrounding layout.

use super::escape_block;

/// A text laid out as prefixed lines, with the size of the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The escaped text, each line (an empty one too) starting with the prefix, joined by `\n`,
    /// without a final `\n`.
    pub lines: String,
    /// Lines of the original text: its `\n`-separated pieces (an empty text is one empty line,
    /// a final `\n` starts one more).
    pub line_count: usize,
    /// Characters (Unicode scalar values) of the original text.
    pub char_count: usize,
    /// Code points shown as `\u{..}` escapes.
    pub escaped: usize,
    /// Of those, the colons of Nostr references ([`super::Shown::references`]).
    pub references: usize,
}

impl Block {
    /// The escaped code points that are invisible or formatting ones (not a reference's colon).
    pub fn invisible(&self) -> usize {
        self.escaped - self.references
    }

    /// The size of the original text in words, e.g. `3 lines, 120 characters`.
    pub fn size(&self) -> String {
        format!(
            "{}, {}",
            counted(self.line_count, "line"),
            counted(self.char_count, "character")
        )
    }
}

/// `text` escaped with [`escape_block`] and cut into lines that each start with `prefix`.
#[must_use]
pub fn block(text: &str, prefix: &str) -> Block {
    let shown = escape_block(text);
    let mut lines = String::with_capacity(shown.text.len() + prefix.len() * 4);
    let mut line_count = 0;
    // Escapes never write `\n`, so the escaped text has exactly the original's line breaks.
    for line in shown.text.split('\n') {
        if line_count > 0 {
            lines.push('\n');
        }
        lines.push_str(prefix);
        lines.push_str(line);
        line_count += 1;
    }
    Block {
        lines,
        line_count,
        char_count: text.chars().count(),
        escaped: shown.escaped,
        references: shown.references,
    }
}

/// `1 line`, `2 lines`: a count and its noun.
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

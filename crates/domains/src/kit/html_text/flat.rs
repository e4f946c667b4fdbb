//! A document's text without layout, from html5ever's tokenizer alone (no tree builder, so
//! linear time whatever the nesting): entities decoded, scripts, styles and other raw-text
//! elements dropped, block boundaries as line breaks, a link's address after its text, an
//! image as its alt text.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::{LocalName, TokenizerResult, local_name};

/// The text of `html`, without layout.
pub(super) fn flat_text(html: &str) -> String {
    let tokenizer = Tokenizer::new(FlatText::default(), TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // The sink never asks to run a script, so the first feed consumes everything; the loop
    // only keeps that true if it ever did.
    while let TokenizerResult::Script(_) = tokenizer.feed(&input) {}
    tokenizer.end();
    tokenizer.sink.text.into_inner().finish()
}

/// Elements whose content the tokenizer reads as raw text, none of it shown to a reader.
const RAW_TEXT: [LocalName; 5] = [
    local_name!("style"),
    local_name!("xmp"),
    local_name!("iframe"),
    local_name!("noembed"),
    local_name!("noframes"),
];

/// What the tokens have said so far.
#[derive(Debug, Default)]
struct FlatText {
    text: RefCell<Text>,
}

#[derive(Debug, Default)]
struct Text {
    out: String,
    /// A raw-text element whose content is not text for a reader (`script`, `style`, ...).
    dropping: Option<LocalName>,
    /// Whitespace seen since the last word: one space is written before the next word.
    space_pending: bool,
    /// The address of the link being read, written after its text.
    link: Option<String>,
}

impl TokenSink for FlatText {
    type Handle = ();

    fn process_token(&self, token: Token, _line_number: u64) -> TokenSinkResult<()> {
        let mut text = self.text.borrow_mut();
        match token {
            Token::TagToken(tag) => return text.tag(tag),
            Token::CharacterTokens(chars) if text.dropping.is_none() => text.words(&chars),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

impl Text {
    fn tag(&mut self, tag: Tag) -> TokenSinkResult<()> {
        let name = tag.name.clone();
        if tag.kind == TagKind::EndTag {
            if self.dropping.as_ref() == Some(&name) {
                self.dropping = None;
            } else if name == local_name!("a") {
                self.end_link();
            } else if is_block(&name) {
                self.line_break();
            }
            return TokenSinkResult::Continue;
        }
        if self.dropping.is_some() {
            return TokenSinkResult::Continue;
        }
        // The tokenizer is told what the tree builder would tell it: these elements' content
        // is raw text, so a `<` inside a script is not read as a tag.
        let raw = if name == local_name!("script") {
            Some(RawKind::ScriptData)
        } else if RAW_TEXT.contains(&name) {
            Some(RawKind::Rawtext)
        } else if name == local_name!("title") || name == local_name!("textarea") {
            Some(RawKind::Rcdata)
        } else {
            None
        };
        if let Some(kind) = raw {
            // (`<script/>` opens raw text too: HTML ignores the slash on such elements.)
            // A textarea's text is the writer's; a title's is metadata, like the others.
            if name != local_name!("textarea") {
                self.dropping = Some(name);
            }
            return TokenSinkResult::RawData(kind);
        }
        if name == local_name!("plaintext") {
            return TokenSinkResult::Plaintext;
        }
        if name == local_name!("a") {
            self.end_link();
            self.link = attribute(&tag, &local_name!("href"));
        } else if name == local_name!("img") {
            if let Some(alt) = attribute(&tag, &local_name!("alt")).filter(|a| !a.trim().is_empty())
            {
                self.words(&format!(" [{}] ", alt.trim()));
            }
        } else if name == local_name!("br") || is_block(&name) {
            self.line_break();
        }
        TokenSinkResult::Continue
    }

    /// Text as a reader sees it: runs of whitespace as one space, none at a line's ends.
    fn words(&mut self, chars: &str) {
        for c in chars.chars() {
            if c.is_whitespace() {
                self.space_pending = true;
                continue;
            }
            if self.space_pending && !self.out.is_empty() && !self.out.ends_with('\n') {
                self.out.push(' ');
            }
            self.space_pending = false;
            self.out.push(c);
        }
    }

    /// A block boundary: at most one blank line between blocks.
    fn line_break(&mut self) {
        self.space_pending = false;
        if !self.out.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }

    fn end_link(&mut self) {
        if let Some(href) = self.link.take().filter(|h| !h.trim().is_empty()) {
            self.words(&format!(" ({})", href.trim()));
        }
    }

    fn finish(mut self) -> String {
        self.end_link();
        self.out.trim_end().to_owned()
    }
}

fn attribute(tag: &Tag, name: &LocalName) -> Option<String> {
    tag.attrs
        .iter()
        .find(|a| a.name.local == *name)
        .map(|a| a.value.to_string())
}

/// Elements a reader sees as their own lines.
const BLOCKS: [LocalName; 28] = [
    local_name!("p"),
    local_name!("div"),
    local_name!("li"),
    local_name!("ul"),
    local_name!("ol"),
    local_name!("dl"),
    local_name!("dt"),
    local_name!("dd"),
    local_name!("tr"),
    local_name!("table"),
    local_name!("blockquote"),
    local_name!("pre"),
    local_name!("hr"),
    local_name!("h1"),
    local_name!("h2"),
    local_name!("h3"),
    local_name!("h4"),
    local_name!("h5"),
    local_name!("h6"),
    local_name!("section"),
    local_name!("article"),
    local_name!("aside"),
    local_name!("header"),
    local_name!("footer"),
    local_name!("details"),
    local_name!("summary"),
    local_name!("figure"),
    local_name!("figcaption"),
];

fn is_block(name: &LocalName) -> bool {
    BLOCKS.contains(name)
}

//! Discourse's "cooked" post HTML as readable plain text, made by the maintained `html2text`
//! crate through [`crate::kit::html_text`] (which bounds what a post can cost): links as their
//! text with the URL in a numbered footnote, quotes marked `> `, code kept (inline in
//! backticks), images as their alt text, tables without borders, scripts and styles dropped.
//! The text is still a stranger's: callers fence it before it reaches the model. Raw HTML
//! never leaves.

use crate::kit::{cut, html_text};

/// Cooked HTML larger than this is not rendered (Discourse's own post limit is far smaller).
pub const MAX_COOKED_BYTES: usize = 256 * 1024;
/// A post's text is cut after this many characters, as a mail body is: a page of 20 posts a
/// forum member padded to the cooked cap would otherwise hand the model megabytes.
pub const MAX_TEXT_CHARS: usize = 20_000;
/// Lines are not wrapped below this width: the model reads paragraphs as written.
const WIDTH: usize = 10_000;
/// What stands in for a post whose HTML could not be rendered.
pub const UNRENDERABLE: &str = "[this post could not be rendered as text]";

/// The readable text of `cooked`. Never fails: an oversized or unrenderable post becomes
/// [`UNRENDERABLE`] (a renderer panic is contained, so one odd post cannot cost a topic); a
/// post too deep or too large to lay out is its text without layout ([`html_text`]).
pub fn plain_text(cooked: &str) -> String {
    if cooked.len() > MAX_COOKED_BYTES {
        return UNRENDERABLE.to_owned();
    }
    match html_text::to_text(cooked, WIDTH) {
        Ok((text, _)) => text.trim_end().to_owned(),
        Err(err) => {
            tracing::warn!(error = %err, "a post's HTML was not rendered");
            UNRENDERABLE.to_owned()
        }
    }
}

/// What the model reads of a post: [`plain_text`] cut at [`MAX_TEXT_CHARS`], and whether it was.
pub fn post_text(cooked: &str) -> (String, bool) {
    cut::to_chars(&plain_text(cooked), MAX_TEXT_CHARS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn links_quotes_code_and_images_read_as_text() {
        let text = plain_text(concat!(
            r#"<p>See <a href="https://example.com/help?a=1">the help page</a>.</p>"#,
            r#"<aside class="quote" data-username="bob"><div class="title">bob:</div><blockquote><p>it crashes</p></blockquote></aside>"#,
            r#"<pre><code class="lang-sh">care --sync
  --force</code></pre>"#,
            r#"<p>Run <code>a &lt; b</code>.</p><p><img src="https://example.com/s.png" alt="screenshot of the error"></p>"#,
        ));
        assert!(text.contains("[the help page][1]"), "{text}");
        assert!(text.contains("[1]: https://example.com/help?a=1"), "{text}");
        assert!(text.contains("> it crashes"), "{text}");
        assert!(text.contains("care --sync\n  --force"), "{text}");
        assert!(text.contains("`a < b`"), "{text}");
        assert!(text.contains("[screenshot of the error]"), "{text}");
        assert!(!text.contains("<a") && !text.contains("<p>"), "{text}");
    }

    #[test]
    fn scripts_and_styles_are_dropped() {
        let text = plain_text(
            "<p>before</p><script>alert('pwned')</script><style>p{color:red}</style><p>after</p>",
        );
        assert!(text.contains("before") && text.contains("after"), "{text}");
        assert!(!text.contains("alert") && !text.contains("color"), "{text}");
    }

    #[test]
    fn a_post_nested_deeper_than_the_bound_reads_as_flat_text() {
        // Just under the size cap: unbounded, this nesting took html5ever seconds to parse.
        let levels = (MAX_COOKED_BYTES - 100) / "<ul><li>".len();
        let cooked = format!("{}<p>buy now</p>", "<ul><li>".repeat(levels));
        let text = plain_text(&cooked);
        assert!(
            text.starts_with(html_text::FLATTENED_NOTE),
            "{}",
            &text[..200]
        );
        assert!(text.ends_with("buy now"), "{}", &text[text.len() - 200..]);
    }

    #[test]
    fn a_long_post_is_cut_and_says_so() {
        let words = "lorem ipsum ".repeat(MAX_TEXT_CHARS);
        let (text, truncated) = post_text(&format!("<p>{words}</p>"));
        assert!(truncated);
        assert_eq!(text.chars().count(), MAX_TEXT_CHARS);
        // The text's words (lines wrap at WIDTH) are the post's, in order; the last may be cut.
        let read: Vec<&str> = text.split_whitespace().collect();
        let (last, whole) = read.split_last().unwrap();
        assert!(
            whole
                .iter()
                .zip(words.split_whitespace())
                .all(|(a, b)| a == &b)
        );
        assert!(
            words
                .split_whitespace()
                .nth(whole.len())
                .unwrap()
                .starts_with(last)
        );
        assert_eq!(post_text("<p>short</p>"), ("short".to_owned(), false));
    }

    #[test]
    fn oversized_posts_are_not_rendered() {
        let huge = format!("<p>{}</p>", "a".repeat(MAX_COOKED_BYTES));
        assert_eq!(plain_text(&huge), UNRENDERABLE);
        assert_eq!(plain_text(""), "");
    }
}

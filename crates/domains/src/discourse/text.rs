//! Discourse's "cooked" post HTML as readable plain text, made by the maintained `html2text`
//! crate: links as their text with the URL in a numbered footnote, quotes marked `> `, code
//! kept (inline in backticks), images as their alt text, scripts and styles dropped. The text
//! is still a stranger's: callers fence it before it reaches the model. Raw HTML never leaves.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// Cooked HTML larger than this is not rendered (Discourse's own post limit is far smaller).
pub const MAX_COOKED_BYTES: usize = 256 * 1024;
/// Lines are not wrapped below this width: the model reads paragraphs as written.
const WIDTH: usize = 10_000;
/// What stands in for a post whose HTML could not be rendered.
pub const UNRENDERABLE: &str = "[this post could not be rendered as text]";

/// The readable text of `cooked`. Never fails: an oversized or unrenderable post becomes
/// [`UNRENDERABLE`] (a renderer panic is contained, so one odd post cannot cost a topic).
pub fn plain_text(cooked: &str) -> String {
    if cooked.len() > MAX_COOKED_BYTES {
        return UNRENDERABLE.to_owned();
    }
    let rendered = catch_unwind(AssertUnwindSafe(|| {
        html2text::config::plain().string_from_read(cooked.as_bytes(), WIDTH)
    }));
    match rendered {
        Ok(Ok(text)) => text.trim_end().to_owned(),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "a post's HTML was not rendered");
            UNRENDERABLE.to_owned()
        }
        Err(_) => {
            tracing::warn!("the HTML renderer panicked on a post");
            UNRENDERABLE.to_owned()
        }
    }
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
    fn oversized_posts_are_not_rendered() {
        let huge = format!("<p>{}</p>", "a".repeat(MAX_COOKED_BYTES));
        assert_eq!(plain_text(&huge), UNRENDERABLE);
        assert_eq!(plain_text(""), "");
    }
}

//! HTML mail bodies as plain text, read as the forum reads posts ([`crate::kit::html_text`]:
//! bounded in time and memory, a renderer panic contained), so both domains read HTML alike.
//! Markup never reaches the model; links keep their address as text.

use crate::kit::html_text;

/// Lines are wrapped at this width: wide enough that prose is not broken mid-sentence often.
const WIDTH: usize = 100;

/// The text of an HTML document; an unreadable document gives an empty text.
pub fn to_text(html: &str) -> String {
    match html_text::to_text(html, WIDTH) {
        Ok((text, _)) => text,
        Err(err) => {
            tracing::warn!(error = %err, "an HTML mail body was not rendered");
            String::new()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_scripts_are_gone() {
        let text = to_text(
            "<p>Hello <b>there</b></p><script>alert(1)</script><style>p{}</style><p>bye</p>",
        );
        assert!(text.contains("Hello") && text.contains("there") && text.contains("bye"));
        assert!(!text.contains('<') && !text.contains("alert"), "{text}");
    }

    #[test]
    fn a_hostile_nesting_reads_as_flat_text() {
        let html = format!("{}signed, mallory", "<blockquote>".repeat(30_000));
        let text = to_text(&html);
        assert!(text.starts_with(html_text::FLATTENED_NOTE), "{text}");
        assert!(text.ends_with("signed, mallory"), "{text}");
    }
}

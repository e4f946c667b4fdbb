//! HTML mail bodies as plain text, with the crate the forum domain uses (`html2text`), so both
//! domains read HTML alike. Markup never reaches the model; links keep their address as text.

/// Lines are wrapped at this width: wide enough that prose is not broken mid-sentence often.
const WIDTH: usize = 100;

/// The text of an HTML document; an unreadable document gives an empty text.
pub fn to_text(html: &str) -> String {
    html2text::from_read(html.as_bytes(), WIDTH).unwrap_or_default()
}

#[cfg(test)]
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
}

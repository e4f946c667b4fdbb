//! The shapes of what goes into a header or an IMAP command: plain addresses, domains, message
//! ids, mailbox names, and the refusal of every character that could end a header line or a
//! command (CR, LF, NUL, other controls, NEL and the Unicode line separators).

/// True when `value` holds a character that could break a header or a command line.
pub fn breaks_header(value: &str) -> bool {
    value
        .chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}' | '\u{feff}'))
}

/// A domain: dot-separated labels of letters, digits and hyphens, at least two labels.
pub fn is_domain(value: &str) -> bool {
    let labels: Vec<&str> = value.split('.').collect();
    value.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// A plain address `local@domain` (no display name, no second address, no spaces): the local
/// part of printable ASCII without the characters that separate or quote addresses.
pub fn is_address(value: &str) -> bool {
    let Some((local, domain)) = value.rsplit_once('@') else {
        return false;
    };
    value.len() <= 254
        && !local.is_empty()
        && local.len() <= 64
        && local
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"<>()[]\\,;:@\"".contains(&b))
        && is_domain(domain)
}

/// The domain of a plain address.
pub fn domain_of(address: &str) -> Option<&str> {
    address.rsplit_once('@').map(|(_, d)| d)
}

/// A message id without its angle brackets: `left@right`, printable ASCII, no spaces or
/// brackets, at most 250 characters. Accepts the bracketed form as input.
pub fn message_id(value: &str) -> Option<String> {
    let inner = value.trim();
    let inner = inner
        .strip_prefix('<')
        .and_then(|v| v.strip_suffix('>'))
        .unwrap_or(inner);
    let ok = !inner.is_empty()
        && inner.len() <= 250
        && inner.contains('@')
        && inner
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"<>\"\\".contains(&b));
    ok.then(|| inner.to_owned())
}

/// A mailbox name we pass to the server: 1..=100 printable ASCII characters, no wildcards or
/// quoting characters.
pub fn is_mailbox_name(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 100
        && value
            .bytes()
            .all(|b| (b.is_ascii_graphic() || b == b' ') && !b"*%\"\\{}".contains(&b))
}

/// An IMAP string argument: a quoted string for plain ASCII, else a non-synchronising literal
/// (LITERAL+, RFC 7888) that the server reads as bytes. Callers have refused CR/LF already.
pub fn imap_string(value: &str) -> String {
    if value.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
        format!("\"{escaped}\"")
    } else {
        format!("{{{}+}}\r\n{value}", value.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_breakers_are_found() {
        for bad in [
            "a\r\nBcc: x@y.z",
            "a\nb",
            "a\rb",
            "a\0b",
            "a\u{85}b",
            "a\u{2028}b",
            "\u{1b}[2J",
        ] {
            assert!(breaks_header(bad), "{bad:?}");
        }
        assert!(!breaks_header("Re: 주문 문의 🙂"));
    }

    #[test]
    fn addresses_and_domains() {
        assert!(is_address("kim@example.com"));
        assert!(is_address("first.last+tag@sub.example.co.kr"));
        for bad in [
            "Kim <kim@example.com>",
            "a@b.c, d@e.f",
            "a b@example.com",
            "a@localhost",
            "@example.com",
            "a@-x.com",
            "a\r\n@example.com",
        ] {
            assert!(!is_address(bad), "{bad}");
        }
        assert_eq!(domain_of("a@b.example"), Some("b.example"));
    }

    #[test]
    fn message_ids_lose_their_brackets_and_must_be_plain() {
        assert_eq!(message_id("<abc@x.test>").as_deref(), Some("abc@x.test"));
        assert_eq!(message_id("abc@x.test").as_deref(), Some("abc@x.test"));
        assert_eq!(message_id("</user_content>"), None);
        assert_eq!(message_id("<a b@x>"), None);
        assert_eq!(message_id("<a@x>\r\nBcc: y"), None);
    }

    #[test]
    fn imap_strings_are_quoted_or_literal() {
        assert_eq!(imap_string("a \"b\" \\c"), "\"a \\\"b\\\" \\\\c\"");
        assert_eq!(imap_string("주문"), "{6+}\r\n주문");
    }
}

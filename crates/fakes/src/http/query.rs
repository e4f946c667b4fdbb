//! Query strings as upstream APIs use them: `application/x-www-form-urlencoded` pairs read
//! percent-decoded, and values written back percent-encoded (paging links).

use std::collections::HashMap;

/// The pairs of a query string, percent-decoded (`+` is a space), in order.
pub fn pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// The pairs of an optional query string as a map (a repeated key keeps its last value).
pub fn map(query: Option<&str>) -> HashMap<String, String> {
    query.map(pairs).unwrap_or_default().into_iter().collect()
}

/// Percent-decodes `text`; a `%` not followed by two hex digits stays as it is.
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_encodes_round_trip() {
        assert_eq!(
            pairs("filter%5Brating%5D=1%2C2&q=a+b&flag&=x"),
            vec![
                ("filter[rating]".to_owned(), "1,2".to_owned()),
                ("q".to_owned(), "a b".to_owned()),
                ("flag".to_owned(), String::new()),
                (String::new(), "x".to_owned()),
            ]
        );
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
        let text = "filter[territory]=KOR,USA ü";
        assert_eq!(decode(&encode(text)), text);
        assert_eq!(map(Some("a=1&a=2"))["a"], "2");
        assert!(map(None).is_empty());
    }
}

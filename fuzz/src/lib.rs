//! Helpers the fuzz targets share: the inverse of the `\u{..}` escapes and of the fence's
//! entities, so a target can check that an encoding loses nothing (and so is one-to-one); and
//! [`demo`], the world of the targets that drive real gates.

pub mod demo;

/// Undoes `\u{HEX}` escapes (the notation of `care_core::fence` and `care_core::display`).
/// `None` if an escape is malformed: the encoders never write one.
pub fn unescape_code_points(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\\u{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 3..];
        let close = after.find('}')?;
        let hex = &after[..close];
        if hex.is_empty() || hex.len() > 6 || (hex.len() > 1 && hex.starts_with('0')) {
            return None;
        }
        if hex.chars().any(|c| c.is_ascii_uppercase()) {
            return None;
        }
        out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// Undoes the fence's escaping: the three entities, then the code-point escapes (the fence
/// writes entities only for `&`, `<`, `>`, so the order cannot confuse the two).
pub fn unfence_inner(inner: &str) -> Option<String> {
    let mut out = String::with_capacity(inner.len());
    let mut rest = inner;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let (ch, len) = if tail.starts_with("&amp;") {
            ('&', 5)
        } else if tail.starts_with("&lt;") {
            ('<', 4)
        } else if tail.starts_with("&gt;") {
            ('>', 4)
        } else {
            return None;
        };
        out.push(ch);
        rest = &tail[len..];
    }
    out.push_str(rest);
    unescape_code_points(&out)
}

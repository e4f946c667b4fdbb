//! Just enough MIME for a fake IMAP server: a message split into its header and body, the
//! parts of a multipart body (by boundary, nested to a fixed depth), each part's type,
//! parameters, transfer encoding and disposition, and the byte ranges IMAP sections name. It
//! reads what a real server must tolerate (missing boundaries, bare LF, junk parameters)
//! without failing: a part it cannot split is one opaque leaf.

use std::ops::Range;

/// Deepest multipart nesting split.
const MAX_DEPTH: usize = 8;
/// Most parts per multipart.
const MAX_CHILDREN: usize = 100;

/// One MIME entity: its header, its body, and its parts when multipart.
#[derive(Debug, Clone, Default)]
pub struct Entity {
    /// The header block, including the blank line that ends it.
    pub header: Range<usize>,
    pub body: Range<usize>,
    /// `(name, unfolded value)` in order.
    pub fields: Vec<(String, String)>,
    /// Lower-case type and subtype (`text`, `plain` when absent).
    pub ty: String,
    pub subtype: String,
    pub params: Vec<(String, String)>,
    pub encoding: String,
    pub disposition: Option<(String, Vec<(String, String)>)>,
    pub children: Vec<Entity>,
}

impl Entity {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn is_multipart(&self) -> bool {
        self.ty == "multipart"
    }

    /// The part at an IMAP section path (`[1]` of a single-part message is its body).
    pub fn part(&self, path: &[u32]) -> Option<&Entity> {
        let Some((first, rest)) = path.split_first() else {
            return Some(self);
        };
        let index = usize::try_from(*first).ok()?.checked_sub(1)?;
        if self.is_multipart() {
            self.children.get(index)?.part(rest)
        } else if index == 0 && rest.is_empty() {
            Some(self)
        } else {
            None
        }
    }
}

/// Where the header ends: after the first empty line (CRLF or bare LF), else the whole text.
fn split_header(raw: &[u8], range: Range<usize>) -> (Range<usize>, Range<usize>) {
    let bytes = &raw[range.clone()];
    let mut i = 0;
    while i < bytes.len() {
        let line_end = bytes[i..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |p| i + p + 1);
        let line = &bytes[i..line_end];
        if line == b"\r\n" || line == b"\n" {
            let end = range.start + line_end;
            return (range.start..end, end..range.end);
        }
        i = line_end;
    }
    (range.clone(), range.end..range.end)
}

fn unfold(header: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(header);
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.split('\n') {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = fields.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
        } else if let Some((name, value)) = line.split_once(':') {
            fields.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    fields
}

/// `value; k=v; k="v"` into the value and its parameters (names lower-cased).
pub fn params(value: &str) -> (String, Vec<(String, String)>) {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in value.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ';' if !quoted => pieces.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    pieces.push(current);
    let head = pieces
        .first()
        .map(|p| p.trim().to_owned())
        .unwrap_or_default();
    let params = pieces
        .iter()
        .skip(1)
        .filter_map(|p| {
            let (k, v) = p.split_once('=')?;
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            Some((k.trim().to_ascii_lowercase(), v.to_owned()))
        })
        .filter(|(k, _)| !k.is_empty())
        .collect();
    (head, params)
}

/// Parses `raw` (a whole message).
pub fn parse(raw: &[u8]) -> Entity {
    entity(raw, 0..raw.len(), 0, None)
}

fn entity(raw: &[u8], range: Range<usize>, depth: usize, default: Option<(&str, &str)>) -> Entity {
    let (header, body) = split_header(raw, range);
    let fields = unfold(&raw[header.clone()]);
    let mut e = Entity {
        header,
        body,
        fields,
        ..Entity::default()
    };
    let (ty, params_) = match e.field("Content-Type") {
        Some(v) => params(v),
        None => (
            default.map_or("text/plain".to_owned(), |(t, s)| format!("{t}/{s}")),
            Vec::new(),
        ),
    };
    let (t, s) = ty.split_once('/').unwrap_or(("text", "plain"));
    e.ty = t.trim().to_ascii_lowercase();
    e.subtype = s.trim().to_ascii_lowercase();
    if e.ty.is_empty() || e.subtype.is_empty() {
        e.ty = "text".into();
        e.subtype = "plain".into();
    }
    e.params = params_;
    e.encoding = e
        .field("Content-Transfer-Encoding")
        .map_or("7bit".to_owned(), |v| v.trim().to_ascii_lowercase());
    e.disposition = e.field("Content-Disposition").map(|v| {
        let (d, p) = params(v);
        (d.to_ascii_lowercase(), p)
    });
    let boundary = e
        .params
        .iter()
        .find(|(k, _)| k == "boundary")
        .map(|(_, v)| v.clone());
    match boundary {
        Some(b) if e.ty == "multipart" && depth < MAX_DEPTH && !b.is_empty() => {
            let child_default = if e.subtype == "digest" {
                ("message", "rfc822")
            } else {
                ("text", "plain")
            };
            e.children = split_parts(raw, e.body.clone(), &b)
                .into_iter()
                .take(MAX_CHILDREN)
                .map(|r| entity(raw, r, depth + 1, Some(child_default)))
                .collect();
            if e.children.is_empty() {
                // A multipart without parts is shown as what it is: an opaque body.
                e.ty = "application".into();
                e.subtype = "octet-stream".into();
            }
        }
        _ if e.ty == "multipart" => {
            e.ty = "application".into();
            e.subtype = "octet-stream".into();
        }
        _ => {}
    }
    e
}

/// The byte ranges between `--boundary` lines (the CRLF before a delimiter belongs to it).
fn split_parts(raw: &[u8], body: Range<usize>, boundary: &str) -> Vec<Range<usize>> {
    let delimiter = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut start: Option<usize> = None;
    let mut i = body.start;
    while i < body.end {
        let line_end = raw[i..body.end]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(body.end, |p| i + p + 1);
        let line = &raw[i..line_end];
        let trimmed = line.strip_suffix(b"\n").unwrap_or(line);
        let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
        if trimmed.starts_with(delimiter.as_bytes()) {
            let rest = &trimmed[delimiter.len()..];
            let closing = rest.starts_with(b"--");
            if rest.iter().all(u8::is_ascii_whitespace) || closing {
                if let Some(s) = start {
                    // The line break before the delimiter is part of the delimiter.
                    let mut end = i;
                    if end > s && raw[end - 1] == b'\n' {
                        end -= 1;
                        if end > s && raw[end - 1] == b'\r' {
                            end -= 1;
                        }
                    }
                    parts.push(s..end);
                }
                if closing {
                    return parts;
                }
                start = Some(line_end);
            }
        }
        i = line_end;
    }
    if let Some(s) = start {
        parts.push(s..body.end);
    }
    parts
}

/// Lines in a body, as IMAP counts them for text parts.
pub fn lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count()
}

/// Decodes RFC 2047 encoded words (`=?charset?B|Q?...?=`, UTF-8 and ASCII-compatible
/// charsets) in a header value, for SEARCH; other text is kept.
pub fn decode_words(value: &str) -> String {
    use base64::Engine as _;
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("=?") {
        let candidate = &rest[start + 2..];
        let parsed = (|| {
            let (_charset, after) = candidate.split_once('?')?;
            let (kind, after) = after.split_once('?')?;
            let (text, after) = after.split_once("?=")?;
            let bytes = match kind {
                "B" | "b" => base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .ok()?,
                "Q" | "q" => q_decode(text),
                _ => return None,
            };
            Some((String::from_utf8_lossy(&bytes).into_owned(), after))
        })();
        match parsed {
            Some((decoded, after)) => {
                let between = &rest[..start];
                // Whitespace between two encoded words is not part of the text.
                if !between.trim().is_empty() || out.is_empty() {
                    out.push_str(between);
                }
                out.push_str(&decoded);
                rest = after;
            }
            None => {
                out.push_str(&rest[..start + 2]);
                rest = &rest[start + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn q_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'_' => out.push(b' '),
            b'=' => {
                match bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'='),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn multiparts_are_split_and_sections_found() {
        let raw = b"Subject: x\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\npreamble\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nhello\r\n--b1\r\nContent-Type: application/pdf; name=\"a.pdf\"\r\nContent-Disposition: attachment; filename=\"a.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nAAAA\r\n--b1--\r\n";
        let e = parse(raw);
        assert!(e.is_multipart());
        assert_eq!(e.children.len(), 2);
        let text = e.part(&[1]).unwrap();
        assert_eq!(&raw[text.body.clone()], b"hello");
        let pdf = e.part(&[2]).unwrap();
        assert_eq!(
            (pdf.ty.as_str(), pdf.subtype.as_str()),
            ("application", "pdf")
        );
        assert_eq!(pdf.encoding, "base64");
        assert_eq!(pdf.disposition.as_ref().unwrap().0, "attachment");
        assert!(e.part(&[3]).is_none());
        let single = parse(b"Subject: y\r\n\r\nbody");
        assert_eq!(
            &b"Subject: y\r\n\r\nbody"[single.part(&[1]).unwrap().body.clone()],
            b"body"
        );
    }

    #[test]
    fn malformed_mime_is_an_opaque_leaf() {
        let e = parse(b"Content-Type: multipart/mixed\r\n\r\nno boundary");
        assert_eq!(e.ty, "application");
        let e =
            parse(b"Content-Type: multipart/mixed; boundary=zz\r\n\r\n--zz\r\n\r\nunterminated");
        assert_eq!(e.children.len(), 1);
        let e = parse(b"no header at all");
        assert_eq!((e.ty.as_str(), e.subtype.as_str()), ("text", "plain"));
    }

    #[test]
    fn encoded_words_decode() {
        assert_eq!(
            decode_words("=?UTF-8?B?7KO866y4?= =?UTF-8?Q?_=EB=AC=B8=EC=9D=98?="),
            "주문 문의"
        );
        assert_eq!(decode_words("plain =?x"), "plain =?x");
    }
}

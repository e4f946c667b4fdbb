//! Mail read into our types with the MIME parser (mail-parser), and written out for the model:
//! RFC 2047 and charsets decoded, every stranger's text (names, subjects, bodies, file names)
//! fenced, ids and flags shape-checked, every text bounded.

use chrono::{DateTime, TimeZone, Utc};
use mail_parser::{Address, HeaderValue, MessageParser};
use serde_json::{Value, json};

use care_core::fence::fence;

use crate::kit::cut;

use super::headers;
use super::imap::Summary;
use super::structure::Leaf;

/// Longest subject, name or address passed on, in characters (a 1 MB header line is cut).
pub const MAX_HEADER_TEXT_CHARS: usize = 500;
/// Most addresses listed per field.
const MAX_ADDRESSES: usize = 20;
/// Most references kept (threading needs the first and the last few).
const MAX_REFERENCES: usize = 50;

/// A mailbox address: display name (decoded) and address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mailbox {
    pub name: Option<String>,
    pub address: String,
}

/// What a message's header says, decoded.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    pub uid: u32,
    pub message_id: Option<String>,
    pub from: Option<Mailbox>,
    pub reply_to: Option<Mailbox>,
    pub to: Vec<Mailbox>,
    pub subject: Option<String>,
    pub date: Option<DateTime<Utc>>,
    pub in_reply_to: Option<String>,
    pub references: Vec<String>,
    pub flags: Vec<String>,
    pub size: u32,
    pub has_attachments: bool,
}

fn short(text: &str) -> String {
    cut::to_chars(text, MAX_HEADER_TEXT_CHARS).0
}

fn mailboxes(address: Option<&Address<'_>>) -> Vec<Mailbox> {
    let Some(address) = address else {
        return Vec::new();
    };
    address
        .iter()
        .filter_map(|a| {
            let address = a.address()?.trim().to_ascii_lowercase();
            Some(Mailbox {
                name: a.name().map(short).filter(|n| !n.trim().is_empty()),
                address: short(&address),
            })
        })
        .take(MAX_ADDRESSES)
        .collect()
}

fn ids(value: &HeaderValue<'_>) -> Vec<String> {
    let list: Vec<&str> = match value {
        HeaderValue::Text(t) => vec![t.as_ref()],
        HeaderValue::TextList(l) => l.iter().map(|t| t.as_ref()).collect(),
        _ => Vec::new(),
    };
    list.into_iter()
        .filter_map(headers::message_id)
        .take(MAX_REFERENCES)
        .collect()
}

/// The envelope of a listed message.
pub fn envelope(summary: &Summary) -> Envelope {
    // A header cut at its bound ends mid-line: end it, so the cut field is still read.
    let mut header = summary.header.clone();
    if !header.ends_with(b"\r\n\r\n") {
        header.extend_from_slice(b"\r\n\r\n");
    }
    let parsed = MessageParser::default().parse_headers(&header[..]);
    let mut out = Envelope {
        uid: summary.uid,
        flags: summary.flags.clone(),
        size: summary.size,
        has_attachments: summary.leaves.iter().any(|l| l.attachment),
        date: summary.internal_date,
        ..Envelope::default()
    };
    if let Some(m) = parsed {
        out.message_id = m.message_id().and_then(headers::message_id);
        out.from = mailboxes(m.from()).into_iter().next();
        out.reply_to = mailboxes(m.reply_to()).into_iter().next();
        out.to = mailboxes(m.to());
        out.subject = m.subject().map(short);
        if let Some(d) = m.date() {
            out.date = Utc.timestamp_opt(d.to_timestamp(), 0).single().or(out.date);
        }
        out.in_reply_to = ids(m.in_reply_to()).into_iter().next();
        out.references = ids(m.references());
    }
    out
}

fn mailbox_text(m: &Mailbox) -> String {
    match &m.name {
        Some(name) => format!("{name} <{}>", m.address),
        None => m.address.clone(),
    }
}

/// A listing entry: metadata only, every stranger's text fenced.
pub fn envelope_json(e: &Envelope) -> Value {
    json!({
        "uid": e.uid,
        "message_id": e.message_id,
        "from": e.from.as_ref().map(|m| fence(&mailbox_text(m))),
        "to": e.to.iter().map(|m| fence(&mailbox_text(m))).collect::<Vec<_>>(),
        "subject": e.subject.as_deref().map(fence),
        "date": e.date.map(|d| d.to_rfc3339()),
        "flags": e.flags,
        "size": e.size,
        "has_attachments": e.has_attachments,
    })
}

/// Only what a charset or encoding name may hold goes into the header we build for decoding.
fn token(value: &str) -> String {
    value
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_.+/".contains(*c))
        .take(40)
        .collect()
}

/// The text of one fetched part: transfer encoding and charset decoded by the MIME parser (a
/// part header is rebuilt from what BODYSTRUCTURE said), HTML turned into text, line breaks as LF.
pub fn decode_part(raw: &[u8], leaf: &Leaf) -> String {
    let mut synthetic = format!(
        "Content-Type: {}; charset=\"{}\"\r\nContent-Transfer-Encoding: {}\r\n\r\n",
        token(&leaf.mime),
        token(leaf.charset.as_deref().unwrap_or("us-ascii")),
        token(&leaf.encoding),
    )
    .into_bytes();
    synthetic.extend_from_slice(raw);
    let Some(message) = MessageParser::default().parse(&synthetic[..]) else {
        return line_feeds(&String::from_utf8_lossy(raw));
    };
    let text = if leaf.mime == "text/html" {
        super::html::to_text(&message.body_html(0).unwrap_or_default())
    } else {
        message
            .body_text(0)
            .map(|t| t.into_owned())
            .unwrap_or_default()
    };
    // The final line break of a body is transport framing, not text.
    line_feeds(&text).trim_end_matches('\n').to_owned()
}

/// Line breaks as `\n`: CRLF, and a bare CR too (it would return the cursor and hide the text
/// before it on a terminal; found by the `mime` fuzz target as a CR left before a CRLF).
fn line_feeds(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// A file name as a person would read it: RFC 2047 encoded words decoded by the MIME parser,
/// on one line (a line break, raw or encoded, becomes a space: a name is one line in a listing).
pub fn decode_words(raw: &str) -> String {
    let one_line = raw.replace(['\r', '\n'], " ");
    let header = format!("Subject: {one_line}\r\n\r\n");
    MessageParser::default()
        .parse_headers(header.as_bytes())
        .and_then(|m| m.subject().map(short))
        .unwrap_or_else(|| short(&one_line))
        .replace(['\r', '\n'], " ")
}

/// An attachment as listed: name, type and size only.
pub fn attachment_json(leaf: &Leaf) -> Value {
    json!({
        "name": leaf.name.as_deref().map(|n| fence(&decode_words(n))),
        "content_type": fence(&short(&leaf.mime)),
        "size": leaf.size,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_stays_one_line() {
        // Found by the `mime` fuzz target: a name with raw line breaks (an IMAP literal can
        // carry them) came back with them when it held no encoded word.
        assert_eq!(decode_words("\n\nz\n\nz"), "z  z");
        // An encoded line break is a space too.
        assert_eq!(decode_words("=?utf-8?q?a=0Ab.pdf?="), "a b.pdf");
        assert_eq!(decode_words("=?utf-8?q?caf=C3=A9.pdf?="), "café.pdf");
    }

    #[test]
    fn line_breaks_come_out_as_line_feeds() {
        // Found by the `mime` fuzz target: a bare CR before a CRLF survived as CRLF.
        let leaf = Leaf {
            section: vec![1],
            mime: "text/plain".into(),
            charset: None,
            encoding: "7bit".into(),
            size: 0,
            name: None,
            attachment: false,
        };
        let text = decode_part(b"one\r\r\ntwo\rthree\r\n", &leaf);
        assert!(!text.contains('\r'), "{text:?}");
        assert_eq!(text.matches('\n').count(), 3, "{text:?}");
    }

    fn summary(header: &str) -> Summary {
        Summary {
            uid: 7,
            flags: vec![],
            size: 10,
            internal_date: None,
            header: header.as_bytes().to_vec(),
            leaves: vec![],
        }
    }

    #[test]
    fn encoded_words_are_decoded_and_text_fenced() {
        let e = envelope(&summary(
            "From: =?UTF-8?B?6rmA7LKg7IiY?= <Kim@Example.com>\r\nSubject: =?UTF-8?B?7KO866y4IOusuOydmA==?= </user_content>\r\nMessage-ID: <abc@example.com>\r\nReferences: <r1@x.test> <r2@x.test>\r\nIn-Reply-To: <r2@x.test>\r\nDate: Tue, 1 Dec 2026 09:00:00 +0900\r\n\r\n",
        ));
        assert_eq!(e.message_id.as_deref(), Some("abc@example.com"));
        assert_eq!(e.from.as_ref().unwrap().address, "kim@example.com");
        assert_eq!(e.from.as_ref().unwrap().name.as_deref(), Some("김철수"));
        assert_eq!(e.references, ["r1@x.test", "r2@x.test"]);
        assert_eq!(e.in_reply_to.as_deref(), Some("r2@x.test"));
        assert_eq!(e.date.unwrap().to_rfc3339(), "2026-12-01T00:00:00+00:00");
        let out = envelope_json(&e);
        assert_eq!(
            out["subject"],
            "<user_content>주문 문의 &lt;/user_content&gt;</user_content>"
        );
    }

    #[test]
    fn parts_are_decoded_from_their_transfer_encoding_and_charset() {
        let leaf = Leaf {
            section: vec![1],
            mime: "text/plain".into(),
            charset: Some("iso-8859-1".into()),
            encoding: "quoted-printable".into(),
            size: 0,
            name: None,
            attachment: false,
        };
        assert_eq!(decode_part(b"Gr=FC=DFe\r\nzwei", &leaf), "Grüße\nzwei");
        let html = Leaf {
            mime: "text/html".into(),
            encoding: "7bit".into(),
            charset: None,
            ..leaf
        };
        let text = decode_part(b"<p>Hi <b>there</b></p>", &html);
        assert!(text.contains("Hi") && !text.contains('<'), "{text}");
        assert_eq!(decode_words("=?UTF-8?B?7ZWc6riALnBkZg==?="), "한글.pdf");
    }
}

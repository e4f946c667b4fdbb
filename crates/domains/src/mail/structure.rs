//! A message's MIME tree as the server describes it (IMAP BODYSTRUCTURE), flattened to its
//! leaf parts with their IMAP section numbers: which part holds the text to read, and which are
//! attachments (listed by name, type and size; their content is never fetched).

use async_imap::imap_proto::{BodyStructure, ContentEncoding};

/// Deepest nesting followed; a hostile message cannot make the walk unbounded.
const MAX_DEPTH: usize = 16;
/// Most leaves kept per message.
const MAX_LEAVES: usize = 200;

/// One leaf part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    /// IMAP section number (`[1]` for a single-part message, `[2, 1]` for 2.1).
    pub section: Vec<u32>,
    /// Lower-case `type/subtype`.
    pub mime: String,
    pub charset: Option<String>,
    /// Lower-case transfer encoding (`7bit`, `base64`, `quoted-printable`...).
    pub encoding: String,
    /// Encoded size in bytes, as the server counts it.
    pub size: u32,
    /// The file name (`filename` of the disposition, else `name` of the type), raw.
    pub name: Option<String>,
    pub attachment: bool,
}

impl Leaf {
    /// A body meant to be read: text/plain or text/html that is not an attachment.
    pub fn is_text_body(&self, subtype: &str) -> bool {
        !self.attachment && self.mime == format!("text/{subtype}")
    }
}

fn param<'a>(
    params: &'a Option<Vec<(std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)>>,
    key: &str,
) -> Option<&'a str> {
    params
        .as_ref()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_ref())
}

fn encoding(e: &ContentEncoding<'_>) -> String {
    match e {
        ContentEncoding::SevenBit => "7bit".into(),
        ContentEncoding::EightBit => "8bit".into(),
        ContentEncoding::Binary => "binary".into(),
        ContentEncoding::Base64 => "base64".into(),
        ContentEncoding::QuotedPrintable => "quoted-printable".into(),
        ContentEncoding::Other(o) => o.to_ascii_lowercase(),
    }
}

/// The leaves of `body`, in order.
pub fn leaves(body: &BodyStructure<'_>) -> Vec<Leaf> {
    let mut out = Vec::new();
    match body {
        BodyStructure::Multipart { .. } => walk(body, &[], 0, &mut out),
        // A single-part message is its own part 1.
        _ => walk(body, &[1], 0, &mut out),
    }
    out
}

fn walk(body: &BodyStructure<'_>, section: &[u32], depth: usize, out: &mut Vec<Leaf>) {
    if depth > MAX_DEPTH || out.len() >= MAX_LEAVES {
        return;
    }
    let (common, other) = match body {
        BodyStructure::Multipart { bodies, .. } => {
            for (i, child) in bodies.iter().enumerate() {
                let mut path = section.to_vec();
                path.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
                walk(child, &path, depth + 1, out);
            }
            return;
        }
        BodyStructure::Basic { common, other, .. }
        | BodyStructure::Text { common, other, .. }
        | BodyStructure::Message { common, other, .. } => (common, other),
    };
    let mime = format!("{}/{}", common.ty.ty, common.ty.subtype).to_ascii_lowercase();
    let disposition = common.disposition.as_ref();
    let name = disposition
        .and_then(|d| param(&d.params, "filename"))
        .or_else(|| param(&common.ty.params, "name"))
        .map(str::to_owned);
    let attachment = disposition.is_some_and(|d| d.ty.eq_ignore_ascii_case("attachment"))
        || name.is_some()
        || !(mime.starts_with("text/"));
    out.push(Leaf {
        section: if section.is_empty() {
            vec![1]
        } else {
            section.to_vec()
        },
        charset: param(&common.ty.params, "charset").map(str::to_owned),
        encoding: encoding(&other.transfer_encoding),
        size: other.octets,
        name,
        attachment,
        mime,
    });
}

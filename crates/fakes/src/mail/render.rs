//! How the fake IMAP server writes what it serves: IMAP strings (quoted, or literals for
//! anything a quoted string cannot hold), BODYSTRUCTURE from the fake's MIME reading, section
//! names echoed as the client asked, and dates.

use chrono::{DateTime, Utc};
use imap_codec::imap_types::fetch::{Part, Section};

use super::mime::{self, Entity};

/// An IMAP string: quoted when plain printable ASCII, else a literal.
pub fn string(value: &[u8]) -> Vec<u8> {
    if value.len() < 1_000 && value.iter().all(|b| (b' '..=b'~').contains(b)) {
        let mut out = vec![b'"'];
        for b in value {
            if matches!(b, b'"' | b'\\') {
                out.push(b'\\');
            }
            out.push(*b);
        }
        out.push(b'"');
        out
    } else {
        literal(value)
    }
}

pub fn literal(value: &[u8]) -> Vec<u8> {
    let mut out = format!("{{{}}}\r\n", value.len()).into_bytes();
    out.extend_from_slice(value);
    out
}

fn params(list: &[(String, String)]) -> Vec<u8> {
    if list.is_empty() {
        return b"NIL".to_vec();
    }
    let mut out = vec![b'('];
    for (i, (k, v)) in list.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.extend(string(k.to_ascii_uppercase().as_bytes()));
        out.push(b' ');
        out.extend(string(v.as_bytes()));
    }
    out.push(b')');
    out
}

/// BODYSTRUCTURE of `e` (extension data included: disposition).
pub fn bodystructure(raw: &[u8], e: &Entity) -> Vec<u8> {
    let mut out = vec![b'('];
    if e.is_multipart() {
        for child in &e.children {
            out.extend(bodystructure(raw, child));
        }
        out.push(b' ');
        out.extend(string(e.subtype.to_ascii_uppercase().as_bytes()));
        out.push(b' ');
        out.extend(params(&e.params));
        out.extend_from_slice(b" NIL NIL NIL)");
        return out;
    }
    // message/rfc822 parts would need an envelope and a nested structure; the fake serves
    // them as opaque application/octet-stream leaves.
    let (ty, subtype) = if e.ty == "message" && e.subtype == "rfc822" {
        ("application".to_owned(), "octet-stream".to_owned())
    } else {
        (e.ty.clone(), e.subtype.clone())
    };
    let body = &raw[e.body.clone()];
    out.extend(string(ty.to_ascii_uppercase().as_bytes()));
    out.push(b' ');
    out.extend(string(subtype.to_ascii_uppercase().as_bytes()));
    out.push(b' ');
    out.extend(params(&e.params));
    out.extend_from_slice(b" NIL NIL ");
    out.extend(string(e.encoding.to_ascii_uppercase().as_bytes()));
    out.extend(format!(" {}", body.len()).into_bytes());
    if ty == "text" {
        out.extend(format!(" {}", mime::lines(body)).into_bytes());
    }
    // Extension data: md5, disposition, language, location.
    out.extend_from_slice(b" NIL ");
    match &e.disposition {
        Some((d, p)) => {
            out.push(b'(');
            out.extend(string(d.to_ascii_uppercase().as_bytes()));
            out.push(b' ');
            out.extend(params(p));
            out.push(b')');
        }
        None => out.extend_from_slice(b"NIL"),
    }
    out.extend_from_slice(b" NIL NIL)");
    out
}

fn part_name(part: &Part) -> String {
    part.0
        .as_ref()
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(".")
}

/// The section as the answer names it: `1.2`, `HEADER.FIELDS (FROM TO)`, `TEXT`, `1.MIME`.
pub fn section_name(section: Option<&Section<'_>>) -> String {
    let prefix = |p: &Option<Part>| {
        p.as_ref()
            .map(|p| format!("{}.", part_name(p)))
            .unwrap_or_default()
    };
    let fields = |list: &imap_codec::imap_types::core::NonEmptyVec<
        imap_codec::imap_types::core::AString<'_>,
    >| {
        list.as_ref()
            .iter()
            .map(|f| String::from_utf8_lossy(f.as_ref()).to_ascii_uppercase())
            .collect::<Vec<_>>()
            .join(" ")
    };
    match section {
        None => String::new(),
        Some(Section::Part(p)) => part_name(p),
        Some(Section::Header(p)) => format!("{}HEADER", prefix(p)),
        Some(Section::HeaderFields(p, list)) => {
            format!("{}HEADER.FIELDS ({})", prefix(p), fields(list))
        }
        Some(Section::HeaderFieldsNot(p, list)) => {
            format!("{}HEADER.FIELDS.NOT ({})", prefix(p), fields(list))
        }
        Some(Section::Text(p)) => format!("{}TEXT", prefix(p)),
        Some(Section::Mime(p)) => format!("{}.MIME", part_name(p)),
    }
}

/// The header lines of `e` whose names are (or with `not`, are not) in `names`, with the
/// blank line that ends a header.
pub fn header_fields(raw: &[u8], e: &Entity, names: &[String], not: bool) -> Vec<u8> {
    let header = &raw[e.header.clone()];
    let mut out = Vec::new();
    let mut keep = false;
    for line in header.split_inclusive(|b| *b == b'\n') {
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        if !line.starts_with(b" ") && !line.starts_with(b"\t") {
            let name = line
                .split(|b| *b == b':')
                .next()
                .map(|n| String::from_utf8_lossy(n).trim().to_ascii_uppercase())
                .unwrap_or_default();
            keep = names.contains(&name) != not;
        }
        if keep {
            out.extend_from_slice(line);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The bytes a section names, before any partial range.
pub fn section_bytes(raw: &[u8], root: &Entity, section: Option<&Section<'_>>) -> Option<Vec<u8>> {
    let names = |list: &imap_codec::imap_types::core::NonEmptyVec<
        imap_codec::imap_types::core::AString<'_>,
    >| {
        list.as_ref()
            .iter()
            .map(|f| String::from_utf8_lossy(f.as_ref()).to_ascii_uppercase())
            .collect::<Vec<String>>()
    };
    let path = |p: &Part| p.0.as_ref().iter().map(|n| n.get()).collect::<Vec<u32>>();
    Some(match section {
        None => raw.to_vec(),
        Some(Section::Part(p)) => raw[root.part(&path(p))?.body.clone()].to_vec(),
        Some(Section::Header(None)) => raw[root.header.clone()].to_vec(),
        Some(Section::HeaderFields(None, list)) => header_fields(raw, root, &names(list), false),
        Some(Section::HeaderFieldsNot(None, list)) => header_fields(raw, root, &names(list), true),
        Some(Section::Text(None)) => raw[root.body.clone()].to_vec(),
        Some(Section::Mime(p)) => raw[root.part(&path(p))?.header.clone()].to_vec(),
        // Headers of nested messages: the fake does not look inside message/rfc822 parts.
        Some(_) => Vec::new(),
    })
}

/// `dd-Mon-yyyy hh:mm:ss +0000`.
pub fn internal_date(at: DateTime<Utc>) -> String {
    at.format("%d-%b-%Y %H:%M:%S +0000").to_string()
}

//! SEARCH for the fake IMAP server: the keys a mail client uses to find support mail (flags,
//! dates, addresses, subject, text, header fields, UID and sequence sets, NOT/OR/AND), with
//! case-insensitive substring matching on decoded header values, as Dovecot does.

use imap_codec::imap_types::search::SearchKey;
use imap_codec::imap_types::sequence::{SeqOrUid, Sequence, SequenceSet};

use super::mime::{self, Entity};
use super::store::StoredMessage;

/// A key the fake does not implement (answered with BAD, never guessed).
#[derive(Debug)]
pub struct Unsupported;

/// True when `n` is in `set` (`*` is `largest`).
pub fn in_set(set: &SequenceSet, n: u32, largest: u32) -> bool {
    let value = |s: &SeqOrUid| match s {
        SeqOrUid::Value(v) => v.get(),
        SeqOrUid::Asterisk => largest,
    };
    set.0.as_ref().iter().any(|seq| match seq {
        Sequence::Single(s) => value(s) == n,
        Sequence::Range(a, b) => {
            let (lo, hi) = (value(a).min(value(b)), value(a).max(value(b)));
            (lo..=hi).contains(&n)
        }
    })
}

fn contains(haystack: &str, needle: &[u8]) -> bool {
    let needle = String::from_utf8_lossy(needle).to_lowercase();
    haystack.to_lowercase().contains(&needle)
}

fn header(e: &Entity, name: &str) -> String {
    e.fields
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| mime::decode_words(v))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether message `m` (sequence number `seq`) matches `key`.
pub fn matches(
    key: &SearchKey<'_>,
    m: &StoredMessage,
    e: &Entity,
    seq: u32,
    largest_seq: u32,
    largest_uid: u32,
) -> Result<bool, Unsupported> {
    let flag = |f: &str| m.flags.contains(f);
    let date = m.internal_date.date_naive();
    Ok(match key {
        SearchKey::All => true,
        SearchKey::And(keys) => {
            for k in keys.as_ref() {
                if !matches(k, m, e, seq, largest_seq, largest_uid)? {
                    return Ok(false);
                }
            }
            true
        }
        SearchKey::Or(a, b) => {
            matches(a, m, e, seq, largest_seq, largest_uid)?
                || matches(b, m, e, seq, largest_seq, largest_uid)?
        }
        SearchKey::Not(k) => !matches(k, m, e, seq, largest_seq, largest_uid)?,
        SearchKey::SequenceSet(set) => in_set(set, seq, largest_seq),
        SearchKey::Uid(set) => in_set(set, m.uid, largest_uid),
        SearchKey::Seen => flag("\\Seen"),
        SearchKey::Unseen => !flag("\\Seen"),
        SearchKey::Answered => flag("\\Answered"),
        SearchKey::Unanswered => !flag("\\Answered"),
        SearchKey::Flagged => flag("\\Flagged"),
        SearchKey::Unflagged => !flag("\\Flagged"),
        SearchKey::Deleted => flag("\\Deleted"),
        SearchKey::Undeleted => !flag("\\Deleted"),
        SearchKey::Since(d) => date >= *d.as_ref(),
        SearchKey::Before(d) => date < *d.as_ref(),
        SearchKey::On(d) => date == *d.as_ref(),
        SearchKey::From(v) => contains(&header(e, "From"), v.as_ref()),
        SearchKey::To(v) => contains(&header(e, "To"), v.as_ref()),
        SearchKey::Cc(v) => contains(&header(e, "Cc"), v.as_ref()),
        SearchKey::Subject(v) => contains(&header(e, "Subject"), v.as_ref()),
        SearchKey::Header(name, v) => {
            let name = String::from_utf8_lossy(name.as_ref()).into_owned();
            e.field(&name).is_some() && contains(&header(e, &name), v.as_ref())
        }
        SearchKey::Body(v) => {
            contains(&String::from_utf8_lossy(&m.raw[e.body.clone()]), v.as_ref())
        }
        SearchKey::Text(v) => {
            contains(&String::from_utf8_lossy(&m.raw), v.as_ref())
                || e.fields
                    .iter()
                    .any(|(_, value)| contains(&mime::decode_words(value), v.as_ref()))
        }
        SearchKey::Larger(n) => m.raw.len() > usize::try_from(*n).unwrap_or(usize::MAX),
        SearchKey::Smaller(n) => m.raw.len() < usize::try_from(*n).unwrap_or(0),
        _ => return Err(Unsupported),
    })
}

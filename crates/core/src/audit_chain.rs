//! Tamper evidence for the audit trail: every row carries an HMAC (keyed by the audit salt)
//! over its fields and the previous row's HMAC, one chain per audit writer, and each chain's
//! head is recorded with a MAC of its own. [`verify`] names every row that was edited,
//! deleted, inserted or reordered since it was written.
//!
//! Keyed, not a bare hash: whoever can edit the database but does not hold the salt cannot
//! recompute the chain after an edit. One chain per writer (per process): replicas sharing a
//! Postgres never wait on each other's head.

use std::collections::{BTreeMap, HashMap};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::json;
use sha2::Sha256;

use crate::canonical::{encode, jcs};
use crate::ledger::{AuditRecord, ChainHead, ChainLink, StoredAudit};

/// The `prev_hash` of a chain's first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

const ROW_DOMAIN: &[u8] = b"care-mcp audit row v1\n";
const HEAD_DOMAIN: &[u8] = b"care-mcp audit head v1\n";

fn mac(salt: &[u8], domain: &[u8], text: &[u8]) -> String {
    // HMAC takes keys of any length: this cannot fail; an empty key is the fallback anyway.
    let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(salt) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(domain);
    mac.update(text);
    hex::encode(mac.finalize().into_bytes())
}

fn saturating(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Appends `"key":` (keys here are fixed ASCII names that need no escaping).
fn key(out: &mut Vec<u8>, first: bool, name: &str) {
    if !first {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

fn opt_str(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        Some(s) => jcs::write_str(s, out),
        None => out.extend_from_slice(b"null"),
    }
}

/// The JCS text of the row's fields exactly as the ledger stores them (times in ms, counts as
/// signed integers), so a row read back hashes as it did when written. Written directly in
/// JCS key order: a row is hashed on every audited call, and building a JSON map for it cost
/// more than the HMAC. `tests::the_direct_text_is_the_jcs_of_the_fields` holds it to
/// `encode` of the same fields as a map.
fn row_text(record: &AuditRecord, chain: &str, seq: i64, prev_hash: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    let o = &mut out;
    o.push(b'{');
    key(o, true, "approval_id");
    opt_str(o, record.approval_id.as_deref());
    key(o, false, "approval_trail");
    opt_str(o, record.approval_trail.as_deref());
    key(o, false, "args_digest");
    jcs::write_str(&record.args_digest, o);
    key(o, false, "at");
    jcs::write_i64(record.at.timestamp_millis(), o);
    key(o, false, "capability");
    jcs::write_str(&record.capability, o);
    key(o, false, "chain");
    jcs::write_str(chain, o);
    key(o, false, "client");
    jcs::write_str(&record.client, o);
    key(o, false, "decision");
    jcs::write_str(&record.decision, o);
    key(o, false, "denied_by");
    opt_str(o, record.denied_by.as_deref());
    key(o, false, "duration_us");
    jcs::write_i64(saturating(record.duration_us), o);
    key(o, false, "error_code");
    opt_str(o, record.error_code.as_deref());
    key(o, false, "outcome");
    jcs::write_str(&record.outcome, o);
    key(o, false, "output");
    match record.output {
        Some(output) => {
            o.push(b'{');
            key(o, true, "bytes");
            jcs::write_i64(saturating(output.bytes), o);
            key(o, false, "items");
            jcs::write_i64(saturating(output.items), o);
            key(o, false, "truncated");
            o.extend_from_slice(if output.truncated {
                b"true}"
            } else {
                b"false}"
            });
        }
        None => o.extend_from_slice(b"null"),
    }
    key(o, false, "prev_hash");
    jcs::write_str(prev_hash, o);
    key(o, false, "role");
    jcs::write_str(&record.role, o);
    key(o, false, "rules");
    jcs::write_str(&record.rules.join(","), o);
    key(o, false, "seq");
    jcs::write_i64(seq, o);
    key(o, false, "session");
    jcs::write_str(&record.session, o);
    key(o, false, "tool");
    jcs::write_str(&record.tool, o);
    o.push(b'}');
    out
}

/// The hash a row gets at `seq` after `prev_hash` in `chain`.
pub fn row_hash(
    salt: &[u8],
    record: &AuditRecord,
    chain: &str,
    seq: i64,
    prev_hash: &str,
) -> String {
    mac(salt, ROW_DOMAIN, &row_text(record, chain, seq, prev_hash))
}

/// The MAC of a chain's head.
pub fn head_mac(salt: &[u8], chain: &str, seq: i64, hash: &str) -> String {
    mac(
        salt,
        HEAD_DOMAIN,
        &encode(&json!({"chain": chain, "seq": seq, "hash": hash})),
    )
}

/// One writer's chain as it grows: the next link for each record.
#[derive(Debug, Clone)]
pub struct Chain {
    pub id: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
    seq: i64,
    last_hash: String,
}

impl Chain {
    /// A new chain with a random id.
    pub fn start(now: chrono::DateTime<chrono::Utc>) -> Self {
        Chain {
            id: format!("c-{}", uuid::Uuid::new_v4().simple()),
            started_at: now,
            seq: 0,
            last_hash: GENESIS.to_owned(),
        }
    }

    /// The links `records` get appended in order, and the head after them; the chain itself
    /// moves only by [`Chain::advance`], once the batch is stored.
    pub fn links(&self, salt: &[u8], records: &[AuditRecord]) -> (Vec<ChainLink>, ChainHead) {
        let mut seq = self.seq;
        let mut prev = self.last_hash.clone();
        let mut links = Vec::with_capacity(records.len());
        for record in records {
            seq += 1;
            let hash = row_hash(salt, record, &self.id, seq, &prev);
            links.push(ChainLink {
                chain: self.id.clone(),
                seq,
                prev_hash: prev,
                hash: hash.clone(),
            });
            prev = hash;
        }
        let head = ChainHead {
            chain: self.id.clone(),
            started_at: self.started_at,
            seq,
            mac: head_mac(salt, &self.id, seq, &prev),
            hash: prev,
        };
        (links, head)
    }

    /// Moves the chain to `head` (after its batch was committed).
    pub fn advance(&mut self, head: &ChainHead) {
        self.seq = head.seq;
        self.last_hash = head.hash.clone();
    }
}

/// What was done to a row (or to a chain's end) since it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tampering {
    /// Its fields no longer match its hash.
    Edited,
    /// Rows of a chain are missing (a gap, or an end cut before the recorded head).
    Deleted,
    /// A row no writer appended: outside any chain after chaining began, a second row at a
    /// place already taken, past the head, or in a chain with no recorded head.
    Inserted,
    /// Rows whose insertion order (id) disagrees with their chain order, or whose contents
    /// were swapped.
    Reordered,
}

impl Tampering {
    pub fn as_str(self) -> &'static str {
        match self {
            Tampering::Edited => "edited",
            Tampering::Deleted => "deleted",
            Tampering::Inserted => "inserted",
            Tampering::Reordered => "reordered",
        }
    }
}

/// One problem [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: Tampering,
    /// The row concerned (for a deletion: the row after the gap, if any).
    pub id: Option<i64>,
    pub chain: Option<String>,
    /// What exactly, for the operator.
    pub detail: String,
}

/// The outcome of [`verify`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub rows: u64,
    pub chains: u64,
    /// Rows from before chaining began (no link, older than every chained row).
    pub unchained_before_chaining: u64,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn intact(&self) -> bool {
        self.findings.is_empty()
    }
}

struct Entry {
    id: i64,
    link: ChainLink,
    mac_ok: bool,
    record: AuditRecord,
}

/// Checks rows (any order) against the recorded `heads`.
pub fn verify(salt: &[u8], rows: Vec<StoredAudit>, heads: &[ChainHead]) -> Report {
    let mut report = Report {
        rows: rows.len() as u64,
        ..Report::default()
    };
    let mut chains: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    let mut unchained = Vec::new();
    for row in rows {
        match row.link {
            Some(link) => {
                let mac_ok = row_hash(salt, &row.record, &link.chain, link.seq, &link.prev_hash)
                    == link.hash;
                chains.entry(link.chain.clone()).or_default().push(Entry {
                    id: row.id,
                    link,
                    mac_ok,
                    record: row.record,
                });
            }
            None => unchained.push(row.id),
        }
    }
    let first_chained = chains.values().flatten().map(|e| e.id).min();
    for id in unchained {
        if first_chained.is_some_and(|first| id > first) {
            report.findings.push(Finding {
                kind: Tampering::Inserted,
                id: Some(id),
                chain: None,
                detail: format!("row {id} belongs to no chain but was stored after chaining began"),
            });
        } else {
            report.unchained_before_chaining += 1;
        }
    }
    let heads: HashMap<&str, &ChainHead> = heads.iter().map(|h| (h.chain.as_str(), h)).collect();
    for (chain, entries) in &mut chains {
        check_chain(
            salt,
            chain,
            entries,
            heads.get(chain.as_str()).copied(),
            &mut report,
        );
    }
    for head in heads.values() {
        if !chains.contains_key(&head.chain) && head.seq > 0 {
            report.findings.push(Finding {
                kind: Tampering::Deleted,
                id: None,
                chain: Some(head.chain.clone()),
                detail: format!(
                    "chain {} records {} rows but none is stored",
                    head.chain, head.seq
                ),
            });
        }
    }
    report.chains = chains.len() as u64;
    report.findings.sort_by_key(|a| (a.id, a.kind));
    // A row named twice for one kind (its hash and its successor's link) is one finding.
    report
        .findings
        .dedup_by(|a, b| a.id.is_some() && (a.id, a.kind) == (b.id, b.kind));
    report
}

fn finding(kind: Tampering, id: Option<i64>, chain: &str, detail: String) -> Finding {
    Finding {
        kind,
        id,
        chain: Some(chain.to_owned()),
        detail,
    }
}

fn check_chain(
    salt: &[u8],
    chain: &str,
    entries: &mut [Entry],
    head: Option<&ChainHead>,
    report: &mut Report,
) {
    entries.sort_by_key(|e| (e.link.seq, e.id));
    let f = &mut report.findings;
    let head_ok = head.is_some_and(|h| head_mac(salt, &h.chain, h.seq, &h.hash) == h.mac);
    match head {
        None => f.push(finding(
            Tampering::Inserted,
            entries.first().map(|e| e.id),
            chain,
            format!("chain {chain} has no recorded head: no writer made it"),
        )),
        Some(_) if !head_ok => f.push(finding(
            Tampering::Edited,
            None,
            chain,
            format!("the recorded head of chain {chain} does not match its MAC"),
        )),
        Some(_) => {}
    }

    // One row per place: a second row at a taken place is inserted (the genuine one is the
    // one whose hash holds; for exact copies, the first stored).
    let mut kept: Vec<&Entry> = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let seq = entries[i].link.seq;
        let group: Vec<&Entry> = entries[i..]
            .iter()
            .take_while(|e| e.link.seq == seq)
            .collect();
        i += group.len();
        let genuine = group.iter().position(|e| e.mac_ok).unwrap_or(0);
        for (k, e) in group.iter().enumerate() {
            if k != genuine {
                f.push(finding(
                    Tampering::Inserted,
                    Some(e.id),
                    chain,
                    format!("row {} repeats place {seq} of chain {chain}", e.id),
                ));
            }
        }
        kept.push(group[genuine]);
    }

    // Rows whose hash fails: swapped contents show as one row's fields hashing at another's
    // place.
    let failing: Vec<&Entry> = kept
        .iter()
        .copied()
        .filter(|e| !e.mac_ok)
        .take(256)
        .collect();
    let mut swapped: HashMap<i64, i64> = HashMap::new();
    for a in &failing {
        for b in &failing {
            if a.id != b.id
                && row_hash(salt, &a.record, chain, b.link.seq, &b.link.prev_hash) == b.link.hash
            {
                swapped.insert(a.id, b.id);
            }
        }
    }

    let mut expected = 1;
    let mut previous: Option<&Entry> = None;
    for e in &kept {
        let seq = e.link.seq;
        if let Some(h) = head.filter(|_| head_ok)
            && seq > h.seq
        {
            f.push(finding(
                Tampering::Inserted,
                Some(e.id),
                chain,
                format!(
                    "row {} sits at place {seq}, past the head ({}) of chain {chain}",
                    e.id, h.seq
                ),
            ));
            continue;
        }
        if seq > expected {
            let after =
                previous.map_or("the chain's start".to_owned(), |p| format!("row {}", p.id));
            f.push(finding(
                Tampering::Deleted,
                Some(e.id),
                chain,
                format!(
                    "places {expected}..{} of chain {chain} are missing between {after} and row {}",
                    seq - 1,
                    e.id
                ),
            ));
        }
        if let Some(other) = swapped.get(&e.id) {
            f.push(finding(
                Tampering::Reordered,
                Some(e.id),
                chain,
                format!("row {} holds the fields written as row {other}", e.id),
            ));
        } else if !e.mac_ok {
            f.push(finding(
                Tampering::Edited,
                Some(e.id),
                chain,
                format!("row {} no longer matches its hash", e.id),
            ));
        } else if let Some(p) = previous
            && p.link.seq + 1 == seq
            && p.link.hash != e.link.prev_hash
        {
            f.push(finding(
                Tampering::Edited,
                Some(p.id),
                chain,
                format!(
                    "row {}'s hash is not the one row {} was chained to",
                    p.id, e.id
                ),
            ));
        }
        if let Some(p) = previous
            && p.id > e.id
        {
            f.push(finding(
                Tampering::Reordered,
                Some(e.id),
                chain,
                format!(
                    "row {} (place {seq}) was stored before row {} (place {})",
                    e.id, p.id, p.link.seq
                ),
            ));
        }
        expected = seq + 1;
        previous = Some(e);
    }
    if let Some(h) = head.filter(|_| head_ok) {
        let last = kept.iter().rev().find(|e| e.link.seq <= h.seq);
        let last_seq = last.map_or(0, |e| e.link.seq);
        if last_seq < h.seq {
            let after = last.map_or("the chain's start".to_owned(), |e| format!("row {}", e.id));
            f.push(finding(
                Tampering::Deleted,
                None,
                chain,
                format!(
                    "places {}..{} of chain {chain} are missing after {after} (its head is at {})",
                    last_seq + 1,
                    h.seq,
                    h.seq
                ),
            ));
        } else if let Some(e) = last
            && e.link.hash != h.hash
            && e.mac_ok
        {
            f.push(finding(
                Tampering::Edited,
                Some(e.id),
                chain,
                format!("row {} is not the head chain {chain} recorded", e.id),
            ));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;

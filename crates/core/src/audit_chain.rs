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
use serde_json::{Map, Value, json};
use sha2::Sha256;

use crate::canonical::encode;
use crate::ledger::{AuditRecord, ChainHead, ChainLink, StoredAudit};

/// The `prev_hash` of a chain's first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

const ROW_DOMAIN: &[u8] = b"care-mcp audit row v1\n";
const HEAD_DOMAIN: &[u8] = b"care-mcp audit head v1\n";

fn mac(salt: &[u8], domain: &[u8], value: &Value) -> String {
    // HMAC takes keys of any length: this cannot fail; an empty key is the fallback anyway.
    let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(salt) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(domain);
    mac.update(&encode(value));
    hex::encode(mac.finalize().into_bytes())
}

fn saturating(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The row's fields exactly as the ledger stores them (times in ms, counts as signed
/// integers), so a row read back hashes as it did when written.
fn row_fields(record: &AuditRecord, chain: &str, seq: i64, prev_hash: &str) -> Value {
    let mut m = Map::new();
    let opt = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    m.insert("at".into(), json!(record.at.timestamp_millis()));
    m.insert("role".into(), json!(record.role));
    m.insert("client".into(), json!(record.client));
    m.insert("tool".into(), json!(record.tool));
    m.insert("outcome".into(), json!(record.outcome));
    m.insert("error_code".into(), opt(&record.error_code));
    m.insert("approval_id".into(), opt(&record.approval_id));
    m.insert("duration_us".into(), json!(saturating(record.duration_us)));
    m.insert("args_digest".into(), json!(record.args_digest));
    m.insert("capability".into(), json!(record.capability));
    m.insert("session".into(), json!(record.session));
    m.insert("decision".into(), json!(record.decision));
    m.insert("rules".into(), json!(record.rules.join(",")));
    m.insert("denied_by".into(), opt(&record.denied_by));
    let output = record.output.map_or(Value::Null, |o| {
        json!({"bytes": saturating(o.bytes), "items": saturating(o.items), "truncated": o.truncated})
    });
    m.insert("output".into(), output);
    m.insert("approval_trail".into(), opt(&record.approval_trail));
    m.insert("chain".into(), json!(chain));
    m.insert("seq".into(), json!(seq));
    m.insert("prev_hash".into(), json!(prev_hash));
    Value::Object(m)
}

/// The hash a row gets at `seq` after `prev_hash` in `chain`.
pub fn row_hash(
    salt: &[u8],
    record: &AuditRecord,
    chain: &str,
    seq: i64,
    prev_hash: &str,
) -> String {
    mac(salt, ROW_DOMAIN, &row_fields(record, chain, seq, prev_hash))
}

/// The MAC of a chain's head.
pub fn head_mac(salt: &[u8], chain: &str, seq: i64, hash: &str) -> String {
    mac(
        salt,
        HEAD_DOMAIN,
        &json!({"chain": chain, "seq": seq, "hash": hash}),
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

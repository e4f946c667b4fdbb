//! Each kind of tampering on a small chain, named by `verify`.

use chrono::{TimeZone, Utc};

use super::*;
use crate::ledger::OutputSummary;

const SALT: &[u8] = b"sk-demo-audit-salt-for-chain-tests";

fn record(n: i64) -> AuditRecord {
    AuditRecord {
        at: Utc
            .timestamp_millis_opt(1_800_000_000_000 + n * 1000)
            .unwrap(),
        role: "reviews".into(),
        client: "stdio".into(),
        tool: "reviews_list".into(),
        outcome: "ok".into(),
        duration_us: 100 + n as u64,
        args_digest: format!("{n:064x}"),
        capability: "read,upstream".into(),
        session: "s-0123456789abcdef".into(),
        decision: "allow".into(),
        rules: vec!["role_gate".into(), "input".into(), "scope".into()],
        output: Some(OutputSummary {
            bytes: 300,
            items: 3,
            truncated: false,
        }),
        ..AuditRecord::default()
    }
}

/// Six rows appended in two batches, ids 1..=6, and the chain's head.
fn chain() -> (Vec<StoredAudit>, Vec<ChainHead>) {
    let mut chain = Chain::start(Utc.timestamp_millis_opt(1_800_000_000_000).unwrap());
    let mut rows = Vec::new();
    let mut head = None;
    for batch in [1..4, 4..7] {
        let records: Vec<AuditRecord> = batch.clone().map(record).collect();
        let (links, h) = chain.links(SALT, &records);
        chain.advance(&h);
        for (r, link) in records.into_iter().zip(links) {
            rows.push(StoredAudit {
                id: rows.len() as i64 + 1,
                record: r,
                link: Some(link),
            });
        }
        head = Some(h);
    }
    (rows, vec![head.unwrap()])
}

fn kinds(report: &Report) -> Vec<(Tampering, Option<i64>)> {
    report.findings.iter().map(|f| (f.kind, f.id)).collect()
}

#[test]
fn an_untouched_chain_verifies() {
    let (rows, heads) = chain();
    let report = verify(SALT, rows, &heads);
    assert!(report.intact(), "{report:?}");
    assert_eq!((report.rows, report.chains), (6, 1));
}

#[test]
fn without_the_salt_nothing_verifies() {
    let (rows, heads) = chain();
    let report = verify(b"sk-demo-another-salt", rows, &heads);
    assert!(!report.intact());
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind == Tampering::Edited && f.id == Some(1))
    );
}

#[test]
fn an_edited_row_is_named() {
    let (mut rows, heads) = chain();
    rows[2].record.outcome = "error".into();
    assert_eq!(
        kinds(&verify(SALT, rows, &heads)),
        [(Tampering::Edited, Some(3))]
    );

    let (mut rows, heads) = chain();
    rows[4].record.rules.push("approval".into());
    assert_eq!(
        kinds(&verify(SALT, rows, &heads)),
        [(Tampering::Edited, Some(5))]
    );
}

#[test]
fn a_row_recomputed_with_a_plain_hash_is_still_edited() {
    let (mut rows, heads) = chain();
    rows[1].record.tool = "reply_post".into();
    let record = rows[1].record.clone();
    let link = rows[1].link.as_mut().unwrap();
    link.hash = row_hash(b"", &record, &link.chain, link.seq, &link.prev_hash);
    let report = verify(SALT, rows, &heads);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind == Tampering::Edited && f.id == Some(2))
    );
}

#[test]
fn a_deleted_row_is_named_by_its_neighbours() {
    let (mut rows, heads) = chain();
    rows.remove(2);
    let report = verify(SALT, rows, &heads);
    assert_eq!(kinds(&report), [(Tampering::Deleted, Some(4))]);
    assert!(
        report.findings[0]
            .detail
            .contains("between row 2 and row 4"),
        "{report:?}"
    );
}

#[test]
fn a_cut_end_is_caught_by_the_head() {
    let (mut rows, heads) = chain();
    rows.truncate(4);
    let report = verify(SALT, rows, &heads);
    assert_eq!(kinds(&report), [(Tampering::Deleted, None)]);
    assert!(
        report.findings[0].detail.contains("after row 4"),
        "{report:?}"
    );
}

#[test]
fn a_head_moved_back_does_not_match_its_mac() {
    let (mut rows, mut heads) = chain();
    rows.truncate(4);
    heads[0].seq = 4;
    heads[0].hash = rows[3].link.as_ref().unwrap().hash.clone();
    let report = verify(SALT, rows, &heads);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind == Tampering::Edited && f.id.is_none())
    );
}

#[test]
fn a_whole_chain_deleted_is_caught_by_its_head() {
    let (_, heads) = chain();
    let report = verify(SALT, Vec::new(), &heads);
    assert_eq!(kinds(&report), [(Tampering::Deleted, None)]);
}

#[test]
fn inserted_rows_are_named() {
    // A row outside any chain, stored after chaining began.
    let (mut rows, heads) = chain();
    rows.push(StoredAudit {
        id: 7,
        record: record(7),
        link: None,
    });
    assert_eq!(
        kinds(&verify(SALT, rows, &heads)),
        [(Tampering::Inserted, Some(7))]
    );

    // A copy of a row at a place already taken.
    let (mut rows, heads) = chain();
    let mut copy = rows[2].clone();
    copy.id = 7;
    copy.record.outcome = "ok".into();
    rows.push(copy);
    assert_eq!(
        kinds(&verify(SALT, rows, &heads)),
        [(Tampering::Inserted, Some(7))]
    );

    // A row past the head.
    let (mut rows, heads) = chain();
    let mut extra = rows[5].clone();
    extra.id = 7;
    let link = extra.link.as_mut().unwrap();
    link.seq = 7;
    link.prev_hash = rows[5].link.as_ref().unwrap().hash.clone();
    rows.push(extra);
    assert_eq!(
        kinds(&verify(SALT, rows, &heads)),
        [(Tampering::Inserted, Some(7))]
    );

    // A chain no writer recorded.
    let (rows, _) = chain();
    let report = verify(SALT, rows, &[]);
    assert_eq!(kinds(&report), [(Tampering::Inserted, Some(1))]);
}

#[test]
fn rows_from_before_chaining_are_counted_not_flagged() {
    let (mut rows, heads) = chain();
    for row in &mut rows {
        row.id += 10;
    }
    rows.push(StoredAudit {
        id: 3,
        record: record(0),
        link: None,
    });
    let report = verify(SALT, rows, &heads);
    assert!(report.intact(), "{report:?}");
    assert_eq!(report.unchained_before_chaining, 1);
}

#[test]
fn reordered_rows_are_named() {
    // Ids swapped: chain order and storage order disagree.
    let (mut rows, heads) = chain();
    rows[1].id = 3;
    rows[2].id = 2;
    let report = verify(SALT, rows, &heads);
    assert_eq!(kinds(&report), [(Tampering::Reordered, Some(2))]);

    // Contents swapped between two places.
    let (mut rows, heads) = chain();
    let a = rows[1].record.clone();
    rows[1].record = rows[3].record.clone();
    rows[3].record = a;
    let report = verify(SALT, rows, &heads);
    assert_eq!(
        kinds(&report),
        [
            (Tampering::Reordered, Some(2)),
            (Tampering::Reordered, Some(4))
        ]
    );
}

/// The fields as a JSON map: how rows were hashed before `row_text` wrote them directly. Rows
/// written then must keep verifying, so the direct text must be exactly this map's JCS text.
fn row_fields(record: &AuditRecord, chain: &str, seq: i64, prev_hash: &str) -> serde_json::Value {
    use serde_json::{Map, Value, json};
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

#[test]
fn a_row_hashes_as_before_the_direct_text() {
    // The HMAC over the map's JCS text, as the code before `row_text` computed it.
    let r = record(7);
    let text = row_text(&r, "c-fixed", 7, GENESIS);
    assert_eq!(text, encode(&row_fields(&r, "c-fixed", 7, GENESIS)));
    let hash = row_hash(SALT, &r, "c-fixed", 7, GENESIS);
    let mut reference = <Hmac<Sha256> as KeyInit>::new_from_slice(SALT).unwrap();
    reference.update(ROW_DOMAIN);
    reference.update(&encode(&row_fields(&r, "c-fixed", 7, GENESIS)));
    assert_eq!(hash, hex::encode(reference.finalize().into_bytes()));
}

mod direct_text {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        // Quotes, backslashes, control characters, non-ASCII and astral characters.
        proptest::collection::vec(
            prop_oneof![
                Just('"'),
                Just('\\'),
                Just('\u{8}'),
                Just('\u{1f}'),
                Just('\n'),
                Just('é'),
                Just('\u{2028}'),
                Just('😀'),
                proptest::char::any(),
                proptest::char::range('a', 'z'),
            ],
            0..12,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    fn output() -> impl Strategy<Value = Option<OutputSummary>> {
        proptest::option::of((any::<u64>(), any::<u64>(), any::<bool>()).prop_map(
            |(bytes, items, truncated)| OutputSummary {
                bytes,
                items,
                truncated,
            },
        ))
    }

    proptest! {
        #[test]
        fn the_direct_text_is_the_jcs_of_the_fields(
            at in -8_000_000_000_000i64..8_000_000_000_000,
            (role, client, tool, outcome) in (text(), text(), text(), text()),
            (error_code, approval_id, denied_by, approval_trail) in (
                proptest::option::of(text()),
                proptest::option::of(text()),
                proptest::option::of(text()),
                proptest::option::of(text()),
            ),
            duration_us in any::<u64>(),
            (args_digest, capability, session, decision) in (text(), text(), text(), text()),
            rules in proptest::collection::vec(text(), 0..4),
            output in output(),
            (chain, prev_hash) in (text(), text()),
            seq in any::<i64>(),
        ) {
            let record = AuditRecord {
                at: Utc.timestamp_millis_opt(at).unwrap(),
                role, client, tool, outcome, error_code, approval_id, duration_us,
                args_digest, capability, session, decision, rules, denied_by, output,
                approval_trail,
            };
            prop_assert_eq!(
                row_text(&record, &chain, seq, &prev_hash),
                encode(&row_fields(&record, &chain, seq, &prev_hash))
            );
        }
    }
}

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

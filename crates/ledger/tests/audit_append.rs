//! A batch of audit rows goes in whole or not at all, on both backends (Postgres: one
//! statement; SQLite: one write transaction): a row the database refuses (a trigger here)
//! leaves neither the batch's other rows nor its head behind, and the connection is fit for
//! the next batch.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use care_core::audit_chain::{self, Chain};
use care_core::ledger::{AuditBatch, AuditQuery, AuditRecord, Durability, Ledger};
use care_ledger::test_support::{execute, fresh_postgres_db, temp_sqlite};
use chrono::{TimeZone, Utc};

const SALT: &[u8] = b"sk-demo-audit-append-salt";

fn record(tool: &str, second: u32) -> AuditRecord {
    AuditRecord {
        at: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, second).unwrap(),
        role: "ops".to_owned(),
        client: "agent".to_owned(),
        tool: tool.to_owned(),
        outcome: "ok".to_owned(),
        error_code: None,
        approval_id: None,
        duration_us: 10,
        args_digest: "d".to_owned(),
        capability: "read".to_owned(),
        session: "s-0".to_owned(),
        decision: "allow".to_owned(),
        rules: vec!["role_gate".to_owned()],
        denied_by: None,
        output: None,
        approval_trail: None,
    }
}

async fn append(l: &dyn Ledger, chain: &mut Chain, records: &[AuditRecord]) -> bool {
    let (links, head) = chain.links(SALT, records);
    let batch = AuditBatch {
        rows: records.iter().cloned().zip(links).collect(),
        head,
        durability: Durability::Flushed,
    };
    let stored = l.append_audit(&batch).await.is_ok();
    if stored {
        chain.advance(&batch.head);
    }
    stored
}

async fn a_refused_row_fails_its_whole_batch(url: &str, refuse_boom: &[&str]) {
    let ledger: Arc<dyn Ledger> =
        care_ledger::connect(Some(url), Path::new("/nonexistent/unused.db"))
            .await
            .unwrap();
    ledger.ping().await.unwrap();
    for statement in refuse_boom {
        execute(url, statement).await.unwrap();
    }
    let mut chain = Chain::start(Utc::now());
    assert!(append(ledger.as_ref(), &mut chain, &[record("first", 1)]).await);
    let refused = [record("second", 2), record("boom", 3)];
    assert!(!append(ledger.as_ref(), &mut chain, &refused).await);
    // Twice: the first failure must not leave the next batch inside a stale transaction.
    assert!(!append(ledger.as_ref(), &mut chain, &refused).await);
    assert!(
        append(
            ledger.as_ref(),
            &mut chain,
            &[record("third", 4), record("fourth", 5)]
        )
        .await
    );

    let rows = ledger
        .audit_rows(&AuditQuery {
            limit: 100,
            oldest_first: true,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    let tools: Vec<&str> = rows.iter().map(|r| r.record.tool.as_str()).collect();
    assert_eq!(tools, ["first", "third", "fourth"]);
    let heads = ledger.audit_heads().await.unwrap();
    assert_eq!(heads.len(), 1);
    assert_eq!(heads[0].seq, 3);
    assert!(audit_chain::verify(SALT, rows, &heads).intact());
    ledger.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_refused_row_fails_its_whole_batch() {
    let (url, _dir) = temp_sqlite();
    a_refused_row_fails_its_whole_batch(
        &url,
        &[
            "CREATE TRIGGER refuse_boom BEFORE INSERT ON audit WHEN NEW.tool = 'boom' \
           BEGIN SELECT RAISE(ABORT, 'boom refused'); END",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_refused_row_fails_its_whole_batch() {
    let (url, _db) = fresh_postgres_db().await;
    a_refused_row_fails_its_whole_batch(
        &url,
        &[
            "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN IF NEW.tool = 'boom' THEN RAISE EXCEPTION 'boom refused'; END IF; \
             RETURN NEW; END $$",
            "CREATE TRIGGER refuse_boom BEFORE INSERT ON audit FOR EACH ROW \
             EXECUTE FUNCTION refuse_boom()",
        ],
    )
    .await;
}

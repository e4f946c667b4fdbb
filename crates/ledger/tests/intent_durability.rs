//! The intent row an external write stores before its consume, on Postgres: committed and
//! visible to another connection the moment `record_now` returns, and on disk (the cluster's
//! WAL flushed past it) by the time the consume that follows has returned, whether its own
//! commit waited for the flush or the consume's did. Also: the ordinary rows sharing the
//! intent's batch, and the batches after it, land on the same chain, which still verifies.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use care_core::audit::Auditor;
use care_core::audit_chain;
use care_core::ledger::{AuditQuery, AuditRecord, Ledger};
use care_ledger::test_support::{approved_approval, fresh_postgres_db};
use chrono::Utc;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection};

const SALT: &[u8] = b"sk-demo-intent-durability-salt";
const ACTION: &str = "mail_send";
const HASH: &str = "5e1d000000000000000000000000000000000000000000000000000000000002";

fn record(outcome: &str, approval_id: Option<&str>) -> AuditRecord {
    AuditRecord {
        at: Utc::now(),
        role: "mail".to_owned(),
        client: "durability".to_owned(),
        tool: ACTION.to_owned(),
        outcome: outcome.to_owned(),
        approval_id: approval_id.map(str::to_owned),
        args_digest: "d".repeat(64),
        capability: "external-write".to_owned(),
        session: "s-durability".to_owned(),
        decision: "allow".to_owned(),
        ..AuditRecord::default()
    }
}

/// A connection of the test's own, beside the ledger's pool.
async fn observer(url: &str) -> PgConnection {
    PgConnectOptions::from_str(url)
        .unwrap()
        .connect()
        .await
        .unwrap()
}

async fn lsn(conn: &mut PgConnection, function: &str) -> String {
    let statement = format!("SELECT {function}()::TEXT");
    sqlx::query_scalar(sqlx::AssertSqlSafe(statement))
        .fetch_one(conn)
        .await
        .unwrap()
}

async fn flushed_past(conn: &mut PgConnection, lsn: &str) -> bool {
    sqlx::query_scalar("SELECT pg_current_wal_flush_lsn() >= $1::TEXT::pg_lsn")
        .bind(lsn)
        .fetch_one(conn)
        .await
        .unwrap()
}

async fn intents_stored(conn: &mut PgConnection, id: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM audit WHERE outcome = 'intent' AND approval_id = $1")
        .bind(id)
        .fetch_one(conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intent_is_visible_at_once_and_on_disk_once_its_consume_returns() {
    let (url, _db) = fresh_postgres_db().await;
    let ledger: Arc<dyn Ledger> = care_ledger::connect(Some(&url), Path::new("/nonexistent/x.db"))
        .await
        .unwrap();
    let auditor = Auditor::new(Arc::clone(&ledger), SALT);
    let mut watch = observer(&url).await;
    for round in 0..20 {
        let id = format!("durable-{round}");
        approved_approval(ledger.as_ref(), &id, ACTION, HASH)
            .await
            .unwrap();
        // An ordinary row queued just before shares the intent's batch (or the one before).
        auditor.record(&record("ok", None)).await;
        auditor
            .record_now(&record("intent", Some(&id)))
            .await
            .unwrap();
        // Committed: another connection sees it before anything else happens.
        assert_eq!(intents_stored(&mut watch, &id).await, 1, "round {round}");
        // Every WAL record the intent's commit wrote ends before this position.
        let after_intent = lsn(&mut watch, "pg_current_wal_insert_lsn").await;
        ledger.consume(&id, ACTION, HASH, "{}").await.unwrap();
        assert!(
            flushed_past(&mut watch, &after_intent).await,
            "round {round}: the consume returned before the intent's commit was on disk"
        );
    }
    auditor.flush().await;

    // Both kinds of batch extend one chain, and it verifies from its first row.
    let rows = ledger
        .audit_rows(&AuditQuery {
            oldest_first: true,
            limit: 100,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(rows.len(), 40);
    let heads = ledger.audit_heads().await.unwrap();
    assert_eq!(heads.len(), 1);
    let report = audit_chain::verify(SALT, rows, &heads);
    assert!(report.intact(), "{report:?}");
    watch.close().await.unwrap();
}

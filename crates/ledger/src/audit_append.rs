//! Appending a chained batch of audit rows: the rows and the chain's new head, atomically.
//! Postgres runs it as one prepared statement, one round trip (the rows, one array per column,
//! inserted in a data-modifying `WITH`, the head's upsert as the statement), and commits a
//! batch an external write waits for without waiting for its flush (the consume's flush
//! covers it: `sql::APPEND_AUDIT_POSTGRES_BEFORE_NEXT_COMMIT`); a SQLite file
//! ledger on its writer thread (`sqlite_write`), an in-memory one as two statements in one
//! write transaction.

use care_core::ledger::{AuditBatch, AuditRecord, Durability, LedgerError, OutputSummary};
use sqlx::QueryBuilder;

use crate::error::db;
use crate::rows::{self, millis};
use crate::{PostgresLedger, SqliteLedger, sql};

/// Pushes `INSERT INTO audit (...) VALUES (...), (...)` with every row's values bound onto a
/// query builder of either backend.
macro_rules! push_rows {
    ($q:expr, $batch:expr) => {
        $q.push(sql::INSERT_AUDIT_ROWS);
        $q.push_values(&$batch.rows, |mut row, (r, link)| {
            let output = r.output;
            row.push_bind(millis(r.at))
                .push_bind(r.role.as_str())
                .push_bind(r.client.as_str())
                .push_bind(r.tool.as_str())
                .push_bind(r.outcome.as_str())
                .push_bind(r.error_code.as_deref())
                .push_bind(r.approval_id.as_deref())
                .push_bind(rows::duration_us(r.duration_us))
                .push_bind(r.args_digest.as_str())
                .push_bind(r.capability.as_str())
                .push_bind(r.session.as_str())
                .push_bind(r.decision.as_str())
                .push_bind(r.rules.join(","))
                .push_bind(r.denied_by.as_deref())
                .push_bind(output.map(|o| rows::duration_us(o.bytes)))
                .push_bind(output.map(|o| rows::duration_us(o.items)))
                .push_bind(output.map(|o| o.truncated))
                .push_bind(r.approval_trail.as_deref())
                .push_bind(link.chain.as_str())
                .push_bind(link.seq)
                .push_bind(link.prev_hash.as_str())
                .push_bind(link.hash.as_str());
        });
    };
}

/// Pushes the head's upsert, its values bound in the builder's own placeholder order.
macro_rules! push_head {
    ($q:expr, $batch:expr) => {
        $q.push(sql::INSERT_CHAIN_HEAD);
        $q.push_values([&$batch.head], |mut v, head| {
            v.push_bind(head.chain.as_str())
                .push_bind(millis(head.started_at))
                .push_bind(head.seq)
                .push_bind(head.hash.as_str())
                .push_bind(head.mac.as_str());
        });
        $q.push(sql::ON_CHAIN_HEAD_CONFLICT);
    };
}

impl PostgresLedger {
    pub(crate) async fn audit_append(&self, batch: &AuditBatch) -> Result<(), LedgerError> {
        if batch.rows.is_empty() {
            return Ok(());
        }
        // One statement is one implicit transaction: both parts or neither. The rows travel
        // as one array per column, so every batch size is the same prepared statement (a
        // multi-row VALUES is a new statement per size, parsed and planned on each batch).
        let rows = &batch.rows;
        let column =
            |f: fn(&AuditRecord) -> i64| rows.iter().map(|(r, _)| f(r)).collect::<Vec<_>>();
        let text = |f: for<'a> fn(&'a AuditRecord) -> &'a str| {
            rows.iter().map(|(r, _)| f(r)).collect::<Vec<&str>>()
        };
        let maybe = |f: for<'a> fn(&'a AuditRecord) -> Option<&'a str>| {
            rows.iter()
                .map(|(r, _)| f(r))
                .collect::<Vec<Option<&str>>>()
        };
        let output = |f: fn(OutputSummary) -> i64| {
            rows.iter()
                .map(|(r, _)| r.output.map(f))
                .collect::<Vec<Option<i64>>>()
        };
        let rules: Vec<String> = rows.iter().map(|(r, _)| r.rules.join(",")).collect();
        let head = &batch.head;
        let statement = match batch.durability {
            Durability::Flushed => sql::APPEND_AUDIT_POSTGRES,
            Durability::BeforeNextCommit => sql::APPEND_AUDIT_POSTGRES_BEFORE_NEXT_COMMIT,
        };
        sqlx::query(statement)
            .bind(column(|r| millis(r.at)))
            .bind(text(|r| &r.role))
            .bind(text(|r| &r.client))
            .bind(text(|r| &r.tool))
            .bind(text(|r| &r.outcome))
            .bind(maybe(|r| r.error_code.as_deref()))
            .bind(maybe(|r| r.approval_id.as_deref()))
            .bind(column(|r| rows::duration_us(r.duration_us)))
            .bind(text(|r| &r.args_digest))
            .bind(text(|r| &r.capability))
            .bind(text(|r| &r.session))
            .bind(text(|r| &r.decision))
            .bind(&rules)
            .bind(maybe(|r| r.denied_by.as_deref()))
            .bind(output(|o| rows::duration_us(o.bytes)))
            .bind(output(|o| rows::duration_us(o.items)))
            .bind(
                rows.iter()
                    .map(|(r, _)| r.output.map(|o| o.truncated))
                    .collect::<Vec<_>>(),
            )
            .bind(maybe(|r| r.approval_trail.as_deref()))
            .bind(
                rows.iter()
                    .map(|(_, l)| l.chain.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(rows.iter().map(|(_, l)| l.seq).collect::<Vec<_>>())
            .bind(
                rows.iter()
                    .map(|(_, l)| l.prev_hash.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                rows.iter()
                    .map(|(_, l)| l.hash.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(head.chain.as_str())
            .bind(millis(head.started_at))
            .bind(head.seq)
            .bind(head.hash.as_str())
            .bind(head.mac.as_str())
            .execute(self.audit_ready().await?)
            .await
            .map_err(db)?;
        Ok(())
    }
}

impl SqliteLedger {
    pub(crate) async fn audit_append(&self, batch: &AuditBatch) -> Result<(), LedgerError> {
        if batch.rows.is_empty() {
            return Ok(());
        }
        if let Some(writer) = self.audit_writer() {
            self.ready().await?;
            return writer.append_audit(batch).await;
        }
        // SQLite has no data-modifying WITH: the rows and the head are two statements in one
        // write transaction. Not one multi-statement execution: when a statement of such an
        // execution fails (a dropped table), sqlx-sqlite 0.9.0 can panic in its worker thread
        // while resetting it ("There should be an error"), and the pool's one connection then
        // never answers again (`write_is_refused_when_its_audit_row_cannot_be_written` hung).
        let mut tx = self.begin_write().await?;
        let mut rows = QueryBuilder::<sqlx::Sqlite>::new("");
        push_rows!(rows, batch);
        rows.build()
            .persistent(reusable(batch))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let mut head = QueryBuilder::<sqlx::Sqlite>::new("");
        push_head!(head, batch);
        head.build().execute(&mut *tx).await.map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(())
    }
}

/// Only a lone row's statement is kept prepared: it is the common one when calls are few, and
/// each batch size is a statement of its own, so caching every size held up to a hundred
/// large prepared inserts per connection (RSS 40 → 63 MiB under `bench/http`).
fn reusable(batch: &AuditBatch) -> bool {
    batch.rows.len() == 1
}

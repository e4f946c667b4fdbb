//! Appending a chained batch of audit rows: the rows and the chain's new head, atomically.
//! Postgres runs it as one statement, one round trip (the rows' insert in a data-modifying
//! `WITH`, the head's upsert as the statement); SQLite as one multi-statement execution from
//! `BEGIN IMMEDIATE` to `COMMIT`: one hand-off to the connection's worker thread instead of
//! four (begin, rows, head, commit). Each hand-off wakes that thread; under `bench/http`'s 64
//! clients those wake-ups were half the process's context switches.

use care_core::ledger::{AuditBatch, LedgerError};
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
        // One statement is one implicit transaction: both parts or neither.
        let mut q = QueryBuilder::<sqlx::Postgres>::new("WITH appended AS (");
        push_rows!(q, batch);
        q.push(") ");
        push_head!(q, batch);
        q.build()
            .persistent(reusable(batch))
            .execute(self.ready().await?)
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
        // SQLite has no data-modifying WITH: the rows and the head are two statements inside
        // an explicit write transaction, all sent as one execution.
        let mut conn = self.ready().await?.acquire().await.map_err(db)?;
        let mut q = QueryBuilder::<sqlx::Sqlite>::new("BEGIN IMMEDIATE; ");
        push_rows!(q, batch);
        q.push("; ");
        push_head!(q, batch);
        q.push("; COMMIT");
        let appended = q
            .build()
            .persistent(reusable(batch))
            .execute(&mut *conn)
            .await;
        if let Err(e) = appended {
            // Execution stops at the failing statement, inside the transaction it began: end
            // it here, or the pool's one connection would carry it into the next write. (No
            // transaction open, when BEGIN itself failed, makes this fail harmlessly.)
            if let Err(rollback) = sqlx::query("ROLLBACK").execute(&mut *conn).await {
                tracing::debug!(error = %rollback, "audit append: nothing to roll back");
            }
            return Err(db(e));
        }
        Ok(())
    }
}

/// Only a lone row's statement is kept prepared: it is the common one when calls are few, and
/// each batch size is a statement of its own, so caching every size held up to a hundred
/// large prepared inserts per connection (RSS 40 → 63 MiB under `bench/http`).
fn reusable(batch: &AuditBatch) -> bool {
    batch.rows.len() == 1
}

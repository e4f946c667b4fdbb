//! [`ClientStore`] for both backends: the HTTP clients (migration 0004) and each client's
//! sliding call window. The window is one row per counted call; a call is counted inside a
//! transaction that first locks the client (Postgres `FOR UPDATE` on its row, SQLite's
//! `BEGIN IMMEDIATE`), so replicas sharing the ledger never both take the last slot. Times
//! come from the ledger's clock, as everywhere else in the ledger.

use std::time::Duration;

use care_core::clients::{ClientRow, ClientStore, NewClient, RATE_WINDOW, RateVerdict};
use care_core::ledger::LedgerError;

use crate::error::{corrupt, db};
use crate::rows::time;
use crate::{PostgresLedger, SqliteLedger};

macro_rules! client_columns {
    () => {
        "name, role, rate_per_min, key_id, secret_sha256, created_at, rotated_at, revoked_at"
    };
}

#[derive(sqlx::FromRow)]
struct ClientRecord {
    name: String,
    role: String,
    rate_per_min: i64,
    key_id: String,
    secret_sha256: String,
    created_at: i64,
    rotated_at: Option<i64>,
    revoked_at: Option<i64>,
}

fn client(rec: ClientRecord) -> Result<ClientRow, LedgerError> {
    Ok(ClientRow {
        rate_per_minute: u32::try_from(rec.rate_per_min).map_err(|_| corrupt("rate_per_min"))?,
        created_at: time(rec.created_at)?,
        rotated_at: rec.rotated_at.map(time).transpose()?,
        revoked_at: rec.revoked_at.map(time).transpose()?,
        name: rec.name,
        role: rec.role,
        key_id: rec.key_id,
        secret_digest: rec.secret_sha256,
    })
}

fn window_ms() -> i64 {
    i64::try_from(RATE_WINDOW.as_millis()).unwrap_or(i64::MAX)
}

/// `impl_client_store!(Type, "ledger clock in ms", " FOR UPDATE" or "")`.
macro_rules! impl_client_store {
    ($ty:ty, $now:literal, $lock:literal) => {
        #[async_trait::async_trait]
        impl ClientStore for $ty {
            async fn add_client(&self, new: &NewClient) -> Result<(), LedgerError> {
                sqlx::query(concat!(
                    "INSERT INTO clients (name, role, rate_per_min, key_id, secret_sha256, \
                     created_at) VALUES ($1, $2, $3, $4, $5, ",
                    $now,
                    ")"
                ))
                .bind(&new.name)
                .bind(new.role.as_str())
                .bind(i64::from(new.rate_per_minute))
                .bind(&new.key_id)
                .bind(&new.secret_digest)
                .execute(self.ready().await?)
                .await
                .map_err(db)?;
                Ok(())
            }

            async fn list_clients(&self) -> Result<Vec<ClientRow>, LedgerError> {
                let recs: Vec<ClientRecord> = sqlx::query_as(concat!(
                    "SELECT ",
                    client_columns!(),
                    " FROM clients ORDER BY name"
                ))
                .fetch_all(self.ready().await?)
                .await
                .map_err(db)?;
                recs.into_iter().map(client).collect()
            }

            async fn client_by_key(&self, key_id: &str) -> Result<Option<ClientRow>, LedgerError> {
                let rec: Option<ClientRecord> = sqlx::query_as(concat!(
                    "SELECT ",
                    client_columns!(),
                    " FROM clients WHERE key_id = $1"
                ))
                .bind(key_id)
                .fetch_optional(self.ready().await?)
                .await
                .map_err(db)?;
                rec.map(client).transpose()
            }

            async fn revoke_client(&self, name: &str) -> Result<bool, LedgerError> {
                let done = sqlx::query(concat!(
                    "UPDATE clients SET revoked_at = ",
                    $now,
                    " WHERE name = $1 AND revoked_at IS NULL"
                ))
                .bind(name)
                .execute(self.ready().await?)
                .await
                .map_err(db)?;
                Ok(done.rows_affected() == 1)
            }

            async fn rotate_client(
                &self,
                name: &str,
                key_id: &str,
                secret_digest: &str,
            ) -> Result<bool, LedgerError> {
                let done = sqlx::query(concat!(
                    "UPDATE clients SET key_id = $2, secret_sha256 = $3, rotated_at = ",
                    $now,
                    " WHERE name = $1 AND revoked_at IS NULL"
                ))
                .bind(name)
                .bind(key_id)
                .bind(secret_digest)
                .execute(self.ready().await?)
                .await
                .map_err(db)?;
                Ok(done.rows_affected() == 1)
            }

            async fn take_call(&self, name: &str) -> Result<RateVerdict, LedgerError> {
                let mut tx = self.begin_write().await?;
                let live: Option<(i64, i64)> = sqlx::query_as(concat!(
                    "SELECT rate_per_min, ",
                    $now,
                    " AS db_now FROM clients WHERE name = $1 AND revoked_at IS NULL",
                    $lock
                ))
                .bind(name)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
                let Some((ceiling, now)) = live else {
                    return Ok(RateVerdict::Gone);
                };
                let since = now - window_ms();
                sqlx::query("DELETE FROM client_calls WHERE client = $1 AND at <= $2")
                    .bind(name)
                    .bind(since)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                let (count, oldest): (i64, Option<i64>) =
                    sqlx::query_as("SELECT COUNT(*), MIN(at) FROM client_calls WHERE client = $1")
                        .bind(name)
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(db)?;
                let verdict = if count < ceiling {
                    sqlx::query("INSERT INTO client_calls (client, at) VALUES ($1, $2)")
                        .bind(name)
                        .bind(now)
                        .execute(&mut *tx)
                        .await
                        .map_err(db)?;
                    RateVerdict::Allowed
                } else {
                    let leaves = oldest.unwrap_or(now) + window_ms() - now;
                    RateVerdict::Limited {
                        retry_after: Duration::from_millis(
                            u64::try_from(leaves.max(1)).unwrap_or(1),
                        ),
                    }
                };
                tx.commit().await.map_err(db)?;
                Ok(verdict)
            }
        }
    };
}

// The ledger clock expressions are those of `sql::POSTGRES` / `sql::SQLITE`.
impl_client_store!(
    PostgresLedger,
    "(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT",
    " FOR UPDATE"
);
impl_client_store!(
    SqliteLedger,
    "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
    ""
);

//! [`ClientStore`] for both backends: the HTTP clients (migration 0004) and each client's
//! sliding call window. The window holds one row per lease of slots (migration 0006), counted
//! until the lease's end; a lease is reserved inside a transaction that first locks the client
//! (Postgres `FOR UPDATE` on its row, SQLite's `BEGIN IMMEDIATE`), so replicas sharing the
//! ledger never both take the last slot. Times come from the ledger's clock, as everywhere
//! else in the ledger.

use std::time::Duration;

use care_core::clients::{ClientRow, ClientStore, NewClient, RATE_WINDOW, Reservation, Settle};
use care_core::ledger::LedgerError;

use crate::error::{corrupt, db};
use crate::rows::time;
use crate::{PostgresLedger, SqliteLedger};

macro_rules! client_columns {
    () => {
        "name, role, rate_per_min, key_id, secret_sha256, created_at, rotated_at, revoked_at"
    };
}

/// One client (revoked or not) by its token's key id.
pub(crate) const CLIENT_BY_KEY: &str = concat!(
    "SELECT ",
    client_columns!(),
    " FROM clients WHERE key_id = $1"
);

#[derive(sqlx::FromRow)]
pub(crate) struct ClientRecord {
    name: String,
    role: String,
    rate_per_min: i64,
    key_id: String,
    secret_sha256: String,
    created_at: i64,
    rotated_at: Option<i64>,
    revoked_at: Option<i64>,
}

impl ClientRecord {
    /// The same record read through rusqlite (SQLite's hot reads, `sqlite_read`).
    pub(crate) fn from_sqlite(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(ClientRecord {
            name: row.get(0)?,
            role: row.get(1)?,
            rate_per_min: row.get(2)?,
            key_id: row.get(3)?,
            secret_sha256: row.get(4)?,
            created_at: row.get(5)?,
            rotated_at: row.get(6)?,
            revoked_at: row.get(7)?,
        })
    }
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
                self.read_client_by_key(key_id)
                    .await?
                    .map(client)
                    .transpose()
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

            async fn reserve(
                &self,
                name: &str,
                lease: &str,
                wanted: u32,
                hold: Duration,
                settle: Option<&Settle>,
            ) -> Result<Reservation, LedgerError> {
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
                    return Ok(Reservation::Gone);
                };
                if let Some(settle) = settle {
                    // Only the used slots stay, counted no later than now (every call made
                    // under the lease was made by now).
                    sqlx::query(
                        "UPDATE client_calls SET \
                         slots = CASE WHEN slots < $3 THEN slots ELSE $3 END, \
                         at = CASE WHEN at < $4 THEN at ELSE $4 END \
                         WHERE client = $1 AND lease = $2",
                    )
                    .bind(name)
                    .bind(&settle.lease)
                    .bind(i64::from(settle.used))
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                }
                let since = now - window_ms();
                sqlx::query("DELETE FROM client_calls WHERE client = $1 AND (at <= $2 OR slots = 0)")
                    .bind(name)
                    .bind(since)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                let (taken, oldest): (i64, Option<i64>) = sqlx::query_as(
                    "SELECT CAST(COALESCE(SUM(slots), 0) AS BIGINT), MIN(at) \
                     FROM client_calls WHERE client = $1",
                )
                .bind(name)
                .fetch_one(&mut *tx)
                .await
                .map_err(db)?;
                let free = ceiling - taken;
                let verdict = if free > 0 {
                    let slots = free.min(i64::from(wanted.max(1)));
                    let ends = now + i64::try_from(hold.as_millis()).unwrap_or(i64::MAX / 4);
                    sqlx::query(
                        "INSERT INTO client_calls (client, at, slots, lease) VALUES ($1, $2, $3, $4)",
                    )
                    .bind(name)
                    .bind(ends)
                    .bind(slots)
                    .bind(lease)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                    Reservation::Granted {
                        slots: u32::try_from(slots).unwrap_or(1),
                    }
                } else {
                    let leaves = oldest.unwrap_or(now) + window_ms() - now;
                    Reservation::Limited {
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

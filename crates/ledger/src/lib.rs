//! The only sqlx crate of care-mcp: the [`care_core::ledger::Ledger`] trait implemented for
//! Postgres and SQLite, with the schema migrations embedded at compile time.
//!
//! # Layout
//! - [`connect`]: picks the backend from `DATABASE_URL` (SQLite file by default).
//! - [`postgres`] / [`sqlite`]: the two ledgers; each applies its migrations lazily, so a
//!   database that is down at start only makes calls fail (`Unavailable`) until it returns.
//! - `pg_leases`: Postgres connections lent per statement, without sqlx's ping on return.
//! - `pg_batch`: concurrent Postgres approval reads and consumes, one statement per batch.
//! - `clients`: the HTTP clients and their sliding call windows (`care_core::clients::ClientStore`).
//! - `shared`: the `Ledger` implementation both backends expand, written once.
//! - `audit_store`: the audit trail's chained batch append and the operators' reads.
//! - `sql`: statement text; the per-backend `Dialect` reads the ledger's own clock.
//! - `rows`: row records and their conversion to `care_core::ledger` types.
//! - `sqlite_read`: SQLite's hot reads on the calling thread (rusqlite, its own connection).
//! - `sqlite_write`: SQLite's per-call writes (audit batches, consume, outcome) on a thread of
//!   their own (rusqlite, its own connection).
//! - `sqlite_group`: the writer thread's group commit (queued jobs in one transaction).
//! - `sqlite_checkpoint`: SQLite's WAL checkpoints on a thread of their own, off the commit path.
//! - `rules`: the approval state rules both backends apply (decisions, consume refusals).
//! - `error`: sqlx errors mapped to `LedgerError`.
//! - [`test_support`] (feature `test-support`): throwaway databases for tests.

mod audit_append;
mod audit_store;
mod clients;
mod connect;
mod error;
mod ledger_thread;
mod pg_batch;
mod pg_leases;
pub mod postgres;
mod rows;
mod rules;
mod shared;
mod sql;
pub mod sqlite;
mod sqlite_checkpoint;
mod sqlite_group;
mod sqlite_read;
mod sqlite_write;
#[cfg(feature = "test-support")]
pub mod test_support;

pub use connect::{ConnectError, connect};
pub use postgres::PostgresLedger;
pub use sqlite::SqliteLedger;

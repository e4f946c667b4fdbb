//! Picks the ledger backend from `DATABASE_URL`: unset means a SQLite file at the default
//! path, `sqlite:` a SQLite file, `postgres:`/`postgresql:` Postgres. Nothing here waits for
//! a database server: a Postgres that is down at start only makes calls fail until it returns.

use std::path::Path;
use std::sync::Arc;

use care_core::ledger::Ledger;

use crate::{PostgresLedger, SqliteLedger};

/// Why no ledger could be built. Configuration mistakes only; the URL is never echoed
/// (it may carry a password).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("DATABASE_URL must start with postgres://, postgresql:// or sqlite://")]
    UnsupportedScheme,
    #[error("DATABASE_URL is not a valid {backend} URL")]
    InvalidUrl { backend: &'static str },
    /// The directory of the SQLite file could not be created; the detail names the path.
    #[error("cannot create the SQLite ledger directory: {0}")]
    SqliteDir(String),
}

/// Builds the ledger named by `url` (the value of `DATABASE_URL`; `None` or blank means a
/// SQLite file at `default_sqlite_path`, parent directories created).
///
/// Neither backend is contacted here: each connects (SQLite: opens the file, checks or applies
/// the migrations) at its first use, so a start pays only for what its first call needs.
pub async fn connect(
    url: Option<&str>,
    default_sqlite_path: &Path,
) -> Result<Arc<dyn Ledger>, ConnectError> {
    let url = url.map(str::trim).filter(|u| !u.is_empty());
    match url {
        None => Ok(Arc::new(SqliteLedger::open(default_sqlite_path)?)),
        Some(u) if u.starts_with("sqlite:") => Ok(Arc::new(SqliteLedger::from_url(u)?)),
        Some(u) if u.starts_with("postgres://") || u.starts_with("postgresql://") => {
            Ok(Arc::new(PostgresLedger::from_url(u)?))
        }
        Some(_) => Err(ConnectError::UnsupportedScheme),
    }
}

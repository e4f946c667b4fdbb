//! Mapping of sqlx errors to `LedgerError`. The detail goes to stderr only, never to a caller.

use care_core::ledger::LedgerError;

/// Any database failure is `Unavailable`, except a uniqueness violation (`Conflict`).
pub(crate) fn db(err: sqlx::Error) -> LedgerError {
    match &err {
        sqlx::Error::Database(e) if e.is_unique_violation() => {
            LedgerError::Conflict("unique constraint violated".to_owned())
        }
        sqlx::Error::PoolTimedOut => {
            LedgerError::Unavailable("timed out waiting for a database connection".to_owned())
        }
        _ => LedgerError::Unavailable(err.to_string()),
    }
}

pub(crate) fn migrate(err: sqlx::migrate::MigrateError) -> LedgerError {
    LedgerError::Unavailable(format!("migrations: {err}"))
}

/// A stored value the types cannot represent (a row written by something else than this crate).
pub(crate) fn corrupt(what: &str) -> LedgerError {
    LedgerError::Unavailable(format!("unreadable ledger row: {what}"))
}

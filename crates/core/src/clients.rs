//! HTTP clients: who may call over Streamable HTTP, with which role and ceiling. Tokens are
//! minted here and only their digest is stored; the [`ClientStore`] (implemented by
//! `care-ledger`, so every replica sharing a ledger sees the same clients) holds the rows and
//! each client's sliding call window, which a replica's [`CallMeter`] draws on in leases.

mod meter;

pub use meter::{CallMeter, LEASE_HOLD};

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::catalog::Role;
use crate::ledger::LedgerError;

/// Calls per sliding 60-second window when `clients add` names no `--rate`.
pub const DEFAULT_RATE_PER_MINUTE: u32 = 600;
/// The window a ceiling counts over.
pub const RATE_WINDOW: Duration = Duration::from_secs(60);
/// Every token starts with this, so a leaked one is recognisable (and scannable).
pub const TOKEN_PREFIX: &str = "care_";

/// A client name: 1..=64 of `[a-z0-9._-]`, starting with a letter or digit. It is written
/// in audit rows and logs, so nothing else is accepted.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// A freshly minted credential: the token is shown once, the rest is stored.
#[derive(Clone)]
pub struct Minted {
    /// `care_<key id>_<secret>`: what the client sends as `Authorization: Bearer`.
    pub token: String,
    /// Public half: finds the row.
    pub key_id: String,
    /// Hex SHA-256 of the secret half: the only trace of the secret in the ledger.
    pub secret_digest: String,
}

impl std::fmt::Debug for Minted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Minted")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Mints a token: an 8-byte key id and a 32-byte secret from the OS-seeded CSPRNG.
pub fn mint() -> Minted {
    let key_id = hex::encode(rand::random::<[u8; 8]>());
    let secret = hex::encode(rand::random::<[u8; 32]>());
    Minted {
        token: format!("{TOKEN_PREFIX}{key_id}_{secret}"),
        secret_digest: digest(&secret),
        key_id,
    }
}

fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Splits a presented token into key id and secret; `None` for anything not shaped like one.
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(TOKEN_PREFIX)?;
    let (key_id, secret) = rest.split_once('_')?;
    let hex16 = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hex16(key_id, 16) && hex16(secret, 64)).then_some((key_id, secret))
}

/// Whether `secret` is the one whose digest the row holds, compared in constant time.
pub fn secret_matches(row: &ClientRow, secret: &str) -> bool {
    let presented = digest(secret);
    bool::from(presented.as_bytes().ct_eq(row.secret_digest.as_bytes()))
}

/// What `clients add` stores.
#[derive(Debug, Clone)]
pub struct NewClient {
    pub name: String,
    pub role: Role,
    pub rate_per_minute: u32,
    pub key_id: String,
    pub secret_digest: String,
}

/// One client as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientRow {
    pub name: String,
    pub role: String,
    pub rate_per_minute: u32,
    #[serde(skip)]
    pub key_id: String,
    #[serde(skip)]
    pub secret_digest: String,
    pub created_at: DateTime<Utc>,
    pub rotated_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// The answer of [`ClientStore::take_call`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateVerdict {
    /// Counted in the window; go on.
    Allowed,
    /// The window is full; the oldest call in it leaves after this long.
    Limited { retry_after: Duration },
    /// No such client, or revoked since the request was authenticated.
    Gone,
}

/// The answer of [`ClientStore::reserve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    /// This many slots (at least one, at most what was asked) are the lease's to hand out.
    Granted { slots: u32 },
    /// The window is full; the oldest slot in it leaves after this long.
    Limited { retry_after: Duration },
    /// No such client, or revoked.
    Gone,
}

/// A replica's earlier lease, given back when it asks for the next one: only the `used`
/// slots stay counted, and no later than now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settle {
    pub lease: String,
    pub used: u32,
}

/// The clients table and the call windows. Every method is one statement or one transaction,
/// so replicas sharing a ledger agree.
#[async_trait]
pub trait ClientStore: Send + Sync {
    /// Stores a new client; `Conflict` when the name (revoked or not) or key id is taken.
    async fn add_client(&self, new: &NewClient) -> Result<(), LedgerError>;
    /// Every client, revoked ones included, by name.
    async fn list_clients(&self) -> Result<Vec<ClientRow>, LedgerError>;
    /// The client holding this key id (revoked or not).
    async fn client_by_key(&self, key_id: &str) -> Result<Option<ClientRow>, LedgerError>;
    /// Marks the client revoked; false when there is no live client of that name.
    async fn revoke_client(&self, name: &str) -> Result<bool, LedgerError>;
    /// Replaces a live client's credential; false when there is no live client of that name.
    async fn rotate_client(
        &self,
        name: &str,
        key_id: &str,
        secret_digest: &str,
    ) -> Result<bool, LedgerError>;
    /// Reserves up to `wanted` slots of the client's sliding window for a lease named `lease`
    /// that lasts `hold`: the slots count in the window until the lease's end plus the window,
    /// so every call made under the lease is covered. `settle` first gives back the unused
    /// part of this replica's previous lease. Serialised per client across processes (a row
    /// lock on Postgres, the write lock on SQLite), so the ceiling holds for replicas sharing
    /// the ledger.
    async fn reserve(
        &self,
        name: &str,
        lease: &str,
        wanted: u32,
        hold: Duration,
        settle: Option<&Settle>,
    ) -> Result<Reservation, LedgerError>;

    /// Counts one call in the window (a lease of one slot that ends now).
    async fn take_call(&self, name: &str) -> Result<RateVerdict, LedgerError> {
        let lease = hex::encode(rand::random::<[u8; 8]>());
        Ok(
            match self.reserve(name, &lease, 1, Duration::ZERO, None).await? {
                Reservation::Granted { .. } => RateVerdict::Allowed,
                Reservation::Limited { retry_after } => RateVerdict::Limited { retry_after },
                Reservation::Gone => RateVerdict::Gone,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn row(minted: &Minted) -> ClientRow {
        ClientRow {
            name: "a".into(),
            role: "lead".into(),
            rate_per_minute: 1,
            key_id: minted.key_id.clone(),
            secret_digest: minted.secret_digest.clone(),
            created_at: Utc::now(),
            rotated_at: None,
            revoked_at: None,
        }
    }

    #[test]
    fn a_minted_token_parses_and_matches_only_its_own_row() {
        let a = mint();
        let b = mint();
        let (key, secret) = parse_token(&a.token).unwrap();
        assert_eq!(key, a.key_id);
        assert!(secret_matches(&row(&a), secret));
        assert!(!secret_matches(&row(&b), secret));
        assert!(
            !a.secret_digest.contains(secret),
            "the secret is not stored"
        );
        assert_ne!(a.token, b.token);
    }

    #[test]
    fn malformed_tokens_are_refused() {
        let a = mint();
        for bad in [
            "",
            "care_",
            &a.token[..a.token.len() - 1],
            &a.token.replace("care_", "xare_"),
            &format!("{}0", a.token),
            &a.token.replace('_', "-"),
        ] {
            assert!(parse_token(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn names_are_audit_safe() {
        for ok in ["agent-1", "a", "reviews.bot_2"] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "-a", "A", "a b", "a\n", &"x".repeat(65), "é"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}

//! Errors of the Nostr channel. Messages name variables and problems, never secret values.

/// Why the channel could not be built, started or used.
#[derive(Debug, thiserror::Error)]
pub enum NostrError {
    /// A required setting is absent; names the variable(s).
    #[error("missing configuration: {0}")]
    Missing(String),
    #[error("CARE_NOSTR_SECRET_KEY is not an nsec or 64-character hex secret key")]
    SecretKey,
    /// A relay URL the client cannot use (index is 1-based, the value is not echoed).
    #[error("relay entry {0} is not a usable ws:// or wss:// URL")]
    RelayUrl(usize),
    #[error("the relay client failed: {0}")]
    Client(String),
    /// No relay accepted the event (or none was connected).
    #[error("no relay accepted the event: {0}")]
    Unavailable(String),
    #[error("key file: {0}")]
    KeyFile(String),
}

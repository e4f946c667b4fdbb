//! The approval channel: where approval cards are shown to approvers and where their signed
//! decisions come from (a Nostr group chat in production; see the `care-nostr` crate).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Everything an approver needs to see to decide, in plain words.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalCard {
    pub approval_id: String,
    /// The external-write tool.
    pub action: String,
    /// The business consequence, rendered by the write tool's domain (includes the full text).
    pub summary: String,
    /// The agent's reason, if it gave one.
    pub reason: Option<String>,
    pub payload_hash: String,
    pub requested_by_role: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A card signed and ready to publish: its id is known before anyone can see it, so the
/// ledger row can name it before a reaction can arrive.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedCard {
    pub event_id: String,
    /// The signed event as JSON, as it will be published.
    pub event_json: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// No relay accepted the event, or none could be reached.
    #[error("approval channel unavailable: {0}")]
    Unavailable(String),
    #[error("approval card could not be signed: {0}")]
    Signing(String),
}

#[async_trait]
pub trait ApprovalChannel: Send + Sync + std::fmt::Debug {
    fn sign_card(&self, card: &ApprovalCard) -> Result<SignedCard, ChannelError>;

    /// Publishes the card; `Ok` only when at least one relay accepted it.
    async fn publish_card(&self, card: &SignedCard) -> Result<(), ChannelError>;

    /// When the live subscription cannot be trusted (relay outage), fetches the reactions to
    /// one card and applies them; a no-op while the subscription is healthy.
    async fn sync_if_degraded(
        &self,
        approval_id: &str,
        card_event_id: &str,
    ) -> Result<(), ChannelError>;
}

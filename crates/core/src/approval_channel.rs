//! The approval channel: where approval cards are shown to approvers and where their signed
//! decisions come from (a Nostr group chat in production; see the `care-nostr` crate).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::ledger::ApprovalRow;

/// One fact about the write's target, shown on the card as `label: value` on one line (e.g.
/// `Replaces an existing response: yes`). Values may hold third-party text (an app name, a
/// topic title): the card shows them escaped, on their line, after the server's label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardFact {
    pub label: String,
    pub value: String,
}

impl CardFact {
    pub fn new(label: impl Into<String>, value: impl Into<String>) -> Self {
        CardFact {
            label: label.into(),
            value: value.into(),
        }
    }
}

/// What a write tool's plan says the card must show: the domain's words, laid out by the card
/// renderer (the server's layout), never by the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardContent {
    /// What the action does, in a few plain words (e.g. `reply to an App Store review`).
    pub title: String,
    /// The object the write acts on, in plain words (e.g. `review rev-1 of Demo Care (KOR)`).
    pub target: String,
    /// Further facts about the target the approver should weigh, in order.
    pub facts: Vec<CardFact>,
    /// The agent-written text that will be sent, exactly (a reply's body), if the write sends one.
    pub text: Option<String>,
}

impl CardContent {
    /// One line for logs and agents: `title: target`.
    pub fn one_line(&self) -> String {
        format!("{}: {}", self.title, self.target)
    }
}

/// Everything an approver needs to see to decide, in plain words.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalCard {
    pub approval_id: String,
    /// The external-write tool.
    pub action: String,
    /// Title, target, facts and text, from the write tool's plan.
    pub content: CardContent,
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
    /// The card's text as approvers will read it (kept on the ledger row).
    pub text: String,
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

    /// For `approval_status`: when the live subscription cannot vouch for this row (relay
    /// outage, a card older than the subscription, approvers this process does not follow),
    /// fetches the card's reactions and records them. Otherwise it does not wait on the
    /// channel; it may look the reactions up in the background for a later read (those the
    /// subscription cannot see).
    async fn refresh(&self, row: &ApprovalRow) -> Result<(), ChannelError>;

    /// Right before a consume: reads the card's reactions from the relays (bounded in time)
    /// and records every decision the ledger does not have yet. `Err` when no relay answered
    /// completely: the caller must not consume.
    async fn confirm(&self, row: &ApprovalRow) -> Result<(), ChannelError>;
}

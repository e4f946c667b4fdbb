//! The Nostr approval channel of care-mcp: approval cards go out as signed NIP-29 group chat
//! messages (kind 9), approvers' decisions come back as signed NIP-25 reactions (kind 7).
//!
//! Nothing a relay says is trusted: every reaction is re-verified here (signature, author,
//! target card, time window) before it reaches `ApprovalPolicy::decide`, and the signed event is
//! kept as evidence that `care-mcp approvals verify` re-checks offline.
//!
//! # Layout
//! - [`settings`]: the channel's configuration, parsed here: approvers, threshold, the server's
//!   key, relays, group (`CARE_APPROVERS`, `CARE_APPROVAL_THRESHOLD`, `CARE_NOSTR_*`,
//!   `CARE_APPROVAL_CHANNEL`).
//! - [`card`]: the card event: plain-words text, machine tags, signing.
//! - [`reaction`]: reaction content mapping, the pure evaluator, building a reaction.
//! - [`gatekeeper`]: known approver keys and the bounded-rate refusal log (no ledger work
//!   for forged or stranger reactions).
//! - [`apply`]: one reaction event applied to the ledger through the row's policy.
//! - [`fetch`]: reading one card's reactions from a relay up to its EOSE.
//! - [`evidence`]: offline re-verification of stored decisions.
//! - [`health`]: whether the live subscription can be trusted, per relay.
//! - [`listener`]: the live subscription tasks (one per relay).
//! - [`channel`]: [`NostrChannel`], the `ApprovalChannel` implementation.
//! - [`deferred`]: [`DeferredChannel`], a serving role's channel, built and connected after
//!   the process has started answering.
//! - [`publish`]: one-shot publishing for the CLI (`care-mcp approvals approve|reject`).
//! - [`keys`]: key files and key generation for approvers.
//! - `relay` (feature `relay`): an in-process relay for tests and the sandbox.

pub mod apply;
pub mod card;
pub mod channel;
pub mod deferred;
pub mod error;
pub mod evidence;
pub mod fetch;
pub mod gatekeeper;
pub mod health;
pub mod keys;
pub mod listener;
pub mod publish;
pub mod reaction;
#[cfg(feature = "relay")]
pub mod relay;
pub mod settings;

pub use channel::NostrChannel;
pub use deferred::DeferredChannel;
pub use error::NostrError;
pub use settings::{ChannelOptions, ChannelSettings, NostrSettings};

/// The Nostr types callers need (keys, events), so they need no direct `nostr` dependency.
pub use nostr_sdk::{Event, EventId, JsonUtil, Keys, PublicKey, ToBech32};

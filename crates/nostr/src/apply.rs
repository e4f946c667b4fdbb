//! One reaction event applied to the ledger: find the approval its card belongs to, evaluate it
//! against that row, and record a counted decision through `ApprovalPolicy::decide` with the
//! signed event as evidence. Used by the live subscription and by fetch-on-read alike.

use care_core::approvals::{ApprovalPolicy, DecisionRefused};
use care_core::ledger::{ApprovalStatus, Ledger, LedgerError};
use chrono::{DateTime, Utc};
use nostr_sdk::{Event, JsonUtil};

use crate::reaction::{self, CardWindow};

/// What became of one reaction.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// Recorded; the row is now in `status`.
    Counted {
        approval_id: String,
        status: ApprovalStatus,
    },
    /// Aimed at one of our cards but does not count (the reason is for logs).
    Refused { approval_id: String, reason: String },
    /// Not a reaction to any card of ours (other group traffic, discarded cards).
    NotOurs,
}

/// Applies `event`. `Err` only for a ledger failure, so the caller can retry later.
pub async fn apply_reaction(
    ledger: &dyn Ledger,
    policy: &ApprovalPolicy,
    event: &Event,
    now: DateTime<Utc>,
) -> Result<Applied, LedgerError> {
    let Ok(target) = reaction::target(event) else {
        return Ok(Applied::NotOurs);
    };
    let Some(approval_id) = ledger.approval_id_by_card_event(&target.to_hex()).await? else {
        return Ok(Applied::NotOurs);
    };
    let Some(row) = ledger.approval(&approval_id, now).await? else {
        return Ok(Applied::NotOurs);
    };
    let card = CardWindow {
        event_id: target,
        created_at: row.created_at,
        expires_at: row.expires_at,
    };
    let refused = |reason: String| {
        tracing::warn!(
            approval_id = %row.id,
            event_id = %event.id,
            author = %event.pubkey,
            reason = %reason,
            "reaction refused"
        );
        Ok(Applied::Refused {
            approval_id: row.id.clone(),
            reason,
        })
    };
    let (approver, decision) = match reaction::evaluate(event, &card, policy) {
        Ok(counted) => counted,
        Err(refusal) => return refused(refusal.to_string()),
    };
    match policy
        .decide(ledger, &row.id, &approver, decision, &event.as_json(), now)
        .await
    {
        Ok(after) => {
            tracing::info!(
                approval_id = %row.id,
                event_id = %event.id,
                approver = %approver,
                decision = decision.as_str(),
                status = after.status.as_str(),
                "reaction counted"
            );
            Ok(Applied::Counted {
                approval_id: row.id.clone(),
                status: after.status,
            })
        }
        Err(DecisionRefused::Ledger(e)) => Err(e),
        Err(other) => refused(other.to_string()),
    }
}

//! One reaction event applied to the ledger. The cheap checks come first and need no ledger:
//! the event's id and signature, its kind and target, and whether its author is an approver
//! this process knows of. Only then is the approval found by its card, the reaction evaluated
//! against that row's own policy (approvers, threshold, time window), and a counted decision
//! recorded through `ApprovalPolicy::decide` with the signed event as evidence. Used by the
//! live subscription, fetch-on-read and the confirmation before a consume alike.

use care_core::approvals::{ApprovalPolicy, DecisionRefused};
use care_core::ledger::{ApprovalStatus, Ledger, LedgerError};
use nostr_sdk::{Event, JsonUtil};

use crate::gatekeeper::{KnownApprovers, RefusalLog};
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
    /// Refused before any ledger query: forged, not a reaction, or by a key no approval of
    /// ours lists.
    Dropped { reason: String },
    /// Not a reaction to any card of ours (other group traffic, discarded cards).
    NotOurs,
}

/// What applying a reaction needs besides the ledger.
#[derive(Debug)]
pub struct Judge<'a> {
    pub policy: &'a ApprovalPolicy,
    pub known: &'a KnownApprovers,
    pub refusals: &'a RefusalLog,
}

impl Judge<'_> {
    fn dropped(&self, event: &Event, reason: String) -> Applied {
        if self.refusals.admit() {
            tracing::warn!(event_id = %event.id, author = %event.pubkey, reason = %reason, "reaction dropped");
        }
        Applied::Dropped { reason }
    }
}

/// Applies `event`. `Err` only for a ledger failure, so the caller can retry later.
pub async fn apply_reaction(
    ledger: &dyn Ledger,
    judge: &Judge<'_>,
    event: &Event,
) -> Result<Applied, LedgerError> {
    let target = match reaction::verify_shape(event) {
        Ok(target) => target,
        Err(refusal) => return Ok(judge.dropped(event, refusal.to_string())),
    };
    if !judge.known.knows(&event.pubkey.to_hex()) {
        return Ok(judge.dropped(event, reaction::Refusal::NotAnApprover.to_string()));
    }
    let Some(approval_id) = ledger.approval_id_by_card_event(&target.to_hex()).await? else {
        return Ok(Applied::NotOurs);
    };
    let Some(row) = ledger.approval(&approval_id).await? else {
        return Ok(Applied::NotOurs);
    };
    let card = CardWindow {
        event_id: target,
        created_at: row.created_at,
        expires_at: row.expires_at,
    };
    let refused = |reason: String| {
        if judge.refusals.admit() {
            tracing::warn!(
                approval_id = %row.id,
                event_id = %event.id,
                author = %event.pubkey,
                reason = %reason,
                "reaction refused"
            );
        }
        Ok(Applied::Refused {
            approval_id: row.id.clone(),
            reason,
        })
    };
    let row_policy = judge.policy.of_row(&row);
    let (approver, decision) =
        match reaction::evaluate(event, &card, &row_policy, judge.policy.server_key()) {
            Ok(counted) => counted,
            Err(refusal) => return refused(refusal.to_string()),
        };
    match judge
        .policy
        .decide(ledger, &row, &approver, decision, &event.as_json())
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

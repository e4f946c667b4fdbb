//! The approval state rules both backends apply: when a row lapses, what a decision does,
//! and why a consume was refused. Pure functions, so both backends decide alike.

use care_core::ledger::{ApprovalRow, ApprovalStatus, ConsumeError, DecideError, Decision};
use chrono::{DateTime, Utc};

/// A `pending` or `approved` row at or past `expires_at`: it must be stored as `expired`.
pub(crate) fn lapsed(row: &ApprovalRow, now: DateTime<Utc>) -> bool {
    matches!(
        row.status,
        ApprovalStatus::Pending | ApprovalStatus::Approved
    ) && row.expires_at <= now
}

/// Why a decision cannot be recorded on this row, if it cannot. A rejected row takes no
/// further decision: its decisions and evidence stay as they were.
pub(crate) fn decide_refusal(row: &ApprovalRow, now: DateTime<Utc>) -> Option<DecideError> {
    match row.status {
        ApprovalStatus::Consumed => Some(DecideError::Consumed),
        ApprovalStatus::Expired => Some(DecideError::Expired),
        ApprovalStatus::Rejected => Some(DecideError::Rejected),
        _ if lapsed(row, now) => Some(DecideError::Expired),
        _ => None,
    }
}

/// The status a decision moves the row to, given the decisions now on record (one per
/// approver, this one included). `None` leaves the status as it is.
pub(crate) fn status_after_decision(
    current: ApprovalStatus,
    decision: Decision,
    approvals: u64,
    rejections: u64,
    threshold: u32,
) -> Option<ApprovalStatus> {
    match (decision, current) {
        // A rejection wins over earlier approvals until the row is consumed.
        (Decision::Reject, ApprovalStatus::Pending | ApprovalStatus::Approved) => {
            Some(ApprovalStatus::Rejected)
        }
        // A threshold of 0 would approve without anyone: at least one approver is needed.
        (Decision::Approve, ApprovalStatus::Pending)
            if rejections == 0 && approvals >= u64::from(threshold.max(1)) =>
        {
            Some(ApprovalStatus::Approved)
        }
        _ => None,
    }
}

/// Why the conditional consume update matched nothing, read from the row as it is now.
pub(crate) fn consume_refusal(
    row: &ApprovalRow,
    action: &str,
    payload_hash: &str,
    checked_facts_json: &str,
    now: DateTime<Utc>,
) -> ConsumeError {
    let facts_differ = row
        .checked_facts_json
        .as_deref()
        .is_some_and(|f| f != checked_facts_json);
    match row.status {
        ApprovalStatus::Consumed => ConsumeError::Consumed,
        ApprovalStatus::Rejected => ConsumeError::Rejected,
        ApprovalStatus::Expired => ConsumeError::Expired,
        _ if lapsed(row, now) => ConsumeError::Expired,
        ApprovalStatus::Pending => ConsumeError::Pending,
        ApprovalStatus::Approved
            if row.action != action || row.payload_hash != payload_hash || facts_differ =>
        {
            ConsumeError::Mismatch
        }
        // Approved and matching now, so it was still pending when the update ran (a decision
        // landed in between): answer as of the update; the caller may retry.
        ApprovalStatus::Approved => ConsumeError::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApprovalStatus::*;

    #[test]
    fn reject_wins_until_consumed() {
        for s in [Pending, Approved] {
            assert_eq!(
                status_after_decision(s, Decision::Reject, 3, 1, 1),
                Some(Rejected)
            );
        }
        for s in [Rejected, Expired, Consumed] {
            assert_eq!(status_after_decision(s, Decision::Reject, 0, 1, 1), None);
        }
    }

    #[test]
    fn approve_needs_threshold_and_no_rejection() {
        assert_eq!(
            status_after_decision(Pending, Decision::Approve, 1, 0, 2),
            None
        );
        assert_eq!(
            status_after_decision(Pending, Decision::Approve, 2, 0, 2),
            Some(Approved)
        );
        assert_eq!(
            status_after_decision(Pending, Decision::Approve, 2, 1, 2),
            None
        );
        assert_eq!(
            status_after_decision(Pending, Decision::Approve, 0, 0, 0),
            None
        );
        assert_eq!(
            status_after_decision(Rejected, Decision::Approve, 5, 0, 1),
            None
        );
    }
}

//! Approver identities and the decision policy in front of the ledger: who may decide, the
//! server's own key never, and how many distinct approvers it takes.

use chrono::{DateTime, Utc};

use crate::ledger::{ApprovalRow, DecideError, Decision, DecisionRow, Ledger, LedgerError};

/// A Nostr public key in lower-case hex (x-only, 32 bytes).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApproverKey(String);

impl ApproverKey {
    /// Accepts `npub1…` or 64 hex characters.
    pub fn parse(text: &str) -> Option<Self> {
        nostr::PublicKey::parse(text.trim())
            .ok()
            .map(|k| ApproverKey(k.to_hex()))
    }

    /// The public key of a Nostr secret key given as `nsec1…` or hex.
    pub fn of_secret(secret: &str) -> Option<Self> {
        nostr::Keys::parse(secret.trim())
            .ok()
            .map(|k| ApproverKey(k.public_key().to_hex()))
    }

    pub fn hex(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ApproverKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a decision did not count.
#[derive(Debug, thiserror::Error)]
pub enum DecisionRefused {
    #[error("the key is not a configured approver")]
    NotAnApprover,
    #[error("the server's own key cannot approve its own requests")]
    ServerKey,
    #[error("approval not found")]
    NotFound,
    #[error("approval expired")]
    Expired,
    #[error("approval already consumed")]
    Consumed,
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Who may decide and how many approvals it takes.
#[derive(Debug, Clone)]
pub struct ApprovalPolicy {
    approvers: Vec<ApproverKey>,
    server_key: Option<ApproverKey>,
    threshold: u32,
}

impl ApprovalPolicy {
    pub fn new(
        approvers: Vec<ApproverKey>,
        server_key: Option<ApproverKey>,
        threshold: u32,
    ) -> Self {
        ApprovalPolicy {
            approvers,
            server_key,
            threshold: threshold.max(1),
        }
    }

    /// No approvers configured means nothing can ever be approved.
    pub fn has_approvers(&self) -> bool {
        self.approvers
            .iter()
            .any(|a| Some(a) != self.server_key.as_ref())
    }

    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    pub fn approvers(&self) -> &[ApproverKey] {
        &self.approvers
    }

    /// Whether `key` may decide: listed, and not the server itself (even if listed).
    pub fn check(&self, key: &ApproverKey) -> Result<(), DecisionRefused> {
        if self.server_key.as_ref() == Some(key) {
            return Err(DecisionRefused::ServerKey);
        }
        if !self.approvers.contains(key) {
            return Err(DecisionRefused::NotAnApprover);
        }
        Ok(())
    }

    /// `decide(approval_id, approver, decision, evidence)`: checks the key, then records the
    /// decision and applies the threshold in one ledger transaction.
    pub async fn decide(
        &self,
        ledger: &dyn Ledger,
        approval_id: &str,
        approver: &ApproverKey,
        decision: Decision,
        evidence: &str,
        now: DateTime<Utc>,
    ) -> Result<ApprovalRow, DecisionRefused> {
        self.check(approver)?;
        let row = DecisionRow {
            approval_id: approval_id.to_owned(),
            approver: approver.hex().to_owned(),
            decision,
            evidence: evidence.to_owned(),
            decided_at: now,
        };
        ledger
            .record_decision(&row, self.threshold, now)
            .await
            .map_err(|e| match e {
                DecideError::NotFound => DecisionRefused::NotFound,
                DecideError::Expired => DecisionRefused::Expired,
                DecideError::Consumed => DecisionRefused::Consumed,
                DecideError::Ledger(l) => DecisionRefused::Ledger(l),
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    // Throwaway keys generated for these tests only.
    const SERVER_SECRET_HEX: &str =
        "1111111111111111111111111111111111111111111111111111111111111111";
    const APPROVER_SECRET_HEX: &str =
        "2222222222222222222222222222222222222222222222222222222222222222";

    #[test]
    fn npub_and_hex_parse_to_the_same_key() {
        let keys = nostr::Keys::parse(APPROVER_SECRET_HEX).unwrap();
        let hex = keys.public_key().to_hex();
        let npub = nostr::ToBech32::to_bech32(&keys.public_key()).unwrap();
        assert_eq!(ApproverKey::parse(&hex), ApproverKey::parse(&npub));
        assert!(ApproverKey::parse(&hex).is_some());
        assert!(ApproverKey::parse("not-a-key").is_none());
    }

    #[test]
    fn server_key_never_counts_even_when_listed() {
        let server = ApproverKey::of_secret(SERVER_SECRET_HEX).unwrap();
        let approver = ApproverKey::of_secret(APPROVER_SECRET_HEX).unwrap();
        let policy = ApprovalPolicy::new(
            vec![server.clone(), approver.clone()],
            Some(server.clone()),
            1,
        );
        assert!(matches!(
            policy.check(&server),
            Err(DecisionRefused::ServerKey)
        ));
        assert!(policy.check(&approver).is_ok());
        let only_server = ApprovalPolicy::new(vec![server.clone()], Some(server), 1);
        assert!(!only_server.has_approvers());
    }

    #[test]
    fn unlisted_key_is_refused() {
        let approver = ApproverKey::of_secret(APPROVER_SECRET_HEX).unwrap();
        let policy = ApprovalPolicy::new(vec![], None, 1);
        assert!(matches!(
            policy.check(&approver),
            Err(DecisionRefused::NotAnApprover)
        ));
    }
}

//! Approver identities and the decision policy in front of the ledger: who may decide, the
//! server's own key never, and how many distinct approvers it takes.

use crate::ledger::{ApprovalRow, DecideError, Decision, Ledger, LedgerError, NewDecision};

/// A Nostr public key in lower-case hex (x-only, 32 bytes). The core only checks the form; the
/// Nostr crate (`care_nostr::keys`) parses `npub1…` and checks the key is a curve point, and
/// is where keys from configuration and events come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApproverKey(String);

impl ApproverKey {
    /// 64 hexadecimal digits (either case; stored lower-case).
    pub fn from_hex(text: &str) -> Option<Self> {
        let text = text.trim();
        (text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| ApproverKey(text.to_ascii_lowercase()))
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
    #[error("the key is not an approver of this approval")]
    NotAnApprover,
    #[error("the server's own key cannot approve its own requests")]
    ServerKey,
    #[error("approval not found")]
    NotFound,
    #[error("approval expired")]
    Expired,
    #[error("approval already consumed")]
    Consumed,
    /// A rejected approval keeps its decisions and evidence: nothing changes it any more.
    #[error("approval already rejected")]
    Rejected,
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// The approvers and threshold an approval was requested under, stored on its row. Every
/// process judges that row's reactions by this, whatever its own configuration says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowPolicy {
    /// Sorted, distinct, never the server's own key.
    approvers: Vec<ApproverKey>,
    threshold: u32,
}

impl RowPolicy {
    /// Normalises: keys sorted and deduplicated, threshold at least 1.
    pub fn new(mut approvers: Vec<ApproverKey>, threshold: u32) -> Self {
        approvers.sort();
        approvers.dedup();
        RowPolicy {
            approvers,
            threshold: threshold.max(1),
        }
    }

    pub fn approvers(&self) -> &[ApproverKey] {
        &self.approvers
    }

    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// Whether `key` is one of this row's approvers.
    pub fn lists(&self, key: &ApproverKey) -> bool {
        self.approvers.binary_search(key).is_ok()
    }

    /// The approver keys as stored: a JSON array of lower-case hex.
    pub fn approvers_json(&self) -> String {
        serde_json::Value::from(
            self.approvers
                .iter()
                .map(|k| serde_json::Value::String(k.hex().to_owned()))
                .collect::<Vec<_>>(),
        )
        .to_string()
    }

    /// Reads what [`RowPolicy::approvers_json`] stored; `None` if any entry is not a key.
    pub fn from_stored(approvers_json: &str, threshold: u32) -> Option<Self> {
        let items: Vec<String> = serde_json::from_str(approvers_json).ok()?;
        let keys = items
            .iter()
            .map(|k| ApproverKey::from_hex(k))
            .collect::<Option<Vec<_>>>()?;
        Some(RowPolicy::new(keys, threshold))
    }
}

/// The policy this process is configured with: who may decide on the approvals it requests
/// (stamped onto each new row), the server's own key (never an approver), and the policy that
/// applies to rows stored before rows carried their own.
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
        !self.for_new_rows().approvers.is_empty()
    }

    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    pub fn approvers(&self) -> &[ApproverKey] {
        &self.approvers
    }

    pub fn server_key(&self) -> Option<&ApproverKey> {
        self.server_key.as_ref()
    }

    /// What a new approval row carries: the configured approvers without the server's own
    /// key, and the configured threshold.
    pub fn for_new_rows(&self) -> RowPolicy {
        RowPolicy::new(
            self.approvers
                .iter()
                .filter(|a| Some(*a) != self.server_key.as_ref())
                .cloned()
                .collect(),
            self.threshold,
        )
    }

    /// The policy `row` is judged by: its own, or for a row stored before rows carried one,
    /// this process's.
    pub fn of_row(&self, row: &ApprovalRow) -> RowPolicy {
        row.policy.clone().unwrap_or_else(|| self.for_new_rows())
    }

    /// Whether `key` may decide on `row`: never the server's own key, and only a key the
    /// row's policy lists.
    pub fn check(&self, row: &ApprovalRow, key: &ApproverKey) -> Result<(), DecisionRefused> {
        if self.server_key.as_ref() == Some(key) {
            return Err(DecisionRefused::ServerKey);
        }
        if !self.of_row(row).lists(key) {
            return Err(DecisionRefused::NotAnApprover);
        }
        Ok(())
    }

    /// Records one decision on `row`: checks the key against the row's policy (the ledger
    /// checks it again inside its transaction), then records it and applies the row's
    /// threshold in one ledger transaction, dated by the ledger's clock.
    pub async fn decide(
        &self,
        ledger: &dyn Ledger,
        row: &ApprovalRow,
        approver: &ApproverKey,
        decision: Decision,
        evidence: &str,
    ) -> Result<ApprovalRow, DecisionRefused> {
        self.check(row, approver)?;
        let new = NewDecision {
            approval_id: row.id.clone(),
            approver: approver.clone(),
            decision,
            evidence: evidence.to_owned(),
        };
        ledger
            .record_decision(&new, &self.for_new_rows())
            .await
            .map_err(|e| match e {
                DecideError::NotFound => DecisionRefused::NotFound,
                DecideError::Expired => DecisionRefused::Expired,
                DecideError::Consumed => DecisionRefused::Consumed,
                DecideError::Rejected => DecisionRefused::Rejected,
                DecideError::NotAnApprover => DecisionRefused::NotAnApprover,
                DecideError::Ledger(l) => DecisionRefused::Ledger(l),
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Throwaway keys: any 32 bytes in hex have the form of a key (the core checks no more).
    fn key(byte: u8) -> ApproverKey {
        ApproverKey::from_hex(&format!("{byte:02x}").repeat(32)).unwrap()
    }

    #[test]
    fn keys_are_64_hex_digits_stored_lower_case() {
        let upper = ApproverKey::from_hex(&"AB".repeat(32)).unwrap();
        assert_eq!(upper.hex(), "ab".repeat(32));
        assert_eq!(
            ApproverKey::from_hex(&format!(" {} ", "ab".repeat(32))),
            Some(upper)
        );
        assert!(ApproverKey::from_hex("not-a-key").is_none());
        assert!(ApproverKey::from_hex(&"ab".repeat(31)).is_none());
        assert!(ApproverKey::from_hex(&"zz".repeat(32)).is_none());
        assert!(ApproverKey::from_hex(&format!("npub1{}", "q".repeat(58))).is_none());
    }

    fn row(policy: Option<RowPolicy>) -> ApprovalRow {
        let now = chrono::Utc::now();
        ApprovalRow {
            id: "apr_1".into(),
            action: "asc_review_reply".into(),
            arguments_json: "{}".into(),
            payload_hash: "00".repeat(32),
            hash_encoding: crate::canonical::HashEncoding::Jcs,
            status: crate::ledger::ApprovalStatus::Pending,
            requested_by_role: "reviews".into(),
            requested_by_client: "stdio".into(),
            reason: None,
            created_at: now,
            expires_at: now + chrono::Duration::minutes(5),
            decided_at: None,
            consumed_at: None,
            outcome: None,
            outcome_at: None,
            card_event_id: None,
            card_text: None,
            policy,
            checked_facts_json: None,
        }
    }

    #[test]
    fn server_key_never_counts_even_when_listed() {
        let server = key(0x11);
        let approver = key(0x22);
        let policy = ApprovalPolicy::new(
            vec![server.clone(), approver.clone()],
            Some(server.clone()),
            1,
        );
        // Even a row that (wrongly) lists the server's key cannot be decided by it.
        let listed = row(Some(RowPolicy::new(
            vec![server.clone(), approver.clone()],
            1,
        )));
        assert!(matches!(
            policy.check(&listed, &server),
            Err(DecisionRefused::ServerKey)
        ));
        assert!(policy.check(&listed, &approver).is_ok());
        assert_eq!(policy.for_new_rows().approvers(), [approver]);
        let only_server = ApprovalPolicy::new(vec![server.clone()], Some(server), 1);
        assert!(!only_server.has_approvers());
    }

    #[test]
    fn the_rows_policy_decides_not_the_process() {
        let a = key(0x22);
        let b = key(0x33);
        // This process lists B; the row was requested where only A was an approver.
        let process = ApprovalPolicy::new(vec![b.clone()], None, 1);
        let stamped = row(Some(RowPolicy::new(vec![a.clone()], 2)));
        assert!(process.check(&stamped, &a).is_ok());
        assert!(matches!(
            process.check(&stamped, &b),
            Err(DecisionRefused::NotAnApprover)
        ));
        assert_eq!(process.of_row(&stamped).threshold(), 2);
        // A row from before rows carried a policy falls back to the process's.
        let legacy = row(None);
        assert!(process.check(&legacy, &b).is_ok());
        assert!(process.check(&legacy, &a).is_err());
    }

    #[test]
    fn row_policy_round_trips_and_refuses_garbage() {
        let a = key(0x22);
        let b = key(0x33);
        let policy = RowPolicy::new(vec![b.clone(), a.clone(), b.clone()], 0);
        assert_eq!(policy.approvers().len(), 2);
        assert_eq!(policy.threshold(), 1);
        let stored = policy.approvers_json();
        assert_eq!(RowPolicy::from_stored(&stored, 1), Some(policy));
        assert_eq!(RowPolicy::from_stored(r#"["not-a-key"]"#, 1), None);
        assert_eq!(RowPolicy::from_stored("{}", 1), None);
    }

    #[test]
    fn unlisted_key_is_refused() {
        let approver = key(0x22);
        let policy = ApprovalPolicy::new(vec![], None, 1);
        assert!(matches!(
            policy.check(&row(None), &approver),
            Err(DecisionRefused::NotAnApprover)
        ));
    }
}

//! A flood of forged reactions (bad signatures) and of reactions signed by keys no approval
//! lists costs no ledger work: they are refused on the event alone. Measured by counting every
//! ledger call made while applying them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use care_core::approvals::{ApprovalPolicy, ApproverKey, RowPolicy};
use care_core::ledger::*;
use care_nostr::apply::{Applied, Judge, apply_reaction};
use care_nostr::gatekeeper::{KnownApprovers, RefusalLog};
use care_nostr::reaction::build_reaction;
use care_nostr::{Event, EventId, JsonUtil, Keys};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// The real SQLite ledger behind a counter of calls.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn Ledger>,
    calls: AtomicUsize,
}

impl Counting {
    fn hit(&self) -> &dyn Ledger {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.as_ref()
    }
}

#[async_trait]
impl Ledger for Counting {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    async fn ping(&self) -> Result<(), LedgerError> {
        self.hit().ping().await
    }
    async fn clock(&self) -> Result<DateTime<Utc>, LedgerError> {
        self.hit().clock().await
    }
    async fn create_approval(&self, new: &NewApproval) -> Result<ApprovalRow, LedgerError> {
        self.hit().create_approval(new).await
    }
    async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, LedgerError> {
        self.hit().approval(id).await
    }
    async fn list_approvals(
        &self,
        status: Option<ApprovalStatus>,
        limit: u32,
    ) -> Result<Vec<ApprovalRow>, LedgerError> {
        self.hit().list_approvals(status, limit).await
    }
    async fn set_card_event(&self, id: &str, event_id: &str) -> Result<(), LedgerError> {
        self.hit().set_card_event(id, event_id).await
    }
    async fn approval_id_by_card_event(&self, e: &str) -> Result<Option<String>, LedgerError> {
        self.hit().approval_id_by_card_event(e).await
    }
    async fn discard_pending(&self, id: &str) -> Result<(), LedgerError> {
        self.hit().discard_pending(id).await
    }
    async fn record_decision(
        &self,
        d: &NewDecision,
        legacy: &RowPolicy,
    ) -> Result<ApprovalRow, DecideError> {
        self.hit().record_decision(d, legacy).await
    }
    async fn decisions(&self, id: &str) -> Result<Vec<DecisionRow>, LedgerError> {
        self.hit().decisions(id).await
    }
    async fn consume(
        &self,
        id: &str,
        action: &str,
        hash: &str,
        facts: &str,
    ) -> Result<ApprovalRow, ConsumeError> {
        self.hit().consume(id, action, hash, facts).await
    }
    async fn record_outcome(&self, id: &str, o: &WriteOutcome) -> Result<(), LedgerError> {
        self.hit().record_outcome(id, o).await
    }
    async fn record_kpi(&self, e: &KpiEntry) -> Result<(), LedgerError> {
        self.hit().record_kpi(e).await
    }
    async fn kpi_series(
        &self,
        m: Option<&str>,
        s: Option<DateTime<Utc>>,
    ) -> Result<Vec<KpiSeries>, LedgerError> {
        self.hit().kpi_series(m, s).await
    }
    async fn record_csat(&self, e: &CsatEntry) -> Result<(), LedgerError> {
        self.hit().record_csat(e).await
    }
    async fn csat_distribution(
        &self,
        c: Option<SupportChannel>,
        s: Option<DateTime<Utc>>,
    ) -> Result<Vec<CsatDistribution>, LedgerError> {
        self.hit().csat_distribution(c, s).await
    }
    async fn open_ticket(&self, t: &Ticket) -> Result<(), LedgerError> {
        self.hit().open_ticket(t).await
    }
    async fn mark_first_response(
        &self,
        c: SupportChannel,
        r: &str,
        at: DateTime<Utc>,
    ) -> Result<(), LedgerError> {
        self.hit().mark_first_response(c, r, at).await
    }
    async fn awaiting_first_response(
        &self,
        c: Option<SupportChannel>,
        b: &[(SupportChannel, DateTime<Utc>)],
    ) -> Result<Vec<AwaitingSummary>, LedgerError> {
        self.hit().awaiting_first_response(c, b).await
    }
    async fn append_audit(&self, batch: &AuditBatch) -> Result<(), LedgerError> {
        self.hit().append_audit(batch).await
    }
    async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditRecord>, LedgerError> {
        self.hit().recent_audit(limit).await
    }
    async fn audit_rows(&self, query: &AuditQuery) -> Result<Vec<StoredAudit>, LedgerError> {
        self.hit().audit_rows(query).await
    }
    async fn audit_row(&self, id: i64) -> Result<Option<StoredAudit>, LedgerError> {
        self.hit().audit_row(id).await
    }
    async fn audit_heads(&self) -> Result<Vec<ChainHead>, LedgerError> {
        self.hit().audit_heads().await
    }
}

fn key_of(keys: &Keys) -> ApproverKey {
    ApproverKey::from_hex(&keys.public_key().to_hex()).unwrap()
}

/// `event` with its content changed and id and signature kept: a forgery.
fn forged(event: &Event, content: &str) -> Event {
    let mut value: Value = serde_json::from_str(&event.as_json()).unwrap();
    value["content"] = Value::String(content.to_owned());
    Event::from_json(value.to_string()).unwrap()
}

#[tokio::test]
async fn forged_and_stranger_reactions_cost_no_ledger_work() {
    let (url, _dir) = care_ledger::test_support::temp_sqlite();
    let inner = care_ledger::connect(Some(&url), std::path::Path::new("/nonexistent"))
        .await
        .unwrap();
    inner.ping().await.unwrap();
    let ledger = Counting {
        inner,
        calls: AtomicUsize::new(0),
    };
    let approver = Keys::generate();
    let server = Keys::generate();
    let policy = ApprovalPolicy::new(vec![key_of(&approver)], Some(key_of(&server)), 1);
    let known = KnownApprovers::new(policy.for_new_rows().approvers());
    let refusals = RefusalLog::default();
    let judge = Judge {
        policy: &policy,
        known: &known,
        refusals: &refusals,
    };
    let card = EventId::all_zeros();
    let genuine = build_reaction(
        &approver,
        card,
        None,
        None,
        care_core::ledger::Decision::Reject,
    )
    .unwrap();
    for i in 0..500 {
        // The approver's signed rejection turned into an approval: the signature breaks.
        let forgery = forged(&genuine, if i % 2 == 0 { "+" } else { "✅" });
        assert!(matches!(
            apply_reaction(&ledger, &judge, &forgery).await.unwrap(),
            Applied::Dropped { .. }
        ));
        // Validly signed, by a key no approval of ours lists (nor the server's own).
        let stranger = build_reaction(
            &Keys::generate(),
            card,
            None,
            None,
            care_core::ledger::Decision::Approve,
        )
        .unwrap();
        assert!(matches!(
            apply_reaction(&ledger, &judge, &stranger).await.unwrap(),
            Applied::Dropped { .. }
        ));
        let own = build_reaction(
            &server,
            card,
            None,
            None,
            care_core::ledger::Decision::Approve,
        )
        .unwrap();
        assert!(matches!(
            apply_reaction(&ledger, &judge, &own).await.unwrap(),
            Applied::Dropped { .. }
        ));
    }
    assert_eq!(ledger.calls.load(Ordering::SeqCst), 0, "no ledger query");
    // The genuine reaction of a known approver is looked up (and is not ours: no card).
    assert_eq!(
        apply_reaction(&ledger, &judge, &genuine).await.unwrap(),
        Applied::NotOurs
    );
    assert!(ledger.calls.load(Ordering::SeqCst) > 0);
}

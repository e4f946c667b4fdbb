//! The one conformance suite both ledgers must pass: each `case_*` takes a fresh ledger.
//! `conformance_suite!` turns the list into `#[tokio::test]`s for one backend. Approval times
//! come from the ledger's own clock, so expiry cases use approvals that live a few hundred
//! milliseconds and wait for the ledger to pass them.

#![allow(dead_code)] // each test binary uses the suite through the macro only

use std::time::Duration as StdDuration;

use care_core::approvals::{ApproverKey, RowPolicy};
use care_core::audit_chain::Chain;
use care_core::canonical::HashEncoding;
use care_core::ledger::{
    ApprovalStatus, AuditBatch, AuditQuery, AuditRecord, ConsumeError, CsatEntry, DecideError,
    Decision, Durability, KpiEntry, Ledger, LedgerError, NewApproval, NewDecision, StoredAudit,
    SupportChannel, Ticket, WriteOutcome,
};
use chrono::{DateTime, Duration, TimeZone, Utc};

pub const ACTION: &str = "asc_review_reply";
pub const HASH: &str = "9f2c0000000000000000000000000000000000000000000000000000000000aa";
pub const FACTS: &str = r#"{"replaces_existing_response":false}"#;

/// Minutes after a fixed origin, for the KPI/CSAT/SLA/audit cases (times given by callers).
pub fn at(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::minutes(minutes)
}

/// A throwaway approver key: `n` in 1..=9 (the secret is `n` repeated; valid on secp256k1).
pub fn key(n: u8) -> ApproverKey {
    ApproverKey::from_hex(&format!("{n:02x}").repeat(32)).unwrap()
}

/// Approvers A, B and C.
pub fn a() -> ApproverKey {
    key(1)
}
pub fn b() -> ApproverKey {
    key(2)
}
pub fn c() -> ApproverKey {
    key(3)
}

/// A pending approval requested now by the ledger's clock, expiring in 60 minutes, judged by
/// approvers A, B and C with threshold 1.
pub async fn new_approval(l: &dyn Ledger, id: &str) -> NewApproval {
    let now = l.clock().await.unwrap();
    NewApproval {
        id: id.to_owned(),
        action: ACTION.to_owned(),
        arguments_json: r#"{"body":"Thanks!","locale":"en","review_id":"rev-1"}"#.to_owned(),
        payload_hash: HASH.to_owned(),
        hash_encoding: HashEncoding::Jcs,
        requested_by_role: "reviews".to_owned(),
        requested_by_client: "test-client".to_owned(),
        reason: Some("answer a review".to_owned()),
        created_at: now,
        expires_at: now + Duration::minutes(60),
        policy: RowPolicy::new(vec![a(), b(), c()], 1),
        checked_facts_json: FACTS.to_owned(),
        card_event_id: None,
        card_text: None,
    }
}

/// The same, expiring `ms` milliseconds from now by the ledger's clock.
pub async fn short_lived(l: &dyn Ledger, id: &str, ms: i64) -> NewApproval {
    let mut new = new_approval(l, id).await;
    new.expires_at = new.created_at + Duration::milliseconds(ms);
    new
}

pub fn decision(id: &str, approver: &ApproverKey, d: Decision, tag: u32) -> NewDecision {
    NewDecision {
        approval_id: id.to_owned(),
        approver: approver.clone(),
        decision: d,
        evidence: format!("{{\"kind\":7,\"pubkey\":\"{approver}\",\"tag\":{tag}}}"),
    }
}

/// The policy applied to rows stored without one; lists only D.
pub fn legacy() -> RowPolicy {
    RowPolicy::new(vec![key(4)], 1)
}

/// Creates an approval and approves it with approver A (threshold 1).
pub async fn approved(l: &dyn Ledger, id: &str) {
    l.create_approval(&new_approval(l, id).await).await.unwrap();
    let row = l
        .record_decision(&decision(id, &a(), Decision::Approve, 1), &legacy())
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved);
}

/// Lets a short-lived approval lapse by the ledger's clock.
pub async fn wait_past(l: &dyn Ledger, t: DateTime<Utc>) {
    while l.clock().await.unwrap() <= t {
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
}

pub async fn case_ping_and_backend(l: &dyn Ledger) {
    l.ping().await.unwrap();
    assert!(matches!(l.backend(), "postgres" | "sqlite"));
}

pub async fn case_clock_is_the_ledgers(l: &dyn Ledger) {
    let before = Utc::now();
    let clock = l.clock().await.unwrap();
    let after = Utc::now();
    // The database runs on this machine: its clock agrees with ours to well within a second.
    assert!(
        clock >= before - Duration::seconds(1),
        "{clock} vs {before}"
    );
    assert!(clock <= after + Duration::seconds(1), "{clock} vs {after}");
    let later = l.clock().await.unwrap();
    assert!(later >= clock);
}

pub async fn case_create_and_read(l: &dyn Ledger) {
    let mut new = new_approval(l, "a1").await;
    new.card_event_id = Some("evt-1".to_owned());
    new.card_text = Some("Approval needed: reply\n│ Thanks!".to_owned());
    let created = l.create_approval(&new).await.unwrap();
    assert_eq!(created.status, ApprovalStatus::Pending);
    assert_eq!(created.id, "a1");
    assert_eq!(created.arguments_json, new.arguments_json);
    assert_eq!(created.payload_hash, HASH);
    assert_eq!(created.hash_encoding, HashEncoding::Jcs);
    assert_eq!(created.reason.as_deref(), Some("answer a review"));
    assert_eq!(
        (created.created_at, created.expires_at),
        (new.created_at, new.expires_at)
    );
    assert_eq!(created.policy, Some(new.policy.clone()));
    assert_eq!(created.checked_facts_json.as_deref(), Some(FACTS));
    assert_eq!(created.card_event_id.as_deref(), Some("evt-1"));
    assert_eq!(created.card_text, new.card_text);
    assert_eq!(created.decided_at, None);
    assert_eq!(created.consumed_at, None);
    assert_eq!(created.outcome, None);
    let read = l.approval("a1").await.unwrap().unwrap();
    assert_eq!(read, created);
    assert!(l.approval("nope").await.unwrap().is_none());
    // An id is used once.
    let again = l.create_approval(&new).await;
    assert!(matches!(again, Err(LedgerError::Conflict(_))), "{again:?}");
}

pub async fn case_card_event(l: &dyn Ledger) {
    l.create_approval(&new_approval(l, "c1").await)
        .await
        .unwrap();
    l.set_card_event("c1", "evt-123").await.unwrap();
    let row = l.approval("c1").await.unwrap().unwrap();
    assert_eq!(row.card_event_id.as_deref(), Some("evt-123"));
    assert_eq!(
        l.approval_id_by_card_event("evt-123")
            .await
            .unwrap()
            .as_deref(),
        Some("c1")
    );
    assert_eq!(
        l.approval_id_by_card_event("evt-other").await.unwrap(),
        None
    );
    assert!(matches!(
        l.set_card_event("nope", "e").await,
        Err(LedgerError::NotFound)
    ));
}

pub async fn case_read_marks_expired(l: &dyn Ledger) {
    let pending = short_lived(l, "e1", 300).await;
    l.create_approval(&pending).await.unwrap();
    let approved_new = short_lived(l, "e2", 300).await;
    l.create_approval(&approved_new).await.unwrap();
    l.record_decision(&decision("e2", &a(), Decision::Approve, 1), &legacy())
        .await
        .unwrap();
    assert_eq!(
        l.approval("e1").await.unwrap().unwrap().status,
        ApprovalStatus::Pending
    );
    wait_past(l, approved_new.expires_at).await;
    for id in ["e1", "e2"] {
        let row = l.approval(id).await.unwrap().unwrap();
        assert_eq!(row.status, ApprovalStatus::Expired, "{id} past expires_at");
    }
    // Stored, not just reported: the list (which sweeps) and a filter see it too.
    let expired = l
        .list_approvals(Some(ApprovalStatus::Expired), 10)
        .await
        .unwrap();
    assert_eq!(expired.len(), 2);
}

/// The ids `list_approvals(status, 10)` returns, in its order.
pub async fn listed_ids(l: &dyn Ledger, status: Option<ApprovalStatus>) -> Vec<String> {
    let rows = l.list_approvals(status, 10).await.unwrap();
    rows.into_iter().map(|r| r.id).collect()
}

pub async fn case_list_order_filter_and_expiry(l: &dyn Ledger) {
    for (i, id) in ["l1", "l2", "l3"].into_iter().enumerate() {
        let mut new = new_approval(l, id).await;
        new.created_at += Duration::milliseconds(i64::try_from(i).unwrap());
        if id == "l1" {
            new.expires_at = new.created_at + Duration::milliseconds(300);
        }
        l.create_approval(&new).await.unwrap();
    }
    let all = l.list_approvals(None, 10).await.unwrap();
    let ids: Vec<_> = all.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["l3", "l2", "l1"]);
    let two = l.list_approvals(None, 2).await.unwrap();
    assert_eq!(two.len(), 2);
    let l1 = l.approval("l1").await.unwrap().unwrap();
    wait_past(l, l1.expires_at).await;
    // l1 is past its time by the ledger's clock; the list stores and shows it expired.
    let all = l.list_approvals(None, 10).await.unwrap();
    let status: Vec<_> = all.iter().map(|r| (r.id.as_str(), r.status)).collect();
    assert_eq!(
        status,
        [
            ("l3", ApprovalStatus::Pending),
            ("l2", ApprovalStatus::Pending),
            ("l1", ApprovalStatus::Expired)
        ]
    );
    assert_eq!(
        listed_ids(l, Some(ApprovalStatus::Pending)).await,
        ["l3", "l2"]
    );
}

/// A listing filtered to one status sees rows that lapsed with nobody reading them: the
/// pending one and the approved one are stored `expired` by the listing itself, and neither
/// is still listed as what it was.
pub async fn case_filtered_list_sees_rows_lapsed_unread(l: &dyn Ledger) {
    l.create_approval(&short_lived(l, "u1", 300).await)
        .await
        .unwrap();
    let approved = short_lived(l, "u2", 300).await;
    l.create_approval(&approved).await.unwrap();
    l.record_decision(&decision("u2", &a(), Decision::Approve, 1), &legacy())
        .await
        .unwrap();
    let live = new_approval(l, "u3").await;
    l.create_approval(&live).await.unwrap();
    assert_eq!(
        listed_ids(l, Some(ApprovalStatus::Pending)).await,
        ["u3", "u1"]
    );
    wait_past(l, approved.expires_at).await;
    let mut expired = listed_ids(l, Some(ApprovalStatus::Expired)).await;
    expired.sort_unstable();
    assert_eq!(expired, ["u1", "u2"]);
    assert_eq!(listed_ids(l, Some(ApprovalStatus::Pending)).await, ["u3"]);
    assert!(
        listed_ids(l, Some(ApprovalStatus::Approved))
            .await
            .is_empty()
    );
}

pub async fn case_single_approver(l: &dyn Ledger) {
    l.create_approval(&new_approval(l, "s1").await)
        .await
        .unwrap();
    let before = l.clock().await.unwrap();
    let row = l
        .record_decision(&decision("s1", &a(), Decision::Approve, 3), &legacy())
        .await
        .unwrap();
    let after = l.clock().await.unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved);
    let decided = row.decided_at.unwrap();
    assert!(
        before <= decided && decided <= after,
        "dated by the ledger's clock"
    );
    let ds = l.decisions("s1").await.unwrap();
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].approver, a().hex());
    assert_eq!(ds[0].decision, Decision::Approve);
    assert_eq!(
        ds[0].evidence,
        decision("s1", &a(), Decision::Approve, 3).evidence
    );
    assert!(before <= ds[0].decided_at && ds[0].decided_at <= after);
}

pub async fn case_threshold_two_distinct_approvers(l: &dyn Ledger) {
    let mut new = new_approval(l, "t1").await;
    new.policy = RowPolicy::new(vec![a(), b(), c()], 2);
    l.create_approval(&new).await.unwrap();
    let row = l
        .record_decision(&decision("t1", &a(), Decision::Approve, 1), &legacy())
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Pending);
    // The same approver twice counts once; the newer evidence replaces the older.
    let row = l
        .record_decision(&decision("t1", &a(), Decision::Approve, 2), &legacy())
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Pending);
    assert_eq!(row.decided_at, None);
    let ds = l.decisions("t1").await.unwrap();
    assert_eq!(ds.len(), 1);
    assert_eq!(
        ds[0].evidence,
        decision("t1", &a(), Decision::Approve, 2).evidence
    );
    let row = l
        .record_decision(&decision("t1", &b(), Decision::Approve, 3), &legacy())
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved);
    assert!(row.decided_at.is_some());
    assert_eq!(l.decisions("t1").await.unwrap().len(), 2);
}

pub async fn case_the_rows_policy_decides(l: &dyn Ledger) {
    // The row lists A and B with threshold 2; the legacy policy (D, threshold 1) plays no part.
    let mut new = new_approval(l, "q1").await;
    new.policy = RowPolicy::new(vec![a(), b()], 2);
    l.create_approval(&new).await.unwrap();
    for stranger in [c(), key(4)] {
        let r = l
            .record_decision(&decision("q1", &stranger, Decision::Approve, 1), &legacy())
            .await;
        assert!(matches!(r, Err(DecideError::NotAnApprover)), "{r:?}");
        let r = l
            .record_decision(&decision("q1", &stranger, Decision::Reject, 1), &legacy())
            .await;
        assert!(
            matches!(r, Err(DecideError::NotAnApprover)),
            "a stranger cannot reject: {r:?}"
        );
    }
    assert!(
        l.decisions("q1").await.unwrap().is_empty(),
        "refusals are not kept"
    );
    let row = l
        .record_decision(&decision("q1", &a(), Decision::Approve, 2), &legacy())
        .await
        .unwrap();
    assert_eq!(
        row.status,
        ApprovalStatus::Pending,
        "threshold 2 from the row"
    );
    let row = l
        .record_decision(&decision("q1", &b(), Decision::Approve, 3), &legacy())
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved);
}

pub async fn case_reject_wins_after_approve(l: &dyn Ledger) {
    approved(l, "r1").await;
    let row = l
        .record_decision(&decision("r1", &b(), Decision::Reject, 2), &legacy())
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Rejected);
    assert!(row.decided_at.is_some());
    let refused = l.consume("r1", ACTION, HASH, FACTS).await;
    assert!(
        matches!(refused, Err(ConsumeError::Rejected)),
        "{refused:?}"
    );
    // A pending row with a rejection is rejected at once, whatever the threshold.
    let mut new = new_approval(l, "r2").await;
    new.policy = RowPolicy::new(vec![a(), b(), c()], 3);
    l.create_approval(&new).await.unwrap();
    let row = l
        .record_decision(&decision("r2", &a(), Decision::Reject, 1), &legacy())
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Rejected);
}

pub async fn case_a_rejection_stays_on_record(l: &dyn Ledger) {
    approved(l, "j1").await;
    l.record_decision(&decision("j1", &b(), Decision::Reject, 2), &legacy())
        .await
        .unwrap();
    let on_record = l.decisions("j1").await.unwrap();
    let decided_at = l.approval("j1").await.unwrap().unwrap().decided_at;
    // The rejecter changing their mind, the rejection replayed, a third approver approving:
    // each refused, and nothing stored changes.
    for (who, d, tag) in [
        (b(), Decision::Approve, 3),
        (b(), Decision::Reject, 2),
        (c(), Decision::Approve, 4),
        (a(), Decision::Reject, 5),
    ] {
        let r = l
            .record_decision(&decision("j1", &who, d, tag), &legacy())
            .await;
        assert!(matches!(r, Err(DecideError::Rejected)), "{r:?}");
    }
    assert_eq!(l.decisions("j1").await.unwrap(), on_record);
    let row = l.approval("j1").await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Rejected);
    assert_eq!(row.decided_at, decided_at);
}

pub async fn case_decide_refusals(l: &dyn Ledger) {
    let missing = l
        .record_decision(&decision("nope", &a(), Decision::Approve, 1), &legacy())
        .await;
    assert!(matches!(missing, Err(DecideError::NotFound)), "{missing:?}");

    let short = short_lived(l, "d1", 200).await;
    l.create_approval(&short).await.unwrap();
    wait_past(l, short.expires_at).await;
    let late = l
        .record_decision(&decision("d1", &a(), Decision::Approve, 2), &legacy())
        .await;
    assert!(matches!(late, Err(DecideError::Expired)), "{late:?}");
    let row = l.approval("d1").await.unwrap().unwrap();
    assert_eq!(
        row.status,
        ApprovalStatus::Expired,
        "refusal stored the expiry"
    );
    assert!(
        l.decisions("d1").await.unwrap().is_empty(),
        "a refused decision is not kept"
    );

    approved(l, "d2").await;
    l.consume("d2", ACTION, HASH, FACTS).await.unwrap();
    let after = l
        .record_decision(&decision("d2", &b(), Decision::Reject, 3), &legacy())
        .await;
    assert!(matches!(after, Err(DecideError::Consumed)), "{after:?}");
    let row = l.approval("d2").await.unwrap().unwrap();
    assert_eq!(
        row.status,
        ApprovalStatus::Consumed,
        "a rejection after consumption is refused"
    );
}

pub async fn case_consume_once(l: &dyn Ledger) {
    approved(l, "k1").await;
    let before = l.clock().await.unwrap();
    let row = l.consume("k1", ACTION, HASH, FACTS).await.unwrap();
    let after = l.clock().await.unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);
    let consumed = row.consumed_at.unwrap();
    assert!(
        before <= consumed && consumed <= after,
        "dated by the ledger's clock"
    );
    let second = l.consume("k1", ACTION, HASH, FACTS).await;
    assert!(matches!(second, Err(ConsumeError::Consumed)), "{second:?}");
    let row = l.approval("k1").await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);
}

pub async fn case_consumed_stays_consumed_past_expiry(l: &dyn Ledger) {
    let short = short_lived(l, "k2", 300).await;
    l.create_approval(&short).await.unwrap();
    l.record_decision(&decision("k2", &a(), Decision::Approve, 1), &legacy())
        .await
        .unwrap();
    l.consume("k2", ACTION, HASH, FACTS).await.unwrap();
    wait_past(l, short.expires_at).await;
    let late = l.consume("k2", ACTION, HASH, FACTS).await;
    assert!(matches!(late, Err(ConsumeError::Consumed)), "{late:?}");
    assert_eq!(
        l.approval("k2").await.unwrap().unwrap().status,
        ApprovalStatus::Consumed
    );
}

pub async fn case_consume_mismatch(l: &dyn Ledger) {
    approved(l, "m1").await;
    let edited = HASH.replace("aa", "ab");
    let r = l.consume("m1", ACTION, &edited, FACTS).await;
    assert!(
        matches!(r, Err(ConsumeError::Mismatch)),
        "edited payload: {r:?}"
    );
    let r = l.consume("m1", "discourse_post_reply", HASH, FACTS).await;
    assert!(
        matches!(r, Err(ConsumeError::Mismatch)),
        "other action: {r:?}"
    );
    // The target changed since the approver read the card.
    let r = l
        .consume("m1", ACTION, HASH, r#"{"replaces_existing_response":true}"#)
        .await;
    assert!(
        matches!(r, Err(ConsumeError::Mismatch)),
        "changed facts: {r:?}"
    );
    // A mismatch consumes nothing: the right call still wins.
    let row = l.consume("m1", ACTION, HASH, FACTS).await.unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);
}

pub async fn case_consume_refusals(l: &dyn Ledger) {
    let r = l.consume("nope", ACTION, HASH, FACTS).await;
    assert!(matches!(r, Err(ConsumeError::NotFound)), "missing: {r:?}");

    l.create_approval(&new_approval(l, "p1").await)
        .await
        .unwrap();
    let r = l.consume("p1", ACTION, HASH, FACTS).await;
    assert!(matches!(r, Err(ConsumeError::Pending)), "pending: {r:?}");

    let short = short_lived(l, "x1", 300).await;
    l.create_approval(&short).await.unwrap();
    l.record_decision(&decision("x1", &a(), Decision::Approve, 1), &legacy())
        .await
        .unwrap();
    wait_past(l, short.expires_at).await;
    let r = l.consume("x1", ACTION, HASH, FACTS).await;
    assert!(
        matches!(r, Err(ConsumeError::Expired)),
        "approved past expires_at: {r:?}"
    );
    let row = l.approval("x1").await.unwrap().unwrap();
    assert_eq!(
        row.status,
        ApprovalStatus::Expired,
        "consume stored the expiry"
    );
    let r = l.consume("x1", ACTION, HASH, FACTS).await;
    assert!(
        matches!(r, Err(ConsumeError::Expired)),
        "stored expired: {r:?}"
    );
}

pub async fn case_record_outcome(l: &dyn Ledger) {
    approved(l, "o1").await;
    let early = l.record_outcome("o1", &WriteOutcome::Sent).await;
    assert!(
        matches!(early, Err(LedgerError::Conflict(_))),
        "not consumed: {early:?}"
    );
    l.consume("o1", ACTION, HASH, FACTS).await.unwrap();
    let failed = WriteOutcome::Failed {
        code: "UPSTREAM_ERROR".to_owned(),
    };
    l.record_outcome("o1", &failed).await.unwrap();
    let row = l.approval("o1").await.unwrap().unwrap();
    assert_eq!(row.outcome, Some(failed));
    assert!(row.outcome_at >= row.consumed_at);
    let second = l.record_outcome("o1", &WriteOutcome::Sent).await;
    assert!(
        matches!(second, Err(LedgerError::Conflict(_))),
        "second outcome: {second:?}"
    );
    let missing = l.record_outcome("nope", &WriteOutcome::Sent).await;
    assert!(matches!(missing, Err(LedgerError::NotFound)), "{missing:?}");
}

pub async fn case_discard_pending(l: &dyn Ledger) {
    let mut new = new_approval(l, "g1").await;
    new.policy = RowPolicy::new(vec![a(), b()], 2);
    l.create_approval(&new).await.unwrap();
    l.record_decision(&decision("g1", &a(), Decision::Approve, 1), &legacy())
        .await
        .unwrap();
    l.discard_pending("g1").await.unwrap();
    assert!(l.approval("g1").await.unwrap().is_none());
    assert!(
        l.decisions("g1").await.unwrap().is_empty(),
        "decisions go with the row"
    );
    // The id is free again once discarded.
    l.create_approval(&new_approval(l, "g1").await)
        .await
        .unwrap();

    approved(l, "g2").await;
    let r = l.discard_pending("g2").await;
    assert!(
        matches!(r, Err(LedgerError::Conflict(_))),
        "approved: {r:?}"
    );
    assert!(l.approval("g2").await.unwrap().is_some());
    assert!(matches!(
        l.discard_pending("nope").await,
        Err(LedgerError::NotFound)
    ));
}

fn kpi(metric: &str, value: f64, minute: i64) -> KpiEntry {
    KpiEntry {
        metric: metric.to_owned(),
        value,
        target: Some(4.5),
        unit: Some("stars".to_owned()),
        higher_is_better: true,
        recorded_at: at(minute),
        recorded_by_role: "insight".to_owned(),
    }
}

pub async fn case_kpi_series(l: &dyn Ledger) {
    assert!(l.kpi_series(None, None).await.unwrap().is_empty());
    // Recorded out of order: the latest is by recorded_at, not by insertion.
    l.record_kpi(&kpi("rating", 4.0, 10)).await.unwrap();
    l.record_kpi(&kpi("rating", 5.0, 30)).await.unwrap();
    l.record_kpi(&kpi("rating", 3.0, 20)).await.unwrap();
    let mut slow = kpi("first_response_minutes", 42.5, 5);
    slow.higher_is_better = false;
    slow.target = None;
    slow.unit = None;
    l.record_kpi(&slow).await.unwrap();

    let all = l.kpi_series(None, None).await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].metric, "first_response_minutes");
    assert_eq!(all[0].count, 1);
    assert_eq!(all[0].latest, slow);
    let rating = &all[1];
    assert_eq!((rating.count, rating.min, rating.max), (3, 3.0, 5.0));
    assert!((rating.mean - 4.0).abs() < 1e-9);
    assert_eq!(rating.latest, kpi("rating", 5.0, 30));

    let window = l.kpi_series(Some("rating"), Some(at(20))).await.unwrap();
    assert_eq!(window.len(), 1);
    assert_eq!(
        (window[0].count, window[0].min, window[0].max),
        (2, 3.0, 5.0)
    );
    assert!(
        l.kpi_series(Some("rating"), Some(at(31)))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(l.kpi_series(Some("other"), None).await.unwrap().is_empty());

    // Two readings at the same instant: the one recorded last is the latest, on every backend.
    l.record_kpi(&kpi("tied", 1.0, 40)).await.unwrap();
    l.record_kpi(&kpi("tied", 2.0, 40)).await.unwrap();
    l.record_kpi(&kpi("tied", 9.0, 35)).await.unwrap();
    let tied = l.kpi_series(Some("tied"), Some(at(36))).await.unwrap();
    assert_eq!(tied.len(), 1);
    assert_eq!(tied[0].latest, kpi("tied", 2.0, 40));
    assert_eq!((tied[0].count, tied[0].min, tied[0].max), (2, 1.0, 2.0));
    let all = l.kpi_series(None, Some(at(25))).await.unwrap();
    let names: Vec<&str> = all.iter().map(|s| s.metric.as_str()).collect();
    assert_eq!(names, ["rating", "tied"]);
    assert_eq!(all[1].count, 3);
}

fn csat(channel: SupportChannel, score: u8, minute: i64) -> CsatEntry {
    CsatEntry {
        channel,
        ticket_ref: format!("t-{minute}"),
        score,
        comment: None,
        recorded_at: at(minute),
        recorded_by_role: "mail".to_owned(),
    }
}

pub async fn case_csat_distribution(l: &dyn Ledger) {
    assert!(l.csat_distribution(None, None).await.unwrap().is_empty());
    for (ch, score, minute) in [
        (SupportChannel::Mail, 5, 1),
        (SupportChannel::Mail, 5, 2),
        (SupportChannel::Mail, 1, 3),
        (SupportChannel::AppStore, 3, 4),
        (SupportChannel::Mail, 4, 10),
    ] {
        l.record_csat(&csat(ch, score, minute)).await.unwrap();
    }
    let all = l.csat_distribution(None, None).await.unwrap();
    assert_eq!(all.len(), 2, "the forum has no scores and is omitted");
    assert_eq!(all[0].channel, SupportChannel::AppStore);
    assert_eq!(all[0].counts, [0, 0, 1, 0, 0]);
    assert_eq!(all[1].channel, SupportChannel::Mail);
    assert_eq!(all[1].counts, [1, 0, 0, 1, 2]);
    let mail_late = l
        .csat_distribution(Some(SupportChannel::Mail), Some(at(3)))
        .await
        .unwrap();
    assert_eq!(mail_late.len(), 1);
    assert_eq!(mail_late[0].counts, [1, 0, 0, 1, 0]);
    assert!(
        l.csat_distribution(Some(SupportChannel::Forum), None)
            .await
            .unwrap()
            .is_empty()
    );
}

fn ticket(channel: SupportChannel, r: &str, minute: i64) -> Ticket {
    Ticket {
        channel,
        ticket_ref: r.to_owned(),
        opened_at: at(minute),
        first_response_at: None,
    }
}

pub async fn case_tickets_and_sla(l: &dyn Ledger) {
    l.open_ticket(&ticket(SupportChannel::Mail, "m-1", 0))
        .await
        .unwrap();
    // Opening again changes nothing (not even the opening time).
    l.open_ticket(&ticket(SupportChannel::Mail, "m-1", 50))
        .await
        .unwrap();
    l.open_ticket(&ticket(SupportChannel::Mail, "m-2", 30))
        .await
        .unwrap();
    l.open_ticket(&ticket(SupportChannel::Mail, "m-3", 40))
        .await
        .unwrap();
    l.open_ticket(&ticket(SupportChannel::Forum, "f-1", 10))
        .await
        .unwrap();
    l.open_ticket(&ticket(SupportChannel::AppStore, "a-1", 5))
        .await
        .unwrap();
    // The same ref in another channel is another ticket.
    l.open_ticket(&ticket(SupportChannel::Forum, "m-1", 45))
        .await
        .unwrap();

    l.mark_first_response(SupportChannel::AppStore, "a-1", at(6))
        .await
        .unwrap();
    l.mark_first_response(SupportChannel::Mail, "m-3", at(41))
        .await
        .unwrap();
    // A later response keeps the first time: m-3 stays answered, m-3 still not awaiting.
    l.mark_first_response(SupportChannel::Mail, "m-3", at(99))
        .await
        .unwrap();
    let missing = l
        .mark_first_response(SupportChannel::Mail, "nope", at(1))
        .await;
    assert!(matches!(missing, Err(LedgerError::NotFound)), "{missing:?}");

    let cutoffs = [
        (SupportChannel::Mail, at(20)),
        (SupportChannel::Forum, at(20)),
    ];
    let all = l.awaiting_first_response(None, &cutoffs).await.unwrap();
    assert_eq!(all.len(), 2, "app store has nothing awaiting: {all:?}");
    assert_eq!(all[0].channel, SupportChannel::Forum);
    assert_eq!((all[0].awaiting, all[0].breached), (2, 1));
    assert_eq!(all[0].oldest_opened_at, Some(at(10)));
    assert_eq!(all[1].channel, SupportChannel::Mail);
    assert_eq!(
        (all[1].awaiting, all[1].breached),
        (2, 1),
        "m-1 opened at 0 breaches"
    );
    assert_eq!(all[1].oldest_opened_at, Some(at(0)));

    // Per-channel cutoffs: a later mail cutoff breaches both; no forum cutoff breaches none.
    let mail = l
        .awaiting_first_response(
            Some(SupportChannel::Mail),
            &[(SupportChannel::Mail, at(35))],
        )
        .await;
    let mail = mail.unwrap();
    assert_eq!(mail.len(), 1);
    assert_eq!((mail[0].awaiting, mail[0].breached), (2, 2));
    let forum = l
        .awaiting_first_response(Some(SupportChannel::Forum), &[])
        .await
        .unwrap();
    assert_eq!((forum[0].awaiting, forum[0].breached), (2, 0));
    assert!(
        l.awaiting_first_response(Some(SupportChannel::AppStore), &cutoffs)
            .await
            .unwrap()
            .is_empty()
    );
}

const AUDIT_SALT: &[u8] = b"sk-demo-conformance-audit-salt";

fn audit(minute: i64, tool: &str, error_code: Option<&str>) -> AuditRecord {
    AuditRecord {
        at: at(minute),
        role: "reviews".to_owned(),
        client: "claude-desktop".to_owned(),
        tool: tool.to_owned(),
        outcome: if error_code.is_some() { "error" } else { "ok" }.to_owned(),
        error_code: error_code.map(str::to_owned),
        approval_id: error_code.map(|_| "a-9".to_owned()),
        duration_us: 1234,
        args_digest: "d1gest".to_owned(),
        capability: "read,upstream".to_owned(),
        session: format!("s-{}", minute % 2),
        decision: if error_code.is_some() {
            "deny"
        } else {
            "allow"
        }
        .to_owned(),
        rules: vec!["role_gate".to_owned(), "input".to_owned()],
        denied_by: error_code.map(|_| "approval".to_owned()),
        output: Some(care_core::ledger::OutputSummary {
            bytes: 4096,
            items: 7,
            truncated: error_code.is_none(),
        }),
        approval_trail: error_code
            .map(|_| r#"{"decisions":[],"expires_at":1767225600000}"#.to_owned()),
    }
}

/// Appends `records` as one batch of `chain` and moves it.
async fn append(l: &dyn Ledger, chain: &mut Chain, records: &[AuditRecord]) {
    let (links, head) = chain.links(AUDIT_SALT, records);
    let batch = AuditBatch {
        rows: records.iter().cloned().zip(links).collect(),
        head,
        durability: Durability::Flushed,
    };
    l.append_audit(&batch).await.unwrap();
    chain.advance(&batch.head);
}

pub async fn case_audit(l: &dyn Ledger) {
    assert!(l.recent_audit(10).await.unwrap().is_empty());
    let records = [
        audit(1, "asc_reviews_list", None),
        audit(3, "asc_review_reply", Some("APPROVAL_MISMATCH")),
        audit(2, "unknown", Some("UNKNOWN_TOOL")),
    ];
    let mut chain = Chain::start(at(0));
    append(l, &mut chain, &records[..2]).await;
    append(l, &mut chain, &records[2..]).await;
    // Every field comes back as written, newest (by time) first.
    let recent = l.recent_audit(2).await.unwrap();
    assert_eq!(recent, vec![records[1].clone(), records[2].clone()]);
    assert_eq!(l.recent_audit(10).await.unwrap().len(), 3);

    // A second writer's chain beside the first.
    let mut other = Chain::start(at(0));
    append(l, &mut other, &[audit(4, "kpi_report", None)]).await;
    let heads = l.audit_heads().await.unwrap();
    assert_eq!(heads.len(), 2);
    let all = l
        .audit_rows(&AuditQuery {
            limit: 100,
            oldest_first: true,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 4);
    assert!(all.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(all[0].record, records[0]);
    let link = all[2].link.clone().unwrap();
    assert_eq!((link.chain.as_str(), link.seq), (chain.id.as_str(), 3));
    assert!(care_core::audit_chain::verify(AUDIT_SALT, all.clone(), &heads).intact());

    // Filters: tool, outcome, session, since, and paging after an id.
    let q = |f: fn(&mut AuditQuery)| {
        let mut q = AuditQuery {
            limit: 100,
            ..AuditQuery::default()
        };
        f(&mut q);
        q
    };
    let tools =
        |rows: Vec<StoredAudit>| rows.into_iter().map(|r| r.record.tool).collect::<Vec<_>>();
    let by_tool = l
        .audit_rows(&q(|q| q.tool = Some("unknown".into())))
        .await
        .unwrap();
    assert_eq!(tools(by_tool), ["unknown"]);
    let errors = l
        .audit_rows(&q(|q| q.outcome = Some("error".into())))
        .await
        .unwrap();
    assert_eq!(tools(errors), ["unknown", "asc_review_reply"]);
    let session = l
        .audit_rows(&q(|q| q.session = Some("s-0".into())))
        .await
        .unwrap();
    assert_eq!(tools(session), ["kpi_report", "unknown"]);
    let since = l.audit_rows(&q(|q| q.since = Some(at(3)))).await.unwrap();
    assert_eq!(tools(since), ["kpi_report", "asc_review_reply"]);
    let after = all[1].id;
    let page = l
        .audit_rows(&AuditQuery {
            after_id: Some(after),
            oldest_first: true,
            limit: 1,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(tools(page), ["unknown"]);

    let one = l.audit_row(all[1].id).await.unwrap().unwrap();
    assert_eq!(one, all[1]);
    assert!(l.audit_row(all[3].id + 1000).await.unwrap().is_none());
}

/// Expands to one `#[tokio::test]` per case; `$open` is an async fn returning
/// `(Arc<dyn Ledger>, guard)`, the guard keeping the database alive for the test.
macro_rules! conformance_suite {
    ($open:path) => {
        conformance_suite!(@cases $open;
            case_ping_and_backend,
            case_clock_is_the_ledgers,
            case_create_and_read,
            case_card_event,
            case_read_marks_expired,
            case_list_order_filter_and_expiry,
            case_filtered_list_sees_rows_lapsed_unread,
            case_single_approver,
            case_threshold_two_distinct_approvers,
            case_the_rows_policy_decides,
            case_reject_wins_after_approve,
            case_a_rejection_stays_on_record,
            case_decide_refusals,
            case_consume_once,
            case_consumed_stays_consumed_past_expiry,
            case_consume_mismatch,
            case_consume_refusals,
            case_record_outcome,
            case_discard_pending,
            case_kpi_series,
            case_csat_distribution,
            case_tickets_and_sla,
            case_audit
        );
    };
    (@cases $open:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let (ledger, guard) = $open().await;
                conformance::$case(ledger.as_ref()).await;
                drop(ledger);
                drop(guard);
            }
        )*
    };
}
pub(crate) use conformance_suite;

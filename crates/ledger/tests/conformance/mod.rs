//! The one conformance suite both ledgers must pass: each `case_*` takes a fresh ledger.
//! `conformance_suite!` turns the list into `#[tokio::test]`s for one backend.

#![allow(dead_code)] // each test binary uses the suite through the macro only

use care_core::ledger::{
    ApprovalStatus, AuditRecord, Channel, ConsumeError, CsatEntry, DecideError, Decision,
    DecisionRow, KpiEntry, Ledger, LedgerError, NewApproval, Ticket, WriteOutcome,
};
use chrono::{DateTime, Duration, TimeZone, Utc};

pub const ACTION: &str = "asc_review_reply";
pub const HASH: &str = "9f2c0000000000000000000000000000000000000000000000000000000000aa";

/// Minutes after a fixed origin: tests move time by passing `now`, never by sleeping.
pub fn at(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::minutes(minutes)
}

/// A pending approval created at minute 0, expiring at minute 60.
pub fn new_approval(id: &str) -> NewApproval {
    NewApproval {
        id: id.to_owned(),
        action: ACTION.to_owned(),
        arguments_json: r#"{"body":"Thanks!","locale":"en","review_id":"rev-1"}"#.to_owned(),
        payload_hash: HASH.to_owned(),
        requested_by_role: "reviews".to_owned(),
        requested_by_client: "test-client".to_owned(),
        reason: Some("answer a review".to_owned()),
        created_at: at(0),
        expires_at: at(60),
    }
}

pub fn decision(id: &str, approver: &str, d: Decision, minute: i64) -> DecisionRow {
    DecisionRow {
        approval_id: id.to_owned(),
        approver: approver.to_owned(),
        decision: d,
        evidence: format!("{{\"kind\":7,\"pubkey\":\"{approver}\",\"minute\":{minute}}}"),
        decided_at: at(minute),
    }
}

/// Creates an approval and approves it with one approver (threshold 1).
pub async fn approved(l: &dyn Ledger, id: &str) {
    l.create_approval(&new_approval(id)).await.unwrap();
    let row = l
        .record_decision(&decision(id, "aa", Decision::Approve, 1), 1, at(1))
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved);
}

pub async fn case_ping_and_backend(l: &dyn Ledger) {
    l.ping().await.unwrap();
    assert!(matches!(l.backend(), "postgres" | "sqlite"));
}

pub async fn case_create_and_read(l: &dyn Ledger) {
    let new = new_approval("a1");
    let created = l.create_approval(&new).await.unwrap();
    assert_eq!(created.status, ApprovalStatus::Pending);
    assert_eq!(created.id, "a1");
    assert_eq!(created.arguments_json, new.arguments_json);
    assert_eq!(created.payload_hash, HASH);
    assert_eq!(created.reason.as_deref(), Some("answer a review"));
    assert_eq!((created.created_at, created.expires_at), (at(0), at(60)));
    assert_eq!(created.decided_at, None);
    assert_eq!(created.consumed_at, None);
    assert_eq!(created.outcome, None);
    assert_eq!(created.card_event_id, None);
    let read = l.approval("a1", at(1)).await.unwrap().unwrap();
    assert_eq!(read, created);
    assert!(l.approval("nope", at(1)).await.unwrap().is_none());
    // An id is used once.
    let again = l.create_approval(&new).await;
    assert!(matches!(again, Err(LedgerError::Conflict(_))), "{again:?}");
}

pub async fn case_card_event(l: &dyn Ledger) {
    l.create_approval(&new_approval("c1")).await.unwrap();
    l.set_card_event("c1", "evt-123").await.unwrap();
    let row = l.approval("c1", at(1)).await.unwrap().unwrap();
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
    l.create_approval(&new_approval("e1")).await.unwrap();
    approved(l, "e2").await;
    for id in ["e1", "e2"] {
        let row = l.approval(id, at(60)).await.unwrap().unwrap();
        assert_eq!(row.status, ApprovalStatus::Expired, "{id} at expires_at");
        // Stored, not just reported: an earlier clock still reads it expired.
        let row = l.approval(id, at(2)).await.unwrap().unwrap();
        assert_eq!(row.status, ApprovalStatus::Expired, "{id} stored");
    }
}

pub async fn case_list_order_filter_and_expiry(l: &dyn Ledger) {
    for (i, id) in ["l1", "l2", "l3"].into_iter().enumerate() {
        let mut new = new_approval(id);
        new.created_at = at(i64::try_from(i).unwrap());
        new.expires_at = at(100 + i64::try_from(i).unwrap() * 100);
        l.create_approval(&new).await.unwrap();
    }
    let all = l.list_approvals(None, 10, at(5)).await.unwrap();
    let ids: Vec<_> = all.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["l3", "l2", "l1"]);
    let two = l.list_approvals(None, 2, at(5)).await.unwrap();
    assert_eq!(two.len(), 2);
    // At minute 150, l1 (expires 100) is past its time; the list stores and shows it expired.
    let all = l.list_approvals(None, 10, at(150)).await.unwrap();
    let status: Vec<_> = all.iter().map(|r| (r.id.as_str(), r.status)).collect();
    assert_eq!(
        status,
        [
            ("l3", ApprovalStatus::Pending),
            ("l2", ApprovalStatus::Pending),
            ("l1", ApprovalStatus::Expired)
        ]
    );
    let pending = l
        .list_approvals(Some(ApprovalStatus::Pending), 10, at(150))
        .await
        .unwrap();
    assert_eq!(
        pending.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["l3", "l2"]
    );
    let expired = l
        .list_approvals(Some(ApprovalStatus::Expired), 10, at(5))
        .await
        .unwrap();
    assert_eq!(
        expired.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["l1"]
    );
}

pub async fn case_single_approver(l: &dyn Ledger) {
    l.create_approval(&new_approval("s1")).await.unwrap();
    let row = l
        .record_decision(&decision("s1", "aa", Decision::Approve, 3), 1, at(4))
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved);
    assert_eq!(row.decided_at, Some(at(4)));
    let ds = l.decisions("s1").await.unwrap();
    assert_eq!(ds, vec![decision("s1", "aa", Decision::Approve, 3)]);
}

pub async fn case_threshold_two_distinct_approvers(l: &dyn Ledger) {
    l.create_approval(&new_approval("t1")).await.unwrap();
    let row = l
        .record_decision(&decision("t1", "aa", Decision::Approve, 1), 2, at(1))
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Pending);
    // The same approver twice counts once; the newer evidence replaces the older.
    let row = l
        .record_decision(&decision("t1", "aa", Decision::Approve, 2), 2, at(2))
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Pending);
    assert_eq!(row.decided_at, None);
    assert_eq!(
        l.decisions("t1").await.unwrap(),
        vec![decision("t1", "aa", Decision::Approve, 2)]
    );
    let row = l
        .record_decision(&decision("t1", "bb", Decision::Approve, 3), 2, at(3))
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved);
    assert_eq!(row.decided_at, Some(at(3)));
    assert_eq!(l.decisions("t1").await.unwrap().len(), 2);
}

pub async fn case_reject_wins_after_approve(l: &dyn Ledger) {
    approved(l, "r1").await;
    let row = l
        .record_decision(&decision("r1", "bb", Decision::Reject, 2), 1, at(2))
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Rejected);
    assert_eq!(row.decided_at, Some(at(2)));
    // Once rejected, more approvals change nothing.
    let row = l
        .record_decision(&decision("r1", "cc", Decision::Approve, 3), 1, at(3))
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Rejected);
    let refused = l.consume("r1", ACTION, HASH, at(4)).await;
    assert!(
        matches!(refused, Err(ConsumeError::Rejected)),
        "{refused:?}"
    );
    // A pending row with a rejection is rejected at once, whatever the threshold.
    l.create_approval(&new_approval("r2")).await.unwrap();
    let row = l
        .record_decision(&decision("r2", "aa", Decision::Reject, 1), 3, at(1))
        .await
        .unwrap();
    assert_eq!(row.status, ApprovalStatus::Rejected);
}

pub async fn case_decide_refusals(l: &dyn Ledger) {
    let missing = l
        .record_decision(&decision("nope", "aa", Decision::Approve, 1), 1, at(1))
        .await;
    assert!(matches!(missing, Err(DecideError::NotFound)), "{missing:?}");

    l.create_approval(&new_approval("d1")).await.unwrap();
    let late = l
        .record_decision(&decision("d1", "aa", Decision::Approve, 61), 1, at(61))
        .await;
    assert!(matches!(late, Err(DecideError::Expired)), "{late:?}");
    let row = l.approval("d1", at(2)).await.unwrap().unwrap();
    assert_eq!(
        row.status,
        ApprovalStatus::Expired,
        "refusal stored the expiry"
    );
    assert!(
        l.decisions("d1").await.unwrap().is_empty(),
        "a refused decision is not kept"
    );
    let again = l
        .record_decision(&decision("d1", "aa", Decision::Reject, 2), 1, at(2))
        .await;
    assert!(matches!(again, Err(DecideError::Expired)), "{again:?}");

    approved(l, "d2").await;
    l.consume("d2", ACTION, HASH, at(2)).await.unwrap();
    let after = l
        .record_decision(&decision("d2", "bb", Decision::Reject, 3), 1, at(3))
        .await;
    assert!(matches!(after, Err(DecideError::Consumed)), "{after:?}");
    let row = l.approval("d2", at(3)).await.unwrap().unwrap();
    assert_eq!(
        row.status,
        ApprovalStatus::Consumed,
        "a rejection after consumption is refused"
    );
}

pub async fn case_consume_once(l: &dyn Ledger) {
    approved(l, "k1").await;
    let row = l.consume("k1", ACTION, HASH, at(5)).await.unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);
    assert_eq!(row.consumed_at, Some(at(5)));
    let second = l.consume("k1", ACTION, HASH, at(6)).await;
    assert!(matches!(second, Err(ConsumeError::Consumed)), "{second:?}");
    // Consumed stays consumed past its expiry.
    let late = l.consume("k1", ACTION, HASH, at(90)).await;
    assert!(matches!(late, Err(ConsumeError::Consumed)), "{late:?}");
    let row = l.approval("k1", at(90)).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);
}

pub async fn case_consume_mismatch(l: &dyn Ledger) {
    approved(l, "m1").await;
    let edited = HASH.replace("aa", "ab");
    let r = l.consume("m1", ACTION, &edited, at(5)).await;
    assert!(
        matches!(r, Err(ConsumeError::Mismatch)),
        "edited payload: {r:?}"
    );
    let r = l.consume("m1", "discourse_post_reply", HASH, at(5)).await;
    assert!(
        matches!(r, Err(ConsumeError::Mismatch)),
        "other action: {r:?}"
    );
    // A mismatch consumes nothing: the right call still wins.
    let row = l.consume("m1", ACTION, HASH, at(5)).await.unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);
}

pub async fn case_consume_refusals(l: &dyn Ledger) {
    let r = l.consume("nope", ACTION, HASH, at(5)).await;
    assert!(matches!(r, Err(ConsumeError::NotFound)), "missing: {r:?}");

    l.create_approval(&new_approval("p1")).await.unwrap();
    let r = l.consume("p1", ACTION, HASH, at(5)).await;
    assert!(matches!(r, Err(ConsumeError::Pending)), "pending: {r:?}");

    approved(l, "x1").await;
    let r = l.consume("x1", ACTION, HASH, at(60)).await;
    assert!(
        matches!(r, Err(ConsumeError::Expired)),
        "approved at expires_at: {r:?}"
    );
    let row = l.approval("x1", at(5)).await.unwrap().unwrap();
    assert_eq!(
        row.status,
        ApprovalStatus::Expired,
        "consume stored the expiry"
    );
    let r = l.consume("x1", ACTION, HASH, at(5)).await;
    assert!(
        matches!(r, Err(ConsumeError::Expired)),
        "stored expired: {r:?}"
    );

    l.create_approval(&new_approval("x2")).await.unwrap();
    let r = l.consume("x2", ACTION, HASH, at(61)).await;
    assert!(
        matches!(r, Err(ConsumeError::Expired)),
        "pending past expiry: {r:?}"
    );
}

pub async fn case_record_outcome(l: &dyn Ledger) {
    approved(l, "o1").await;
    let early = l.record_outcome("o1", &WriteOutcome::Sent, at(2)).await;
    assert!(
        matches!(early, Err(LedgerError::Conflict(_))),
        "not consumed: {early:?}"
    );
    l.consume("o1", ACTION, HASH, at(3)).await.unwrap();
    let failed = WriteOutcome::Failed {
        code: "UPSTREAM_ERROR".to_owned(),
    };
    l.record_outcome("o1", &failed, at(4)).await.unwrap();
    let row = l.approval("o1", at(5)).await.unwrap().unwrap();
    assert_eq!(row.outcome, Some(failed));
    assert_eq!(row.outcome_at, Some(at(4)));
    let second = l.record_outcome("o1", &WriteOutcome::Sent, at(6)).await;
    assert!(
        matches!(second, Err(LedgerError::Conflict(_))),
        "second outcome: {second:?}"
    );
    let missing = l.record_outcome("nope", &WriteOutcome::Sent, at(6)).await;
    assert!(matches!(missing, Err(LedgerError::NotFound)), "{missing:?}");
}

pub async fn case_discard_pending(l: &dyn Ledger) {
    l.create_approval(&new_approval("g1")).await.unwrap();
    l.record_decision(&decision("g1", "aa", Decision::Approve, 1), 2, at(1))
        .await
        .unwrap();
    l.discard_pending("g1").await.unwrap();
    assert!(l.approval("g1", at(2)).await.unwrap().is_none());
    assert!(
        l.decisions("g1").await.unwrap().is_empty(),
        "decisions go with the row"
    );
    // The id is free again once discarded.
    l.create_approval(&new_approval("g1")).await.unwrap();

    approved(l, "g2").await;
    let r = l.discard_pending("g2").await;
    assert!(
        matches!(r, Err(LedgerError::Conflict(_))),
        "approved: {r:?}"
    );
    assert!(l.approval("g2", at(2)).await.unwrap().is_some());
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
}

fn csat(channel: Channel, score: u8, minute: i64) -> CsatEntry {
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
        (Channel::Mail, 5, 1),
        (Channel::Mail, 5, 2),
        (Channel::Mail, 1, 3),
        (Channel::AppStore, 3, 4),
        (Channel::Mail, 4, 10),
    ] {
        l.record_csat(&csat(ch, score, minute)).await.unwrap();
    }
    let all = l.csat_distribution(None, None).await.unwrap();
    assert_eq!(all.len(), 2, "the forum has no scores and is omitted");
    assert_eq!(all[0].channel, Channel::AppStore);
    assert_eq!(all[0].counts, [0, 0, 1, 0, 0]);
    assert_eq!(all[1].channel, Channel::Mail);
    assert_eq!(all[1].counts, [1, 0, 0, 1, 2]);
    let mail_late = l
        .csat_distribution(Some(Channel::Mail), Some(at(3)))
        .await
        .unwrap();
    assert_eq!(mail_late.len(), 1);
    assert_eq!(mail_late[0].counts, [1, 0, 0, 1, 0]);
    assert!(
        l.csat_distribution(Some(Channel::Forum), None)
            .await
            .unwrap()
            .is_empty()
    );
}

fn ticket(channel: Channel, r: &str, minute: i64) -> Ticket {
    Ticket {
        channel,
        ticket_ref: r.to_owned(),
        opened_at: at(minute),
        first_response_at: None,
    }
}

pub async fn case_tickets_and_sla(l: &dyn Ledger) {
    l.open_ticket(&ticket(Channel::Mail, "m-1", 0))
        .await
        .unwrap();
    // Opening again changes nothing (not even the opening time).
    l.open_ticket(&ticket(Channel::Mail, "m-1", 50))
        .await
        .unwrap();
    l.open_ticket(&ticket(Channel::Mail, "m-2", 30))
        .await
        .unwrap();
    l.open_ticket(&ticket(Channel::Mail, "m-3", 40))
        .await
        .unwrap();
    l.open_ticket(&ticket(Channel::Forum, "f-1", 10))
        .await
        .unwrap();
    l.open_ticket(&ticket(Channel::AppStore, "a-1", 5))
        .await
        .unwrap();
    // The same ref in another channel is another ticket.
    l.open_ticket(&ticket(Channel::Forum, "m-1", 45))
        .await
        .unwrap();

    l.mark_first_response(Channel::AppStore, "a-1", at(6))
        .await
        .unwrap();
    l.mark_first_response(Channel::Mail, "m-3", at(41))
        .await
        .unwrap();
    // A later response keeps the first time: m-3 stays answered, m-3 still not awaiting.
    l.mark_first_response(Channel::Mail, "m-3", at(99))
        .await
        .unwrap();
    let missing = l.mark_first_response(Channel::Mail, "nope", at(1)).await;
    assert!(matches!(missing, Err(LedgerError::NotFound)), "{missing:?}");

    let cutoffs = [(Channel::Mail, at(20)), (Channel::Forum, at(20))];
    let all = l.awaiting_first_response(None, &cutoffs).await.unwrap();
    assert_eq!(all.len(), 2, "app store has nothing awaiting: {all:?}");
    assert_eq!(all[0].channel, Channel::Forum);
    assert_eq!((all[0].awaiting, all[0].breached), (2, 1));
    assert_eq!(all[0].oldest_opened_at, Some(at(10)));
    assert_eq!(all[1].channel, Channel::Mail);
    assert_eq!(
        (all[1].awaiting, all[1].breached),
        (2, 1),
        "m-1 opened at 0 breaches"
    );
    assert_eq!(all[1].oldest_opened_at, Some(at(0)));

    // Per-channel cutoffs: a later mail cutoff breaches both; no forum cutoff breaches none.
    let mail = l
        .awaiting_first_response(Some(Channel::Mail), &[(Channel::Mail, at(35))])
        .await;
    let mail = mail.unwrap();
    assert_eq!(mail.len(), 1);
    assert_eq!((mail[0].awaiting, mail[0].breached), (2, 2));
    let forum = l
        .awaiting_first_response(Some(Channel::Forum), &[])
        .await
        .unwrap();
    assert_eq!((forum[0].awaiting, forum[0].breached), (2, 0));
    assert!(
        l.awaiting_first_response(Some(Channel::AppStore), &cutoffs)
            .await
            .unwrap()
            .is_empty()
    );
}

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
    }
}

pub async fn case_audit(l: &dyn Ledger) {
    assert!(l.recent_audit(10).await.unwrap().is_empty());
    let records = [
        audit(1, "asc_reviews_list", None),
        audit(3, "asc_review_reply", Some("APPROVAL_MISMATCH")),
        audit(2, "unknown", Some("UNKNOWN_TOOL")),
    ];
    for r in &records {
        l.record_audit(r).await.unwrap();
    }
    let recent = l.recent_audit(2).await.unwrap();
    assert_eq!(recent, vec![records[1].clone(), records[2].clone()]);
    assert_eq!(l.recent_audit(10).await.unwrap().len(), 3);
}

/// Expands to one `#[tokio::test]` per case; `$open` is an async fn returning
/// `(Arc<dyn Ledger>, guard)`, the guard keeping the database alive for the test.
macro_rules! conformance_suite {
    ($open:path) => {
        conformance_suite!(@cases $open;
            case_ping_and_backend,
            case_create_and_read,
            case_card_event,
            case_read_marks_expired,
            case_list_order_filter_and_expiry,
            case_single_approver,
            case_threshold_two_distinct_approvers,
            case_reject_wins_after_approve,
            case_decide_refusals,
            case_consume_once,
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

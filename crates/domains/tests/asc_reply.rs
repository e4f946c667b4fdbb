//! `asc_review_reply` through the real pipeline against the verifying fake: the locale gate, a
//! dry run that sends nothing, an approved reply sent exactly once with exactly the approved
//! body, replay and edits refused, replacement of an existing response, failed delivery.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use care_core::ledger::{ApprovalStatus, SupportChannel};
use chrono::{Duration, Utc};
use common::{Options, harness};
use serde_json::{Value, json};

const KO_BODY: &str = "소중한 리뷰 감사합니다! 알림 문제는 다음 업데이트에서 해결될 예정입니다. 불편을 드려 죄송합니다.";
const EN_BODY: &str =
    "Thank you for telling us. We have found the cause of the crash and the fix ships this week.";

fn reply(review_id: &str, body: &str, locale: &str) -> Value {
    json!({"review_id": review_id, "body": body, "locale": locale})
}

fn with_approval(mut args: Value, id: &str) -> Value {
    args["approval_id"] = json!(id);
    args
}

#[tokio::test]
async fn dry_run_shows_what_would_be_sent_and_sends_nothing() {
    let h = harness(Options::default()).await;
    let data = h
        .ok("asc_review_reply", reply("rev-ko-001", KO_BODY, "ko"))
        .await;
    assert_eq!(data["dry_run"], true);
    let w = &data["would_send"];
    assert_eq!(w["review_id"], "rev-ko-001");
    assert_eq!(w["app_id"], care_fakes::asc::DEMO_APP_ID);
    assert_eq!(w["app_name"], "<user_content>Demo Care</user_content>");
    assert_eq!(w["territory"], "KOR");
    assert_eq!(w["locale"], "ko");
    // Agent-written text comes back fenced, like every text the agent did not get from us.
    assert_eq!(w["body"], care_core::fence::fence(KO_BODY));
    assert_eq!(w["replaces_existing_response"], false);
    assert!(w.get("note").is_none());

    // An answered review: the reply would replace the response, and the dry run says so.
    let body = "다시 한 번 감사드립니다! 새 버전에서 기록 기능이 더 빨라졌습니다. 앞으로도 잘 부탁드립니다.";
    let data = h
        .ok("asc_review_reply", reply("rev-ko-002", body, "ko"))
        .await;
    assert_eq!(data["would_send"]["replaces_existing_response"], true);
    assert!(
        data["would_send"]["note"]
            .as_str()
            .unwrap()
            .contains("replaces")
    );

    assert_eq!(h.posts(), 0, "a dry run makes no write");
    assert!(h.fake.sent_replies().is_empty());
    assert!(h.fake.requests().iter().all(|r| r.authorized));
}

#[tokio::test]
async fn the_locale_gate_applies_in_dry_run_and_to_approval_requests() {
    let h = harness(Options::default()).await;
    for (args, label) in [
        (
            reply("rev-ko-001", KO_BODY, "en-US"),
            "Korean body as en-US",
        ),
        (
            reply("rev-de-001", EN_BODY, "de-DE"),
            "English body as de-DE",
        ),
        (
            reply("rev-en-001", EN_BODY, "sv"),
            "locale outside CARE_LOCALES",
        ),
    ] {
        assert_eq!(
            h.err("asc_review_reply", args.clone()).await,
            "LOCALE_REJECTED",
            "{label}"
        );
        let (code, _) = h
            .call(
                "approval_request",
                json!({"action": "asc_review_reply", "arguments": args}),
            )
            .await
            .unwrap_err();
        assert_eq!(code, "LOCALE_REJECTED", "{label}");
    }
    // The locale is matched case-insensitively, and reported in its configured spelling.
    let data = h
        .ok("asc_review_reply", reply("rev-en-002", EN_BODY, "en-gb"))
        .await;
    assert_eq!(data["would_send"]["locale"], "en-GB");
    let (code, error) = h
        .call("asc_review_reply", reply("rev-en-002", EN_BODY, "english"))
        .await
        .unwrap_err();
    assert_eq!(
        (code.as_str(), error["field"].as_str()),
        ("INVALID_INPUT", Some("locale"))
    );
    assert_eq!(h.posts(), 0);
}

#[tokio::test]
async fn a_configured_locale_list_replaces_the_default() {
    let h = harness(Options {
        extra_env: vec![("CARE_LOCALES", "sv, en-US".to_owned())],
        ..Options::default()
    })
    .await;
    assert_eq!(
        h.err("asc_review_reply", reply("rev-ko-001", KO_BODY, "ko"))
            .await,
        "LOCALE_REJECTED"
    );
    h.ok("asc_review_reply", reply("rev-en-001", EN_BODY, "en-US"))
        .await;
}

#[tokio::test]
async fn an_approved_reply_is_sent_once_with_exactly_the_approved_body() {
    let h = harness(Options {
        write_enabled: true,
        ..Options::default()
    })
    .await;
    let args = reply("rev-ko-001", KO_BODY, "ko");
    let (id, requested) = h.request_approval(args.clone()).await;
    assert_eq!(requested["status"], "pending");
    // The summary names the action and its target (the body is on the approvers' card).
    assert_eq!(
        requested["summary"],
        care_core::fence::fence(
            "reply to an App Store review: review rev-ko-001 of Demo Care (KOR), reply in ko"
        )
    );

    // Not approved yet: nothing goes out.
    assert_eq!(
        h.err("asc_review_reply", with_approval(args.clone(), &id))
            .await,
        "APPROVAL_REQUIRED"
    );
    assert_eq!(
        h.err("asc_review_reply", args.clone()).await,
        "APPROVAL_REQUIRED"
    );
    h.approve(&id).await;

    // An edited body under the same approval is a mismatch and consumes nothing.
    let edited = reply("rev-ko-001", &format!("{KO_BODY} 추가"), "ko");
    assert_eq!(
        h.err("asc_review_reply", with_approval(edited, &id)).await,
        "APPROVAL_MISMATCH"
    );
    let other_target = reply("rev-ja-001", KO_BODY, "ko");
    assert_eq!(
        h.err("asc_review_reply", with_approval(other_target, &id))
            .await,
        "APPROVAL_MISMATCH"
    );
    assert_eq!(h.posts(), 0);

    let data = h
        .ok("asc_review_reply", with_approval(args.clone(), &id))
        .await;
    assert_eq!(data["dry_run"], false);
    assert_eq!(data["sent"]["review_id"], "rev-ko-001");
    assert_eq!(data["approval"]["status"], "consumed");
    let sent = h.fake.sent_replies();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].review_id, "rev-ko-001");
    assert_eq!(
        sent[0].body, KO_BODY,
        "exactly the approved text, byte for byte"
    );
    assert_eq!(data["sent"]["response_id"], sent[0].response_id.as_str());
    assert!(!sent[0].replaced);
    assert_eq!(h.posts(), 1);
    let post = h
        .fake
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert!(post.authorized);
    assert_eq!(post.path, "/v1/customerReviewResponses");

    // Replay: refused, nothing sent again.
    assert_eq!(
        h.err("asc_review_reply", with_approval(args.clone(), &id))
            .await,
        "APPROVAL_CONSUMED"
    );
    assert_eq!(h.fake.sent_replies().len(), 1);
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);

    // The reply counts as the review's first response for the SLA.
    let rows = h
        .ledger
        .awaiting_first_response(
            Some(SupportChannel::AppStore),
            &[(SupportChannel::AppStore, Utc::now() - Duration::hours(24))],
        )
        .await
        .unwrap();
    assert!(rows.iter().all(|r| r.awaiting == 0), "{rows:?}");
}

#[tokio::test]
async fn an_answer_given_elsewhere_after_the_approval_is_a_mismatch() {
    let h = harness(Options {
        write_enabled: true,
        ..Options::default()
    })
    .await;
    let args = reply("rev-ko-001", KO_BODY, "ko");
    let (id, _) = h.request_approval(args.clone()).await;
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(
        row.checked_facts_json.as_deref(),
        Some(r#"{"replaces_existing_response":false}"#),
        "the approver was told this reply replaces nothing"
    );
    h.approve(&id).await;
    // A colleague answers the review in App Store Connect itself before the agent sends.
    assert!(h.fake.answer_elsewhere("rev-ko-001", "답변 감사합니다."));
    assert_eq!(
        h.err("asc_review_reply", with_approval(args.clone(), &id))
            .await,
        "APPROVAL_MISMATCH"
    );
    assert_eq!(h.posts(), 0, "the colleague's answer is not replaced");
    assert!(h.fake.sent_replies().is_empty());
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved, "nothing consumed");
}

#[tokio::test]
async fn a_reply_to_an_answered_review_replaces_its_response() {
    let h = harness(Options {
        write_enabled: true,
        ..Options::default()
    })
    .await;
    let body = "Vielen Dank! Der PDF-Export ist jetzt in Version 3.2 verfügbar, schauen Sie gern einmal rein.";
    let args = reply("rev-de-002", body, "de-DE");
    let (id, _) = h.request_approval(args.clone()).await;
    // What the approver is told about the target is stored with the approval.
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(
        row.checked_facts_json.as_deref(),
        Some(r#"{"replaces_existing_response":true}"#)
    );
    h.approve(&id).await;
    h.ok("asc_review_reply", with_approval(args, &id)).await;
    let sent = h.fake.sent_replies();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].replaced);
    assert_eq!(h.fake.response_of("rev-de-002").unwrap().body, body);
}

#[tokio::test]
async fn a_failed_delivery_spends_the_approval_and_is_not_retried() {
    let h = harness(Options {
        write_enabled: true,
        ..Options::default()
    })
    .await;
    let args = reply("rev-en-002", EN_BODY, "en-GB");
    let (id, _) = h.request_approval(args.clone()).await;
    h.approve(&id).await;
    h.fake.inject(
        care_fakes::asc::Failure::status("/v1/customerReviewResponses", 500).method("POST"),
    );
    let (code, error) = h
        .call("asc_review_reply", with_approval(args.clone(), &id))
        .await
        .unwrap_err();
    assert_eq!(code, "WRITE_FAILED");
    assert_eq!(error["cause"], "UPSTREAM_UNAVAILABLE");
    assert_eq!(h.posts(), 1, "exactly one delivery attempt");
    h.fake.clear_failures();
    assert_eq!(
        h.err("asc_review_reply", with_approval(args, &id)).await,
        "APPROVAL_CONSUMED"
    );
    assert_eq!(h.posts(), 1);
    assert!(h.fake.sent_replies().is_empty());
}

#[tokio::test]
async fn key_material_and_secrets_never_go_out() {
    let h = harness(Options {
        write_enabled: true,
        ..Options::default()
    })
    .await;
    let key_line = h
        .fake
        .key()
        .private_key_pem
        .lines()
        .nth(1)
        .unwrap()
        .to_owned();
    let bodies = [
        format!(
            "Thank you for the review. Here is something for you: {}",
            &key_line[..40]
        ),
        format!(
            "Thank you for the review. Here is the key:\n{}",
            h.fake.key().private_key_pem
        ),
    ];
    for body in bodies {
        let args = reply("rev-en-001", &body, "en-US");
        assert_eq!(
            h.err("asc_review_reply", args.clone()).await,
            "OUTBOUND_BLOCKED"
        );
        let (code, _) = h
            .call(
                "approval_request",
                json!({"action": "asc_review_reply", "arguments": args}),
            )
            .await
            .unwrap_err();
        assert_eq!(code, "OUTBOUND_BLOCKED");
    }
    assert_eq!(h.posts(), 0);
}

#[tokio::test]
async fn input_is_checked_before_anything_is_fetched() {
    let h = harness(Options::default()).await;
    for (args, field) in [
        (reply("rev-en-001", "", "en-US"), "body"),
        (reply("rev-en-001", &"a".repeat(20_001), "en-US"), "body"),
        (reply("rev en 001", EN_BODY, "en-US"), "review_id"),
        (reply(&"r".repeat(129), EN_BODY, "en-US"), "review_id"),
        (
            json!({"review_id": "rev-en-001", "body": EN_BODY}),
            "locale",
        ),
        (
            json!({"review_id": "rev-en-001", "body": EN_BODY, "locale": "en-US", "app_id": "1"}),
            "app_id",
        ),
    ] {
        let (code, error) = h.call("asc_review_reply", args).await.unwrap_err();
        assert_eq!(
            (code.as_str(), error["field"].as_str()),
            ("INVALID_INPUT", Some(field))
        );
    }
    assert!(h.fake.requests().is_empty());
    assert_eq!(
        h.err("asc_review_reply", reply("rev-missing", EN_BODY, "en-US"))
            .await,
        "NOT_FOUND"
    );
}

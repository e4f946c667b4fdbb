//! `discourse_post_reply` through the real pipeline against the verifying fake: the locale
//! gate, scope and closed topics refused before any approval, a dry run that sends nothing, an
//! approved reply posted exactly once with exactly the approved raw text and reply-to number,
//! replay and edits refused, the topic's state re-checked at send time, Discourse's refusals
//! answered with a fixed code and cause, and the key never leaving.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod forum;

use base64::Engine;
use care_core::ledger::ApprovalStatus;
use care_fakes::discourse::{
    TOPIC_ANNOUNCEMENT, TOPIC_ARCHIVED, TOPIC_CLOSED, TOPIC_FEATURE, TOPIC_HOSTILE, TOPIC_LONG,
    TOPIC_PRIVATE, TOPIC_UNANSWERED,
};
use forum::{Options, harness, inside_fence};
use serde_json::{Value, json};

const EN_BODY: &str = "Thanks for reporting this! Version 3.1.2 fixes the missing reminders; please update and tell us if they are back.";
const KO_BODY: &str =
    "알려 주셔서 감사합니다! 3.1.2 버전에서 알림 문제가 해결되었습니다. 업데이트 후 알려 주세요.";

fn reply(topic_id: u64, reply_to: Option<u64>, body: &str, locale: &str) -> Value {
    let mut args = json!({"topic_id": topic_id, "body": body, "locale": locale});
    if let Some(n) = reply_to {
        args["reply_to_post_number"] = json!(n);
    }
    args
}

fn with_approval(mut args: Value, id: &str) -> Value {
    args["approval_id"] = json!(id);
    args
}

fn live() -> Options {
    Options {
        write_enabled: true,
        ..Options::default()
    }
}

#[tokio::test]
async fn dry_run_shows_what_would_be_sent_and_sends_nothing() {
    let h = harness(Options::default()).await;
    let data = h
        .ok(
            "discourse_post_reply",
            reply(TOPIC_UNANSWERED, Some(1), EN_BODY, "en-US"),
        )
        .await;
    assert_eq!(data["dry_run"], true);
    let w = &data["would_send"];
    assert_eq!(w["topic_id"], TOPIC_UNANSWERED);
    assert_eq!(
        w["topic_title"],
        "<user_content>Notifications stopped after the last update</user_content>"
    );
    assert_eq!(w["category"], "<user_content>Support</user_content>");
    assert_eq!(w["reply_to_post_number"], 1);
    assert_eq!(w["answers"]["post_number"], 1);
    assert_eq!(w["answers"]["author"], "<user_content>minji</user_content>");
    assert_eq!(w["post_as"], "care_bot");
    assert_eq!(w["locale"], "en-US");
    assert_eq!(w["body"], care_core::fence::fence(EN_BODY));
    assert_eq!(
        w["topic_state"],
        json!({"open": true, "last_post_number": 1})
    );

    // Without reply_to_post_number the reply answers the topic as a whole.
    let data = h
        .ok(
            "discourse_post_reply",
            reply(TOPIC_FEATURE, None, EN_BODY, "en-us"),
        )
        .await;
    assert_eq!(data["would_send"]["reply_to_post_number"], Value::Null);
    assert_eq!(data["would_send"]["answers"]["post_number"], 1);
    assert_eq!(data["would_send"]["locale"], "en-US");
    assert_eq!(h.posts(), 0, "a dry run makes no write");
    assert!(h.fake.sent_posts().is_empty());
}

#[tokio::test]
async fn the_locale_gate_applies_in_dry_run_and_to_approval_requests() {
    let h = harness(Options::default()).await;
    for args in [
        reply(TOPIC_UNANSWERED, None, KO_BODY, "en-US"),
        reply(TOPIC_UNANSWERED, None, EN_BODY, "de-DE"),
        reply(TOPIC_UNANSWERED, None, EN_BODY, "sv"),
    ] {
        assert_eq!(
            h.err("discourse_post_reply", args.clone()).await,
            "LOCALE_REJECTED"
        );
        let (code, _) = h
            .call(
                "approval_request",
                json!({"action": "discourse_post_reply", "arguments": args}),
            )
            .await
            .unwrap_err();
        assert_eq!(code, "LOCALE_REJECTED");
    }
    h.ok(
        "discourse_post_reply",
        reply(TOPIC_UNANSWERED, None, KO_BODY, "ko"),
    )
    .await;
    assert_eq!(h.posts(), 0);
}

#[tokio::test]
async fn closed_archived_private_and_out_of_scope_topics_are_refused_before_approval() {
    let h = harness(live()).await;
    for (topic, code) in [
        (TOPIC_CLOSED, "UPSTREAM_REJECTED"),
        (TOPIC_ARCHIVED, "UPSTREAM_REJECTED"),
        (TOPIC_PRIVATE, "SCOPE_DENIED"),
        (TOPIC_ANNOUNCEMENT, "SCOPE_DENIED"),
        (4242, "NOT_FOUND"),
    ] {
        let args = reply(topic, None, EN_BODY, "en-US");
        assert_eq!(
            h.err("discourse_post_reply", args.clone()).await,
            code,
            "{topic}"
        );
        let (requested, _) = h
            .call(
                "approval_request",
                json!({"action": "discourse_post_reply", "arguments": args}),
            )
            .await
            .unwrap_err();
        assert_eq!(requested, code, "approval_request for {topic}");
    }
    assert!(h.ledger.list_approvals(None, 10).await.unwrap().is_empty());
    assert_eq!(h.posts(), 0);
}

#[tokio::test]
async fn an_approved_reply_is_posted_once_with_exactly_the_approved_text() {
    let h = harness(live()).await;
    // Reading the topic opens its forum ticket: it waits for the company.
    h.ok("discourse_topic_get", json!({"topic_id": TOPIC_UNANSWERED}))
        .await;
    let sla = h.ok("sla_status", json!({"channel": "forum"})).await;
    assert_eq!(sla["channels"][0]["awaiting"], 1, "{sla}");
    h.fake.clear_requests();
    let args = reply(TOPIC_UNANSWERED, Some(1), EN_BODY, "en-US");
    let (id, requested) = h.request_approval(args.clone()).await;
    assert_eq!(requested["status"], "pending");
    let summary = inside_fence(&requested["summary"]);
    assert!(
        summary.starts_with("reply in a forum topic: topic 101 "),
        "{summary}"
    );
    assert!(
        summary.contains("&lt;user_content&gt;Notifications stopped"),
        "the title is fenced on the card: {summary}"
    );
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    let facts: Value = serde_json::from_str(row.checked_facts_json.as_deref().unwrap()).unwrap();
    assert_eq!(facts["topic_state"], "open");
    assert_eq!(facts["last_post_number"], 1);
    assert_eq!(facts["answered_post_number"], 1);

    assert_eq!(
        h.err("discourse_post_reply", with_approval(args.clone(), &id))
            .await,
        "APPROVAL_REQUIRED"
    );
    assert_eq!(
        h.err("discourse_post_reply", args.clone()).await,
        "APPROVAL_REQUIRED"
    );
    h.approve(&id).await;

    // Edits under the same approval: the body, the post answered, the topic.
    for edited in [
        reply(
            TOPIC_UNANSWERED,
            Some(1),
            &format!("{EN_BODY} P.S."),
            "en-US",
        ),
        reply(TOPIC_UNANSWERED, None, EN_BODY, "en-US"),
        reply(TOPIC_FEATURE, Some(1), EN_BODY, "en-US"),
        reply(TOPIC_UNANSWERED, Some(1), EN_BODY, "en-GB"),
    ] {
        assert_eq!(
            h.err("discourse_post_reply", with_approval(edited, &id))
                .await,
            "APPROVAL_MISMATCH"
        );
    }
    assert_eq!(h.posts(), 0);

    // Two concurrent sends: exactly one goes out.
    let call = with_approval(args.clone(), &id);
    let (a, b) = tokio::join!(
        h.call("discourse_post_reply", call.clone()),
        h.call("discourse_post_reply", call.clone())
    );
    let (sent, other) = match (a, b) {
        (Ok(sent), Err((code, _))) | (Err((code, _)), Ok(sent)) => (sent, code),
        other => panic!("expected one success: {other:?}"),
    };
    assert_eq!(other, "APPROVAL_CONSUMED");
    assert_eq!(sent["dry_run"], false);
    assert_eq!(sent["approval"]["status"], "consumed");
    let posted = h.fake.sent_posts();
    assert_eq!(posted.len(), 1);
    assert_eq!(
        posted[0].raw, EN_BODY,
        "exactly the approved text, byte for byte"
    );
    assert_eq!(posted[0].topic_id, TOPIC_UNANSWERED);
    assert_eq!(posted[0].reply_to_post_number, Some(1));
    assert_eq!(posted[0].post_number, 2);
    assert_eq!(sent["sent"]["post_id"], posted[0].post_id);
    assert_eq!(sent["sent"]["post_number"], 2);
    assert_eq!(h.posts(), 1);
    let post = h
        .fake
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert!(post.authorized);
    assert_eq!(post.path, "/posts.json");
    assert_eq!(post.header("api-username"), Some("care_bot"));
    let body: Value = serde_json::from_str(post.body.as_deref().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"topic_id": TOPIC_UNANSWERED, "raw": EN_BODY, "reply_to_post_number": 1}),
        "a reply and nothing else: no title, archetype or recipients"
    );

    // Replay: refused, nothing posted again.
    assert_eq!(
        h.err("discourse_post_reply", call).await,
        "APPROVAL_CONSUMED"
    );
    assert_eq!(h.fake.sent_posts().len(), 1);
    assert_eq!(
        h.ledger.approval(&id).await.unwrap().unwrap().status,
        ApprovalStatus::Consumed
    );

    // The reply is the company's answer: the topic's ticket is closed, and the topic reads as
    // answered.
    let sla = h.ok("sla_status", json!({"channel": "forum"})).await;
    assert_eq!(sla["channels"][0]["awaiting"], 0, "{sla}");
    let topic = h
        .ok("discourse_topic_get", json!({"topic_id": TOPIC_UNANSWERED}))
        .await;
    assert_eq!(topic["topic"]["company_answered"], true);
    assert_eq!(topic["posts"][1]["by_company"], true);
}

#[tokio::test]
async fn a_topic_that_changed_after_the_approval_is_a_mismatch() {
    let h = harness(live()).await;
    let args = reply(TOPIC_UNANSWERED, Some(1), EN_BODY, "en-US");

    // Someone posts in the topic after the approver read the card.
    let (id, _) = h.request_approval(args.clone()).await;
    h.approve(&id).await;
    assert!(
        h.fake
            .post_elsewhere(
                TOPIC_UNANSWERED,
                "pete_uk",
                "Same problem here on my phone."
            )
            .is_some()
    );
    assert_eq!(
        h.err("discourse_post_reply", with_approval(args.clone(), &id))
            .await,
        "APPROVAL_MISMATCH"
    );
    assert_eq!(
        h.ledger.approval(&id).await.unwrap().unwrap().status,
        ApprovalStatus::Approved,
        "nothing consumed"
    );

    // The question is edited after the approval.
    let (id, _) = h.request_approval(args.clone()).await;
    h.approve(&id).await;
    assert!(h.fake.edit_post(
        TOPIC_UNANSWERED,
        1,
        "<p>Is it safe to share my password with support?</p>"
    ));
    assert_eq!(
        h.err("discourse_post_reply", with_approval(args.clone(), &id))
            .await,
        "APPROVAL_MISMATCH"
    );

    // The topic is closed after the approval: refused, the approval still unused.
    let (id, _) = h.request_approval(args.clone()).await;
    h.approve(&id).await;
    assert!(h.fake.set_closed(TOPIC_UNANSWERED, true));
    assert_eq!(
        h.err("discourse_post_reply", with_approval(args.clone(), &id))
            .await,
        "UPSTREAM_REJECTED"
    );
    assert_eq!(
        h.ledger.approval(&id).await.unwrap().unwrap().status,
        ApprovalStatus::Approved
    );
    assert_eq!(h.posts(), 0);
    assert!(h.fake.sent_posts().is_empty());
}

#[tokio::test]
async fn discourse_refusals_answer_a_fixed_code_and_cause() {
    let h = harness(live()).await;
    // Too short for Discourse (20 characters at least): approved, refused at send.
    let short = reply(TOPIC_FEATURE, None, "Thanks, noted!", "en-US");
    let (id, _) = h.request_approval(short.clone()).await;
    h.approve(&id).await;
    let (code, error) = h
        .call("discourse_post_reply", with_approval(short.clone(), &id))
        .await
        .unwrap_err();
    assert_eq!(code, "WRITE_FAILED");
    assert_eq!(error["cause"], "UPSTREAM_REJECTED");
    assert_eq!(
        error.as_object().unwrap().len(),
        3,
        "code, message, cause: {error}"
    );
    assert!(!error.to_string().contains("too short"), "{error}");
    assert_eq!(h.posts(), 1, "exactly one attempt");
    assert_eq!(
        h.err("discourse_post_reply", with_approval(short, &id))
            .await,
        "APPROVAL_CONSUMED"
    );
    assert_eq!(h.posts(), 1);

    // A duplicate of the company's earlier reply.
    let body = "Dark mode is on our list for the next release; we will post here when it ships.";
    let first = reply(TOPIC_FEATURE, None, body, "en-US");
    let (id, _) = h.request_approval(first.clone()).await;
    h.approve(&id).await;
    h.ok("discourse_post_reply", with_approval(first.clone(), &id))
        .await;
    let (id, _) = h.request_approval(first.clone()).await;
    h.approve(&id).await;
    let (code, error) = h
        .call("discourse_post_reply", with_approval(first, &id))
        .await
        .unwrap_err();
    assert_eq!(
        (code.as_str(), error["cause"].as_str()),
        ("WRITE_FAILED", Some("UPSTREAM_REJECTED"))
    );
    assert_eq!(h.fake.sent_posts().len(), 1);

    // A failed delivery: the approval is spent, never retried.
    let args = reply(TOPIC_UNANSWERED, None, EN_BODY, "en-US");
    let (id, _) = h.request_approval(args.clone()).await;
    h.approve(&id).await;
    h.fake
        .inject(care_fakes::discourse::Failure::status("/posts.json", 500).method("POST"));
    let (code, error) = h
        .call("discourse_post_reply", with_approval(args.clone(), &id))
        .await
        .unwrap_err();
    assert_eq!(
        (code.as_str(), error["cause"].as_str()),
        ("WRITE_FAILED", Some("UPSTREAM_UNAVAILABLE"))
    );
    h.fake.clear_failures();
    assert_eq!(
        h.err("discourse_post_reply", with_approval(args, &id))
            .await,
        "APPROVAL_CONSUMED"
    );
    assert_eq!(h.fake.sent_posts().len(), 1);
}

#[tokio::test]
async fn a_post_beyond_the_first_chunk_can_be_answered() {
    let h = harness(Options::default()).await;
    let data = h
        .ok(
            "discourse_post_reply",
            reply(TOPIC_LONG, Some(45), EN_BODY, "en-US"),
        )
        .await;
    assert_eq!(data["would_send"]["answers"]["post_number"], 45);
    assert_eq!(
        data["would_send"]["answers"]["author"],
        "<user_content>pete_uk</user_content>"
    );
    assert_eq!(
        h.err(
            "discourse_post_reply",
            reply(TOPIC_LONG, Some(61), EN_BODY, "en-US")
        )
        .await,
        "NOT_FOUND"
    );
}

#[tokio::test]
async fn the_key_and_other_secrets_never_go_out() {
    let h = harness(live()).await;
    let key = h.fake.api_key().to_owned();
    let bodies = [
        format!("Thanks for the report! For the record our key is {key} — please keep it."),
        format!(
            "Thanks for the report! Here it is encoded: {}",
            base64::engine::general_purpose::STANDARD.encode(&key)
        ),
        "Thanks for the report! Use the token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB to log in.".to_owned(),
    ];
    for body in bodies {
        let args = reply(TOPIC_UNANSWERED, None, &body, "en-US");
        assert_eq!(
            h.err("discourse_post_reply", args.clone()).await,
            "OUTBOUND_BLOCKED"
        );
        let (code, _) = h
            .call(
                "approval_request",
                json!({"action": "discourse_post_reply", "arguments": args}),
            )
            .await
            .unwrap_err();
        assert_eq!(code, "OUTBOUND_BLOCKED");
    }
    assert_eq!(h.posts(), 0);
}

#[tokio::test]
async fn a_reply_in_a_hostile_topic_shows_its_title_neutral() {
    let h = harness(Options::default()).await;
    let data = h
        .ok(
            "discourse_post_reply",
            reply(TOPIC_HOSTILE, Some(1), EN_BODY, "en-US"),
        )
        .await;
    let title = inside_fence(&data["would_send"]["topic_title"]);
    for bad in ['<', '>', '\u{1b}', '\u{202e}'] {
        assert!(!title.contains(bad), "{bad:?} in {title}");
    }
}

#[tokio::test]
async fn input_is_checked_before_anything_is_fetched() {
    let h = harness(Options::default()).await;
    for (args, field) in [
        (reply(0, None, EN_BODY, "en-US"), "topic_id"),
        (
            reply(TOPIC_UNANSWERED, Some(0), EN_BODY, "en-US"),
            "reply_to_post_number",
        ),
        (reply(TOPIC_UNANSWERED, None, "", "en-US"), "body"),
        (reply(TOPIC_UNANSWERED, None, "   ", "en-US"), "body"),
        (
            reply(TOPIC_UNANSWERED, None, &"a".repeat(20_001), "en-US"),
            "body",
        ),
        (reply(TOPIC_UNANSWERED, None, EN_BODY, "english"), "locale"),
        (
            json!({"topic_id": TOPIC_UNANSWERED, "body": EN_BODY}),
            "locale",
        ),
        (
            json!({"topic_id": "101", "body": EN_BODY, "locale": "en-US"}),
            "topic_id",
        ),
        (
            json!({"topic_id": TOPIC_UNANSWERED, "body": EN_BODY, "locale": "en-US", "archetype": "private_message"}),
            "archetype",
        ),
        (
            json!({"topic_id": TOPIC_UNANSWERED, "body": EN_BODY, "locale": "en-US", "target_recipients": "alice"}),
            "target_recipients",
        ),
    ] {
        let (code, error) = h.call("discourse_post_reply", args).await.unwrap_err();
        assert_eq!(
            (code.as_str(), error["field"].as_str()),
            ("INVALID_INPUT", Some(field))
        );
    }
    assert!(h.fake.requests().is_empty());
}

//! The mail read tools against both peers (the in-process fake and Dovecot): listing newest
//! first with paging, reading (text preferred, HTML converted, attachments listed only),
//! server-side search (ASCII and UTF-8), threads across INBOX and Sent, and the promise that
//! no read sets `\Seen`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mail_common;

use care_core::fence::fence;
use care_fakes::mail::DEMO_TICKET_ID;
use mail_common::{Harness, Options, harness, peers};
use serde_json::{Value, json};

fn texts(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|m| m[key].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn seeded(peer: mail_common::Peer) -> Harness {
    let h = harness(peer, Options::default()).await;
    h.seed_demo().await;
    h
}

#[tokio::test]
async fn the_inbox_is_listed_newest_first_decoded_fenced_and_paged() {
    for peer in peers() {
        let h = seeded(peer).await;
        let label = h.label();
        let all = h.ok("mail_list", json!({})).await;
        assert_eq!(all["count"], 8, "{label}: {all}");
        assert_eq!(all["preview_decoded"], true);
        let messages = all["messages"].as_array().unwrap();
        let uids: Vec<u64> = messages
            .iter()
            .map(|m| m["uid"].as_u64().unwrap())
            .collect();
        assert!(
            uids.windows(2).all(|w| w[0] > w[1]),
            "{label}: newest first {uids:?}"
        );
        let ko = messages
            .iter()
            .find(|m| m["message_id"] == "ticket-ko-001@mail.example.co.kr")
            .unwrap();
        assert_eq!(
            ko["subject"],
            fence("주문 문의: 결제가 두 번 됐어요"),
            "{label}"
        );
        assert_eq!(
            ko["from"],
            fence(&format!(
                "김민지 <{}>",
                h.customer("kim.minji@example.co.kr")
            )),
            "{label}"
        );
        let invoice = messages
            .iter()
            .find(|m| m["message_id"] == "ticket-invoice-001@example.org")
            .unwrap();
        assert_eq!(invoice["has_attachments"], true, "{label}");
        assert!(
            invoice["flags"]
                .as_array()
                .unwrap()
                .contains(&json!("\\Seen")),
            "{label}: {invoice}"
        );
        assert_eq!(ko["has_attachments"], false);
        assert!(ko["date"].as_str().unwrap().ends_with("+00:00"));

        // Pages of 3 cover the inbox once, in the same order.
        let mut paged = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..5 {
            let mut args = json!({"limit": 3});
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let page = h.ok("mail_list", args).await;
            paged.extend(texts(&page["messages"], "message_id"));
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(paged, texts(&all["messages"], "message_id"), "{label}");

        let unseen = h.ok("mail_list", json!({"unseen_only": true})).await;
        assert_eq!(unseen["count"], 6, "{label}: {unseen}");
        let recent = h
            .ok(
                "mail_list",
                json!({"since": (chrono::Utc::now() - chrono::Duration::hours(11)).to_rfc3339()}),
            )
            .await;
        assert_eq!(recent["count"], 3, "{label}: {recent}");
        let sent = h.ok("mail_list", json!({"mailbox": "Sent"})).await;
        assert_eq!(sent["count"], 1, "{label}");
        assert_eq!(
            h.err("mail_list", json!({"cursor": "x"})).await,
            "INVALID_INPUT"
        );
        assert_eq!(
            h.err("mail_list", json!({"cursor": "1.5"})).await,
            "INVALID_INPUT",
            "{label}: a cursor of another mailbox generation"
        );
        assert_eq!(
            h.err("mail_list", json!({"mailbox": "Nope"})).await,
            "NOT_FOUND"
        );
        assert_eq!(
            h.err("mail_list", json!({"limit": 0})).await,
            "INVALID_INPUT"
        );
        assert_eq!(
            h.err("mail_list", json!({"limit": 101})).await,
            "INVALID_INPUT"
        );
    }
}

#[tokio::test]
async fn reading_decodes_prefers_text_lists_attachments_and_leaves_seen_unset() {
    for peer in peers() {
        let h = seeded(peer).await;
        let label = h.label();
        let before = h.flags(&h.support, "INBOX").await;

        let invoice = h
            .ok(
                "mail_read",
                json!({"message_id": "<ticket-invoice-001@example.org>"}),
            )
            .await;
        assert_eq!(invoice["body_format"], "text/plain", "{label}");
        assert_eq!(
            invoice["body"],
            fence("Hi, the attached invoice shows two charges for November. Could you check?"),
            "{label}"
        );
        let attachments = invoice["attachments"].as_array().unwrap();
        assert_eq!(attachments.len(), 1, "{label}: {invoice}");
        assert_eq!(attachments[0]["name"], fence("invoice-2026-11.pdf"));
        assert_eq!(attachments[0]["content_type"], fence("application/pdf"));
        assert!(attachments[0]["size"].as_u64().unwrap() > 0);
        assert_eq!(invoice["truncated"], false);
        assert_eq!(invoice["preview_decoded"], true);

        let ko = h
            .ok(
                "mail_read",
                json!({"message_id": "ticket-ko-001@mail.example.co.kr"}),
            )
            .await;
        assert_eq!(
            ko["body"],
            fence("안녕하세요. 이번달 구독 결제가 두 번 됐어요. 한 번은 환불해 주세요."),
            "{label}: base64 UTF-8 body"
        );

        let html = h
            .ok(
                "mail_read",
                json!({"message_id": "ticket-html-001@example.net"}),
            )
            .await;
        assert_eq!(html["body_format"], "text/html (converted to text)");
        let body = html["body"].as_str().unwrap();
        assert!(
            body.contains("export") && body.contains("Thanks, Sam"),
            "{label}: {body}"
        );
        let inner = care_core::fence::fenced_inner(body).unwrap();
        assert!(
            !inner.contains('<') && !inner.contains("steal()"),
            "{label}: {body}"
        );

        // By UID, in another mailbox.
        let sent = h.ok("mail_list", json!({"mailbox": "Sent"})).await;
        let uid = sent["messages"][0]["uid"].clone();
        let reply = h
            .ok("mail_read", json!({"uid": uid, "mailbox": "Sent"}))
            .await;
        assert_eq!(
            reply["message"]["in_reply_to"],
            h.own(b"thread-root-001@example.com")
                .iter()
                .map(|b| *b as char)
                .collect::<String>()
        );
        assert_eq!(
            reply["body"],
            fence("Open Settings > Family and tap Invite.")
        );

        let jordan = h
            .ok("mail_read", json!({"message_id": DEMO_TICKET_ID}))
            .await;
        assert!(
            jordan["body"]
                .as_str()
                .unwrap()
                .contains("medication reminders")
        );

        // Every read above was a read: not one flag changed.
        assert_eq!(
            h.flags(&h.support, "INBOX").await,
            before,
            "{label}: \\Seen must stay unset"
        );
        assert!(
            before
                .iter()
                .filter(|(_, f)| !f.iter().any(|x| x.contains("Seen")))
                .count()
                >= 6,
            "{label}: the seed has unseen mail: {before:?}"
        );

        assert_eq!(
            h.err("mail_read", json!({"message_id": "nobody@nowhere.test"}))
                .await,
            "NOT_FOUND"
        );
        assert_eq!(
            h.err("mail_read", json!({"uid": 999_999})).await,
            "NOT_FOUND"
        );
        for bad in [
            json!({}),
            json!({"uid": 1, "message_id": DEMO_TICKET_ID}),
            json!({"uid": 0}),
            json!({"message_id": "no-at-sign"}),
            json!({"message_id": "a@b\r\nX: y"}),
            json!({"uid": 1, "mailbox": "INBOX*"}),
        ] {
            assert_eq!(
                h.err("mail_read", bad.clone()).await,
                "INVALID_INPUT",
                "{label}: {bad}"
            );
        }
    }
}

#[tokio::test]
async fn search_runs_on_the_server_in_ascii_and_utf8() {
    for peer in peers() {
        let h = seeded(peer).await;
        let label = h.label();
        let count = |v: &Value| v["count"].as_u64().unwrap();
        let by_subject = h.ok("mail_search", json!({"subject": "invoice"})).await;
        assert_eq!(count(&by_subject), 1, "{label}: {by_subject}");
        assert_eq!(
            by_subject["messages"][0]["message_id"],
            "ticket-invoice-001@example.org"
        );
        let by_from = h.ok("mail_search", json!({"from": "robin"})).await;
        assert_eq!(count(&by_from), 2, "{label}: {by_from}");
        let by_text = h.ok("mail_search", json!({"text": "medication"})).await;
        assert_eq!(count(&by_text), 1, "{label}: {by_text}");
        let korean = h.ok("mail_search", json!({"subject": "결제가"})).await;
        assert_eq!(
            count(&korean),
            1,
            "{label}: RFC 2047 subject searched as UTF-8: {korean}"
        );
        let both = h
            .ok(
                "mail_search",
                json!({"from": "robin", "subject": "brother", "limit": 1}),
            )
            .await;
        assert_eq!(
            (count(&both), both["total_matches"].as_u64()),
            (1, Some(2)),
            "{label}"
        );
        let future = h
            .ok(
                "mail_search",
                json!({"text": "a", "since": (chrono::Utc::now() + chrono::Duration::days(2)).to_rfc3339()}),
            )
            .await;
        assert_eq!(count(&future), 0, "{label}");
        let quoted = h
            .ok("mail_search", json!({"subject": "\"quoted\" \\ back"}))
            .await;
        assert_eq!(count(&quoted), 0, "{label}");
        for bad in [
            json!({}),
            json!({"subject": "x\r\nA1 LOGOUT"}),
            json!({"text": ""}),
            json!({"from": "a".repeat(201)}),
        ] {
            assert_eq!(
                h.err("mail_search", bad.clone()).await,
                "INVALID_INPUT",
                "{label}: {bad}"
            );
        }
    }
}

#[tokio::test]
async fn a_thread_is_followed_across_inbox_and_sent_oldest_first() {
    for peer in peers() {
        let h = seeded(peer).await;
        let label = h.label();
        let own = |id: &str| String::from_utf8(h.own(id.as_bytes())).unwrap();
        let followup = own("thread-followup-001@example.com");
        let thread = h.ok("mail_thread", json!({"message_id": followup})).await;
        let ids = texts(&thread["messages"], "message_id");
        assert_eq!(
            ids,
            [
                own("thread-root-001@example.com"),
                "care-earlier-reply-001@care.test".to_owned(),
                followup.clone()
            ],
            "{label}: {thread}"
        );
        let mailboxes = texts(&thread["messages"], "mailbox");
        assert_eq!(mailboxes, ["INBOX", "Sent", "INBOX"], "{label}");
        // From the root, the same conversation.
        let from_root = h
            .ok(
                "mail_thread",
                json!({"message_id": own("thread-root-001@example.com")}),
            )
            .await;
        assert_eq!(texts(&from_root["messages"], "message_id"), ids, "{label}");
        // A message without a thread is its own.
        let alone = h
            .ok("mail_thread", json!({"message_id": DEMO_TICKET_ID}))
            .await;
        assert_eq!(alone["count"], 1, "{label}");
        assert_eq!(
            h.err("mail_thread", json!({"message_id": "missing@nowhere.test"}))
                .await,
            "NOT_FOUND"
        );
    }
}

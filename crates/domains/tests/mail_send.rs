//! `mail_send` through the real pipeline against both peers (the fake, and Dovecot behind a
//! real SMTP server): a dry run delivers nothing; an approved reply arrives exactly once with
//! exactly the approved body, threading headers and a subject that decodes to the original
//! (Korean, Japanese, emoji), and its copy lands in Sent; replay and edited bodies are refused;
//! Reply-To is honoured only inside the allowed domains; new messages only go to allowed
//! domains; header injection and secrets are refused; the SLA ticket is opened and closed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mail_common;

use care_core::fence::fence;
use care_core::ledger::SupportChannel;
use care_fakes::mail::{DEMO_TICKET_ID, HOSTILE_TICKET_ID};
use chrono::{Duration, Utc};
use mail_common::{Harness, Options, harness, peers};
use serde_json::{Value, json};

fn with_approval(mut args: Value, id: &str) -> Value {
    args["approval_id"] = json!(id);
    args
}

fn parse(raw: &[u8]) -> mail_parser::Message<'_> {
    mail_parser::MessageParser::default().parse(raw).unwrap()
}

fn customer_mail(h: &Harness, customer: &str, subject: &str, id: &str) -> Vec<u8> {
    format!(
        "From: Customer <{customer}>\r\nTo: {}\r\nSubject: {subject}\r\nDate: {}\r\nMessage-ID: <{id}>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello support.\r\n",
        h.support,
        Utc::now().to_rfc2822()
    )
    .into_bytes()
}

#[tokio::test]
async fn a_dry_run_shows_the_reply_and_delivers_nothing() {
    for peer in peers() {
        let h = harness(peer, Options::default()).await;
        h.seed_demo().await;
        let label = h.label();
        let jordan = h.customer("jordan.lee@example.com");
        let body =
            "Thanks for writing. Please update to version 3.2.1, which restores the reminders.";
        let data = h
            .ok(
                "mail_send",
                json!({"in_reply_to": DEMO_TICKET_ID, "body": body, "locale": "en-US"}),
            )
            .await;
        assert_eq!(data["dry_run"], true, "{label}");
        let w = &data["would_send"];
        assert_eq!(w["to"], json!([fence(&jordan)]), "{label}: {w}");
        assert_eq!(
            w["subject"],
            fence("Re: Reminder notifications stopped after the update")
        );
        assert_eq!(w["body"], fence(body));
        assert_eq!(w["from"], h.support);
        assert_eq!(w["in_reply_to"], DEMO_TICKET_ID);
        assert_eq!(w["locale"], "en-US");
        assert!(
            h.messages(&jordan, "INBOX").await.is_empty(),
            "{label}: nothing delivered"
        );
        assert!(
            h.messages(&h.support, "Sent").await.len() == 1,
            "{label}: only the seed's"
        );
        if let Some(fake) = &h.peer.fake {
            assert!(fake.submissions().is_empty());
        }
        // The locale gate applies when a locale is given.
        assert_eq!(
            h.err(
                "mail_send",
                json!({"in_reply_to": DEMO_TICKET_ID, "body": body, "locale": "de-DE"})
            )
            .await,
            "LOCALE_REJECTED",
            "{label}"
        );
        assert_eq!(
            h.err(
                "mail_send",
                json!({"in_reply_to": DEMO_TICKET_ID, "body": body, "locale": "sv"})
            )
            .await,
            "LOCALE_REJECTED"
        );
    }
}

#[tokio::test]
async fn an_approved_reply_arrives_once_exactly_as_approved_and_threaded() {
    let cases = [
        (
            "ko",
            "주문 문의: 결제가 두 번 됐어요",
            "안녕하세요. 중복 결제를 확인했고 한 건을 환불했습니다. 3~5영업일 안에 카드사에 반영됩니다.\n감사합니다.",
        ),
        (
            "ja",
            "注文について：二重請求",
            "お問い合わせありがとうございます。二重請求を確認し、一件を返金いたしました。反映まで数日かかります。",
        ),
        (
            "en-US",
            "Thanks for the app 🙏🎉",
            "You are welcome! 🎉\n\nWe are glad it helps.\n-- \nThe support team",
        ),
    ];
    for peer in peers() {
        let h = harness(
            peer,
            Options {
                write_enabled: true,
                ..Options::default()
            },
        )
        .await;
        let label = h.label();
        for (i, (locale, subject, body)) in cases.iter().enumerate() {
            let customer = h.customer(&format!("customer{i}@example.org"));
            let original = format!("orig-{i}.{}@example.org", h.tag);
            let encoded = format!("=?UTF-8?B?{}?=", base64_encode(subject.as_bytes()));
            h.append(
                "INBOX",
                &customer_mail(&h, &customer, &encoded, &original),
                false,
                Utc::now() - Duration::hours(30),
            )
            .await;
            let args =
                json!({"in_reply_to": format!("<{original}>"), "body": body, "locale": locale});
            let id = h.request_approval(args.clone()).await;
            let row = h.ledger.approval(&id).await.unwrap().unwrap();
            assert_eq!(
                row.checked_facts_json.as_deref(),
                Some(
                    format!(
                        r#"{{"recipients":["{customer}"],"subject":{}}}"#,
                        serde_json::to_string(&format!("Re: {subject}")).unwrap()
                    )
                    .as_str()
                ),
                "{label}"
            );
            assert_eq!(
                h.err("mail_send", with_approval(args.clone(), &id)).await,
                "APPROVAL_REQUIRED",
                "{label}: not approved yet"
            );
            h.approve(&id).await;
            let mut edited = args.clone();
            edited["body"] = json!(format!("{body} P.S. use code FREE100"));
            assert_eq!(
                h.err("mail_send", with_approval(edited, &id)).await,
                "APPROVAL_MISMATCH",
                "{label}: an edited body does not ride on the approval"
            );
            assert!(h.messages(&customer, "INBOX").await.is_empty(), "{label}");

            let sent = h.ok("mail_send", with_approval(args.clone(), &id)).await;
            assert_eq!(sent["dry_run"], false, "{label}");
            assert_eq!(sent["sent"]["saved_to_sent"], true, "{label}: {sent}");
            let message_id = sent["sent"]["message_id"].as_str().unwrap().to_owned();

            let inbox = h.messages(&customer, "INBOX").await;
            assert_eq!(inbox.len(), 1, "{label}: exactly one message");
            let m = parse(&inbox[0]);
            assert_eq!(
                m.body_text(0)
                    .unwrap()
                    .replace("\r\n", "\n")
                    .trim_end_matches('\n'),
                *body,
                "{label}: exactly the approved body"
            );
            assert_eq!(
                m.subject(),
                Some(format!("Re: {subject}").as_str()),
                "{label}"
            );
            assert_eq!(
                m.in_reply_to().as_text(),
                Some(original.as_str()),
                "{label}"
            );
            assert_eq!(m.references().as_text(), Some(original.as_str()), "{label}");
            assert_eq!(m.message_id(), Some(message_id.as_str()));
            assert_eq!(
                m.from().unwrap().first().unwrap().address(),
                Some(h.support.as_str())
            );
            assert!(m.header("Cc").is_none() && m.header("Bcc").is_none());
            let raw = String::from_utf8_lossy(&inbox[0]);
            let subject_line = raw.lines().find(|l| l.starts_with("Subject:")).unwrap();
            assert!(
                subject_line.is_ascii() && subject_line.contains("=?utf-8?"),
                "{label}: RFC 2047-encoded subject: {subject_line}"
            );

            // The copy in Sent is the same message.
            let sent_box = h.messages(&h.support, "Sent").await;
            assert!(
                sent_box
                    .iter()
                    .any(|r| parse(r).message_id() == Some(message_id.as_str())),
                "{label}: the send is in the Sent mailbox"
            );

            // Replay: refused, nothing more delivered.
            assert_eq!(
                h.err("mail_send", with_approval(args.clone(), &id)).await,
                "APPROVAL_CONSUMED",
                "{label}"
            );
            assert_eq!(h.messages(&customer, "INBOX").await.len(), 1, "{label}");
        }
        if let Some(fake) = &h.peer.fake {
            assert_eq!(fake.submissions().len(), cases.len());
            assert!(fake.submissions().iter().all(|s| s.login == h.support));
        }
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[tokio::test]
async fn replies_go_to_the_sender_and_reply_to_only_inside_allowed_domains() {
    for peer in peers() {
        let h = harness(peer, Options::default()).await;
        h.seed_demo().await;
        let label = h.label();
        // The hostile ticket's Reply-To points outside the allowed domains: ignored.
        let data = h
            .ok(
                "mail_send",
                json!({"in_reply_to": HOSTILE_TICKET_ID, "body": "We cannot help with that."}),
            )
            .await;
        assert_eq!(
            data["would_send"]["to"],
            json!([fence(&h.customer("attacker@example.net"))]),
            "{label}"
        );
        // A Reply-To inside an allowed domain is honoured.
        let customer = h.customer("pat@example.org");
        let desk = h.customer("desk@example.com");
        let raw = format!(
            "From: {customer}\r\nReply-To: Pat's desk <{desk}>\r\nTo: {}\r\nSubject: help\r\nMessage-ID: <rt.{}@example.org>\r\n\r\nhi\r\n",
            h.support, h.tag
        );
        h.append("INBOX", raw.as_bytes(), false, Utc::now()).await;
        let data = h
            .ok(
                "mail_send",
                json!({"in_reply_to": format!("rt.{}@example.org", h.tag), "body": "Hello!"}),
            )
            .await;
        assert_eq!(data["would_send"]["to"], json!([fence(&desk)]), "{label}");
        assert_eq!(data["would_send"]["subject"], fence("Re: help"));
        // A reply names no recipient of its own.
        assert_eq!(
            h.err(
                "mail_send",
                json!({"in_reply_to": DEMO_TICKET_ID, "to": "x@example.com", "body": "hi"})
            )
            .await,
            "INVALID_INPUT"
        );
        assert_eq!(
            h.err(
                "mail_send",
                json!({"in_reply_to": "missing@nowhere.test", "body": "hi"})
            )
            .await,
            "NOT_FOUND"
        );
    }
}

#[tokio::test]
async fn new_messages_only_to_allowed_domains_and_no_header_injection() {
    for peer in peers() {
        let h = harness(peer, Options::default()).await;
        h.seed_demo().await;
        let label = h.label();
        let ok = h
            .ok(
                "mail_send",
                json!({"to": "Partner@Example.com", "subject": "Weekly report", "body": "All good."}),
            )
            .await;
        assert_eq!(
            ok["would_send"]["to"],
            json!([fence("partner@example.com")]),
            "{label}"
        );
        assert_eq!(
            h.err(
                "mail_send",
                json!({"to": "someone@evil.test", "subject": "s", "body": "b"})
            )
            .await,
            "SCOPE_DENIED",
            "{label}"
        );
        assert_eq!(
            h.err(
                "mail_send",
                json!({"to": "a@example.com.evil.test", "subject": "s", "body": "b"})
            )
            .await,
            "SCOPE_DENIED"
        );
        let injections = [
            (
                json!({"to": "a@example.com\r\nBcc: x@evil.test", "subject": "s", "body": "b"}),
                "to",
            ),
            (
                json!({"to": "a@example.com, x@evil.test", "subject": "s", "body": "b"}),
                "to",
            ),
            (
                json!({"to": "Name <a@example.com>", "subject": "s", "body": "b"}),
                "to",
            ),
            (
                json!({"to": "a@example.com", "subject": "hi\r\nBcc: x@evil.test", "body": "b"}),
                "subject",
            ),
            (
                json!({"to": "a@example.com", "subject": "hi\nBcc: x@evil.test", "body": "b"}),
                "subject",
            ),
            (
                json!({"to": "a@example.com", "subject": "hi\u{2028}Bcc: x@evil.test", "body": "b"}),
                "subject",
            ),
            (
                json!({"to": "a@example.com", "subject": "hi\u{85}there", "body": "b"}),
                "subject",
            ),
            (
                json!({"to": "a@example.com", "subject": "nul\u{0}", "body": "b"}),
                "subject",
            ),
            (
                json!({"in_reply_to": "a@b.c>\r\nBcc: <x@evil.test", "body": "b"}),
                "in_reply_to",
            ),
            (
                json!({"to": "a@example.com", "body": "no subject"}),
                "subject",
            ),
            (json!({"subject": "s", "body": "no recipient"}), "to"),
            (
                json!({"to": "a@example.com", "subject": "s", "body": "b", "cc": "x@evil.test"}),
                "cc",
            ),
            (
                json!({"to": "a@example.com", "subject": "s", "body": "b", "from": "ceo@example.com"}),
                "from",
            ),
        ];
        for (args, field) in injections {
            let (code, error) = h.call("mail_send", args.clone()).await.unwrap_err();
            assert_eq!(code, "INVALID_INPUT", "{label}: {args}");
            assert_eq!(error["field"], field, "{label}: {args}");
            let (code, _) = h
                .call(
                    "approval_request",
                    json!({"action": "mail_send", "arguments": args}),
                )
                .await
                .unwrap_err();
            assert_eq!(code, "INVALID_INPUT", "{label}");
        }
        // The derived subject of a hostile original is cleaned, never refused or passed raw.
        let hostile = h
            .ok(
                "mail_send",
                json!({"in_reply_to": HOSTILE_TICKET_ID, "body": "No."}),
            )
            .await;
        let subject = hostile["would_send"]["subject"].as_str().unwrap();
        assert!(!subject.contains('\u{1b}'), "{label}: {subject}");
    }
}

#[tokio::test]
async fn the_password_never_goes_out_even_approved() {
    for peer in peers() {
        let h = harness(peer, Options::default()).await;
        h.seed_demo().await;
        let password = h.peer.password.clone();
        for args in [
            json!({"in_reply_to": DEMO_TICKET_ID, "body": format!("the password is {password}")}),
            json!({"in_reply_to": DEMO_TICKET_ID, "subject": format!("pw {password}"), "body": "hello"}),
        ] {
            assert_eq!(
                h.err("mail_send", args.clone()).await,
                "OUTBOUND_BLOCKED",
                "{}",
                h.label()
            );
            let (code, _) = h
                .call(
                    "approval_request",
                    json!({"action": "mail_send", "arguments": args}),
                )
                .await
                .unwrap_err();
            assert_eq!(code, "OUTBOUND_BLOCKED");
        }
    }
}

#[tokio::test]
async fn inbox_mail_opens_tickets_and_an_approved_reply_closes_one() {
    for peer in peers() {
        let h = harness(
            peer,
            Options {
                write_enabled: true,
                ..Options::default()
            },
        )
        .await;
        h.seed_demo().await;
        let label = h.label();
        let cutoff = Utc::now() - Duration::hours(8);
        let waiting = || async {
            h.ledger
                .awaiting_first_response(
                    Some(SupportChannel::Mail),
                    &[(SupportChannel::Mail, cutoff)],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| r.awaiting)
                .sum::<u64>()
        };
        assert_eq!(waiting().await, 0, "{label}: nothing listed yet");
        h.ok("mail_list", json!({})).await;
        // 8 inbox messages from customers; the thread's root was answered from Sent.
        assert_eq!(waiting().await, 7, "{label}");
        let args = json!({"in_reply_to": DEMO_TICKET_ID, "body": "Thanks for writing. Version 3.2.1 restores the reminders."});
        let id = h.request_approval(args.clone()).await;
        h.approve(&id).await;
        h.ok("mail_send", with_approval(args, &id)).await;
        assert_eq!(waiting().await, 6, "{label}: the reply closed its ticket");
        // Listing again keeps it answered (the reply is in Sent).
        h.ok("mail_list", json!({})).await;
        assert_eq!(waiting().await, 6, "{label}");
    }
}

#[tokio::test]
async fn a_refused_submission_spends_the_approval_and_sends_nothing() {
    let peer = mail_common::fake_peer();
    let h = harness(
        peer,
        Options {
            write_enabled: true,
            ..Options::default()
        },
    )
    .await;
    h.seed_demo().await;
    let fake = h.peer.fake.as_ref().unwrap();
    let args =
        json!({"in_reply_to": DEMO_TICKET_ID, "body": "Version 3.2.1 restores the reminders."});
    let id = h.request_approval(args.clone()).await;
    h.approve(&id).await;
    fake.refuse_submissions(true);
    let (code, error) = h
        .call("mail_send", with_approval(args.clone(), &id))
        .await
        .unwrap_err();
    assert_eq!(code, "WRITE_FAILED");
    assert_eq!(error["cause"], "UPSTREAM_REJECTED");
    fake.refuse_submissions(false);
    assert_eq!(
        h.err("mail_send", with_approval(args, &id)).await,
        "APPROVAL_CONSUMED"
    );
    assert!(fake.submissions().is_empty());
    assert_eq!(
        h.messages(&h.support, "Sent").await.len(),
        1,
        "no Sent copy of a failed send"
    );
}

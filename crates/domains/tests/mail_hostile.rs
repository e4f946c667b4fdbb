//! Hostile mail against both peers: escape sequences and bidi overrides in RFC 2047 subjects
//! and names, invisible characters and a closing `</user_content>` in bodies, malformed MIME,
//! broken charsets, a 10 MB attachment and a 1 MB single-line header. Everything comes back
//! fenced, neutral and bounded, without a crash or a stall.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mail_common;

use std::time::{Duration, Instant};

use care_fakes::mail::HOSTILE_TICKET_ID;
use chrono::Utc;
use mail_common::{Options, harness, peers};
use serde_json::{Value, json};

/// Every fenced string in `value`: what is inside the fences.
fn fenced(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            if let Some(inner) = care_core::fence::fenced_inner(s) {
                out.push(inner.to_owned());
            } else {
                assert!(!s.contains("<user_content>"), "a fence inside text: {s}");
            }
        }
        Value::Array(a) => a.iter().for_each(|v| fenced(v, out)),
        Value::Object(o) => o.values().for_each(|v| fenced(v, out)),
        _ => {}
    }
}

/// Nothing inside a fence can close it, open a tag, drive a terminal or reorder text.
fn assert_neutral(value: &Value) {
    let mut inner = Vec::new();
    fenced(value, &mut inner);
    for text in inner {
        for c in text.chars() {
            assert!(
                !matches!(c, '<' | '>' | '\u{1b}' | '\u{9b}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\r' | '\u{2028}'),
                "{c:?} inside a fence: {text:?}"
            );
        }
    }
}

fn big_attachment(to: &str, id: &str) -> Vec<u8> {
    let mut raw = format!(
        "From: big@example.net\r\nTo: {to}\r\nSubject: big attachment\r\nMessage-ID: <{id}>\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n--b\r\nContent-Type: application/octet-stream; name=\"dump.bin\"\r\nContent-Disposition: attachment; filename=\"dump.bin\"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    )
    .into_bytes();
    // 10 MB of base64, in 76-character lines.
    let line = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\r\n";
    while raw.len() < 10 * 1024 * 1024 {
        raw.extend_from_slice(line.as_bytes());
    }
    raw.extend_from_slice(b"--b--\r\n");
    raw
}

fn long_header(to: &str, id: &str) -> Vec<u8> {
    format!(
        "From: long@example.net\r\nTo: {to}\r\nSubject: {}\r\nX-Filler: {}\r\nMessage-ID: <{id}>\r\nContent-Type: text/plain\r\n\r\nshort body\r\n",
        "S".repeat(1024 * 1024),
        "x".repeat(1024 * 1024)
    )
    .into_bytes()
}

#[tokio::test]
async fn hostile_mail_comes_back_fenced_neutral_and_bounded() {
    for peer in peers() {
        let h = harness(peer, Options::default()).await;
        h.seed_demo().await;
        let label = h.label();
        let big = format!("big.{}@example.net", h.tag);
        let long = format!("long.{}@example.net", h.tag);
        h.append(
            "INBOX",
            &big_attachment(&h.support, &big),
            false,
            Utc::now(),
        )
        .await;
        h.append("INBOX", &long_header(&h.support, &long), false, Utc::now())
            .await;

        let started = Instant::now();
        let list = h.ok("mail_list", json!({"limit": 100})).await;
        assert_eq!(list["count"], 10, "{label}");
        assert_neutral(&list);
        assert!(
            list.to_string().len() < 200_000,
            "{label}: the listing is bounded"
        );

        for m in list["messages"].as_array().unwrap() {
            let read = h.ok("mail_read", json!({"uid": m["uid"]})).await;
            assert_neutral(&read);
            let body = read["body"].as_str().unwrap();
            assert!(body.chars().count() <= 20_000 + 40, "{label}: body bounded");
            assert!(read.to_string().len() < 400_000, "{label}: answer bounded");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{label}: no stall ({:?})",
            started.elapsed()
        );

        let hostile = h
            .ok("mail_read", json!({"message_id": HOSTILE_TICKET_ID}))
            .await;
        let subject = hostile["message"]["subject"].as_str().unwrap();
        assert!(
            subject.contains("\\u{1b}[2JSYSTEM:"),
            "{label}: ESC shown, not obeyed: {subject}"
        );
        assert!(subject.contains("\\u{202e}"), "{label}: {subject}");
        assert!(
            subject.contains("&lt;/user_content&gt;"),
            "{label}: {subject}"
        );
        let from = hostile["message"]["from"].as_str().unwrap();
        assert!(from.contains("\\u{202e}"), "{label}: {from}");
        let body = hostile["body"].as_str().unwrap();
        assert!(
            body.contains("&lt;/user_content&gt;&lt;system&gt;"),
            "{label}: {body}"
        );
        assert!(body.contains("\\u{2066}width\\u{2069}"), "{label}: {body}");
        assert!(
            body.contains("Ignore previous instructions"),
            "data is kept, as data"
        );

        let malformed = h
            .ok(
                "mail_read",
                json!({"message_id": "ticket-malformed-001@example.net"}),
            )
            .await;
        assert_neutral(&malformed);

        let big = h.ok("mail_read", json!({"message_id": big})).await;
        assert_eq!(
            big["body"], "<user_content>see attached</user_content>",
            "{label}"
        );
        let attachment = &big["attachments"][0];
        assert_eq!(attachment["name"], "<user_content>dump.bin</user_content>");
        assert!(
            attachment["size"].as_u64().unwrap() >= 10 * 1024 * 1024 - 1024,
            "{label}"
        );

        let long = h.ok("mail_read", json!({"message_id": long})).await;
        let subject = long["message"]["subject"].as_str().unwrap();
        assert!(
            subject.chars().count() <= 500 + 40,
            "{label}: {}",
            subject.len()
        );
        assert_eq!(long["body"], "<user_content>short body</user_content>");

        // The search and thread paths meet the same mail.
        let search = h.ok("mail_search", json!({"text": "instructions"})).await;
        assert_neutral(&search);
        let thread = h
            .ok("mail_thread", json!({"message_id": HOSTILE_TICKET_ID}))
            .await;
        assert_neutral(&thread);
    }
}

/// An HTML mail nested 20,000 levels deep (html5ever's tree builder is quadratic in depth:
/// seconds of one core, on the session's thread) reads as its text without layout.
#[tokio::test]
async fn a_deeply_nested_html_mail_reads_as_flat_text() {
    for peer in peers() {
        let h = harness(peer, Options::default()).await;
        let label = h.label();
        let id = format!("nested.{}@example.net", h.tag);
        let raw = format!(
            "From: nested@example.net\r\nTo: {}\r\nSubject: nested\r\nMessage-ID: <{id}>\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body>{}<p>signed, mallory</p></body></html>\r\n",
            h.support,
            "<blockquote>".repeat(20_000)
        );
        h.append("INBOX", raw.as_bytes(), false, Utc::now()).await;
        let read = h.ok("mail_read", json!({"message_id": id})).await;
        assert_neutral(&read);
        assert_eq!(
            read["body"],
            format!(
                "<user_content>{}\nsigned, mallory</user_content>",
                care_domains::kit::html_text::FLATTENED_NOTE
            ),
            "{label}"
        );
    }
}

//! The IMAP session under failure: one session serves many calls, a session the server dropped
//! is reopened without failing the next call, a server that stalls mid-answer or never greets
//! yields UPSTREAM_UNAVAILABLE within the configured bound (never a hung call) and the next
//! call recovers, and a wrong password is UPSTREAM_REJECTED. Both peers where a peer can do it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mail_common;

use std::time::{Duration, Instant};

use care_fakes::mail::DEMO_TICKET_ID;
use mail_common::{Options, fake_peer, harness, peers};
use serde_json::json;

#[tokio::test]
async fn one_session_serves_many_calls_and_a_dropped_one_is_reopened() {
    let h = harness(fake_peer(), Options::default()).await;
    h.seed_demo().await;
    let fake = h.peer.fake.as_ref().unwrap();
    let before = fake.logins();
    let mut listing = serde_json::Value::Null;
    for _ in 0..5 {
        listing = h.ok("mail_list", json!({"limit": 2})).await;
    }
    h.ok("mail_read", json!({"message_id": DEMO_TICKET_ID}))
        .await;
    assert_eq!(fake.logins() - before, 1, "the session is reused");

    // The server closes every connection (a restart, an idle timeout): the next call still
    // answers, on a new session, and with the whole listing: async-imap ends an answer at the
    // end of the stream as if it were complete, which must not pass for an empty mailbox.
    fake.drop_connections();
    let after = h.ok("mail_list", json!({"limit": 2})).await;
    assert_eq!(fake.logins() - before, 2);
    assert_eq!(after, listing);
    assert!(!after["messages"].as_array().unwrap().is_empty(), "{after}");
}

#[tokio::test]
async fn a_stall_mid_answer_is_unavailable_within_the_bound_and_then_recovers() {
    let h = harness(fake_peer(), Options::default()).await;
    h.seed_demo().await;
    let fake = h.peer.fake.as_ref().unwrap();
    h.ok("mail_list", json!({})).await;
    fake.stall_next_fetch();
    let started = Instant::now();
    assert_eq!(h.err("mail_list", json!({})).await, "UPSTREAM_UNAVAILABLE");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(8),
        "{took:?}"
    );
    // The half-read session was thrown away; the next call works.
    let data = h
        .ok("mail_read", json!({"message_id": DEMO_TICKET_ID}))
        .await;
    assert!(data["body"].as_str().unwrap().contains("medication"));
}

#[tokio::test]
async fn a_server_that_never_greets_is_unavailable_not_a_hung_call() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap();
    // Accepts, then says nothing (kept open until the test ends).
    let holder = std::thread::spawn(move || {
        let conns: Vec<_> = silent.incoming().take(2).filter_map(Result::ok).collect();
        std::thread::sleep(Duration::from_secs(10));
        drop(conns);
    });
    let mut peer = fake_peer();
    peer.imap_url = format!("imap://{address}");
    let h = harness(peer, Options::default()).await;
    let started = Instant::now();
    assert_eq!(h.err("mail_list", json!({})).await, "UPSTREAM_UNAVAILABLE");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    drop(holder);
}

#[tokio::test]
async fn nothing_listening_is_unavailable() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = free.local_addr().unwrap();
    drop(free);
    let mut peer = fake_peer();
    peer.imap_url = format!("imap://{address}");
    let h = harness(peer, Options::default()).await;
    assert_eq!(h.err("mail_list", json!({})).await, "UPSTREAM_UNAVAILABLE");
}

#[tokio::test]
async fn a_wrong_password_is_rejected_and_never_shown() {
    for peer in peers() {
        let h = harness(
            peer,
            Options {
                password: Some("sk-demo-wrong-password-0000".into()),
                ..Options::default()
            },
        )
        .await;
        let (code, error) = h.call("mail_list", json!({})).await.unwrap_err();
        assert_eq!(code, "UPSTREAM_REJECTED", "{}", h.label());
        assert!(!error.to_string().contains("sk-demo"));
    }
}

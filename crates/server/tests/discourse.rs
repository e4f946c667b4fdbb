//! The Discourse domain in the binary: a role holding Discourse tools refuses to start without
//! its configuration (the variables named on stderr, never values, exit 2), a role without them
//! never reads it, and the community role serves the tools over stdio against the verifying
//! fake without the key ever reaching stdout or stderr.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;

use care_fakes::discourse::{FakeDiscourse, TOPIC_HOSTILE, TOPIC_UNANSWERED};
use common::{Sandbox, Session, run_once};
use serde_json::json;

const DISCOURSE_VARS: [&str; 3] = [
    "CARE_DISCOURSE_URL",
    "CARE_DISCOURSE_API_KEY_FILE",
    "CARE_DISCOURSE_API_USERNAME",
];

#[test]
fn roles_with_discourse_tools_refuse_to_start_without_its_config() {
    let sandbox = Sandbox::new();
    for role in ["community", "lead", "insight", "reviews"] {
        let mut cmd = sandbox.serve_command(role);
        for var in DISCOURSE_VARS {
            cmd.env_remove(var);
        }
        let finished = run_once(&mut cmd, None);
        assert_eq!(finished.code(), Some(2), "{role}: {}", finished.stderr);
        assert!(finished.stdout_lines.is_empty(), "{role}");
        for var in DISCOURSE_VARS {
            assert!(finished.stderr.contains(var), "{role}: {}", finished.stderr);
        }
    }
}

#[test]
fn a_key_file_others_can_read_is_named_but_never_quoted() {
    let sandbox = Sandbox::new();
    let key = sandbox.path().join("open-key");
    std::fs::write(&key, "sk-demo-discourse-open-key-0000\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = sandbox.serve_command("community");
    cmd.env("CARE_DISCOURSE_API_KEY_FILE", &key)
        .env("CARE_DISCOURSE_URL", "http://forum.example.com");
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(2), "{}", finished.stderr);
    assert!(finished.stderr.contains("CARE_DISCOURSE_API_KEY_FILE"));
    assert!(finished.stderr.contains("CARE_DISCOURSE_URL"));
    assert!(!finished.stderr.contains("sk-demo-discourse-open"));
    assert!(!finished.stderr.contains("forum.example.com"));
}

#[test]
fn a_role_without_discourse_tools_never_reads_its_config() {
    let sandbox = Sandbox::new();
    for role in ["mail", "ops"] {
        let mut cmd = sandbox.serve_command(role);
        for var in DISCOURSE_VARS {
            cmd.env_remove(var);
        }
        cmd.env("CARE_DISCOURSE_API_KEY_FILE", "/nonexistent/key");
        let mut session = Session::start(cmd);
        let names = session.tool_names();
        assert!(!names.iter().any(|n| n.starts_with("discourse_")), "{role}");
        assert_eq!(session.finish().code(), Some(0), "{role}");
    }
    assert!(sandbox.fake::<FakeDiscourse>().requests().is_empty());
}

#[test]
fn the_community_role_serves_discourse_over_stdio() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("community"));
    let latest = session.call_ok("discourse_latest_topics", json!({}));
    assert_eq!(latest["count"], 8);
    let hostile = session.call_ok("discourse_topic_get", json!({"topic_id": TOPIC_HOSTILE}));
    let text = hostile["posts"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("<user_content>") && text.ends_with("</user_content>"));
    let found = session.call_ok("discourse_search", json!({"query": "reminders"}));
    assert_eq!(found["topics"][0]["topic_id"], TOPIC_UNANSWERED);
    let categories = session.call_ok("discourse_categories", json!({}));
    assert_eq!(categories["count"], 3);
    let sla = session.call_ok("sla_status", json!({"channel": "forum"}));
    assert_eq!(sla["channels"][0]["awaiting"], 6);
    let dry = session.call_ok(
        "discourse_post_reply",
        json!({"topic_id": TOPIC_UNANSWERED, "body": "Thanks for the report! Version 3.1.2 fixes the reminders.", "locale": "en-US"}),
    );
    assert_eq!(dry["dry_run"], true);
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    finished.assert_stdout_is_protocol();
    let fake = sandbox.fake::<FakeDiscourse>();
    let key = fake.api_key();
    assert!(!finished.stdout().contains(&key) && !finished.stderr.contains(&key));
    let requests = fake.requests();
    assert!(!requests.is_empty());
    assert!(requests.iter().all(|r| r.authorized && r.method == "GET"));
    assert!(fake.sent_posts().is_empty());
}

/// Rewrites the key file in place, mode 0600.
fn write_key(path: &std::path::Path, key: &str) {
    std::fs::write(path, format!("{key}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn a_rotated_key_file_is_used_mid_session_and_a_revoked_stale_key_fails_closed() {
    let sandbox = Sandbox::new();
    let fake = sandbox.fake::<FakeDiscourse>();
    let key_file = sandbox.path().join("rotating-api-key");
    let first = fake.api_key();
    write_key(&key_file, &first);
    let mut cmd = sandbox.serve_command("community");
    cmd.env("CARE_DISCOURSE_API_KEY_FILE", &key_file);
    let mut session = Session::start(cmd);
    session.call_ok("discourse_latest_topics", json!({}));

    // Rotated in Discourse and in the file: the running process uses the new key.
    let second = fake.rotate_api_key();
    write_key(&key_file, &second);
    session.call_ok("discourse_latest_topics", json!({}));
    for key in [&first, &second] {
        let error = session.call_err(
            "discourse_post_reply",
            json!({"topic_id": TOPIC_UNANSWERED, "body": format!("Thanks for the report! Our key is {key}."), "locale": "en-US"}),
        );
        assert_eq!(error["code"], "OUTBOUND_BLOCKED");
    }

    // The file goes away: the key in use is kept while Discourse takes it, and stderr says so.
    std::fs::remove_file(&key_file).unwrap();
    session.call_ok("discourse_latest_topics", json!({}));
    // Discourse revokes it: refused, then dropped; calls fail closed until the file is back.
    let third = fake.rotate_api_key();
    for _ in 0..2 {
        let error = session.call_err("discourse_latest_topics", json!({}));
        assert_eq!(error["code"], "UPSTREAM_REJECTED");
    }
    write_key(&key_file, &third);
    session.call_ok("discourse_latest_topics", json!({}));

    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    finished.assert_stdout_is_protocol();
    finished.assert_stderr_is_json_lines();
    let about_the_file: Vec<&str> = finished
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("\"variable\":\"CARE_DISCOURSE_API_KEY_FILE\""))
        .collect();
    for said in [
        "the new credential is in use",
        "keeping the previous credential until its upstream refuses it",
        "calls fail until it can",
    ] {
        assert!(
            about_the_file.iter().any(|l| l.contains(said)),
            "{said}: {}",
            finished.stderr
        );
    }
    for key in [&first, &second, &third] {
        assert!(!finished.stdout().contains(key.as_str()));
        assert!(!finished.stderr.contains(key.as_str()));
    }
}

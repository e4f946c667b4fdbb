//! The App Store Connect domain in the binary: a role holding ASC tools refuses to start
//! without its configuration (reasons on stderr, never values, exit 2), a role without them
//! never reads it, and the reviews role serves the tools over stdio against the verifying fake.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use care_fakes::asc::FakeAsc;
use common::{Sandbox, Session, run_once};
use serde_json::json;

const ASC_VARS: [&str; 4] = [
    "CARE_ASC_ISSUER_ID",
    "CARE_ASC_KEY_ID",
    "CARE_ASC_PRIVATE_KEY_FILE",
    "CARE_ASC_APP_IDS",
];

#[test]
fn roles_with_asc_tools_refuse_to_start_without_its_config() {
    let sandbox = Sandbox::new();
    for role in ["reviews", "lead", "insight"] {
        let mut cmd = sandbox.serve_command(role);
        for var in ASC_VARS {
            cmd.env_remove(var);
        }
        let finished = run_once(&mut cmd, None);
        assert_eq!(finished.code(), Some(2), "{role}: {}", finished.stderr);
        assert!(finished.stdout_lines.is_empty(), "{role}");
        for var in ASC_VARS {
            assert!(finished.stderr.contains(var), "{role}: {}", finished.stderr);
        }
    }
}

#[test]
fn a_bad_key_file_is_named_but_never_quoted() {
    let sandbox = Sandbox::new();
    let bad = sandbox.path().join("AuthKey_BAD.p8");
    std::fs::write(
        &bad,
        "-----BEGIN PRIVATE KEY-----\nsk-demo-not-a-real-key-material\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let mut cmd = sandbox.serve_command("reviews");
    cmd.env("CARE_ASC_PRIVATE_KEY_FILE", &bad);
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(2), "{}", finished.stderr);
    assert!(finished.stderr.contains("CARE_ASC_PRIVATE_KEY_FILE"));
    assert!(!finished.stderr.contains("sk-demo-not-a-real"));
}

#[test]
fn a_role_without_asc_tools_never_reads_its_config() {
    let sandbox = Sandbox::new();
    for role in ["community", "mail", "ops"] {
        let mut cmd = sandbox.serve_command(role);
        for var in ASC_VARS {
            cmd.env_remove(var);
        }
        cmd.env("CARE_ASC_PRIVATE_KEY_FILE", "/nonexistent/AuthKey.p8");
        let mut session = Session::start(cmd);
        let names = session.tool_names();
        assert!(!names.iter().any(|n| n.starts_with("asc_")), "{role}");
        assert_eq!(session.finish().code(), Some(0), "{role}");
    }
    assert!(sandbox.fake::<FakeAsc>().requests().is_empty());
}

#[test]
fn the_reviews_role_serves_asc_over_stdio() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("reviews"));
    let apps = session.call_ok("asc_apps_list", json!({}));
    assert_eq!(apps["count"], 2);
    let review = session.call_ok("asc_review_get", json!({"review_id": "rev-hostile-001"}));
    let body = review["review"]["body"].as_str().unwrap();
    assert!(body.starts_with("<user_content>") && body.ends_with("</user_content>"));
    let waiting = session.call_ok(
        "asc_reviews_unanswered",
        json!({"app_id": care_fakes::asc::DEMO_APP_ID}),
    );
    assert_eq!(waiting["count"], 8);
    let sla = session.call_ok("sla_status", json!({"channel": "app_store"}));
    assert_eq!(sla["channels"][0]["awaiting"], 10);
    let dry = session.call_ok(
        "asc_review_reply",
        json!({"review_id": "rev-en-002", "body": "We are sorry about your notes. Please write to support so we can restore them.", "locale": "en-GB"}),
    );
    assert_eq!(dry["dry_run"], true);
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    finished.assert_stdout_is_protocol();
    let key = sandbox.fake::<FakeAsc>().key().private_key_pem.clone();
    let key_line = key.lines().nth(1).unwrap();
    assert!(!finished.stdout().contains(key_line) && !finished.stderr.contains(key_line));
    let requests = sandbox.fake::<FakeAsc>().requests();
    assert!(!requests.is_empty());
    assert!(requests.iter().all(|r| r.authorized && r.method == "GET"));
    assert!(sandbox.fake::<FakeAsc>().sent_replies().is_empty());
}

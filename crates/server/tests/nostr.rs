//! The Nostr approval channel through the binary: roles that request approvals refuse to start
//! without it (reasons on stderr naming the variables), an unreachable relay never keeps a role
//! from serving, `keys generate`, and an approver approving from the CLI over a real relay
//! (in process), after which `approvals verify` re-checks the signed evidence offline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use care_core::catalog::Role;
use common::{Sandbox, Session, assert_code, block_on, run_once};
use serde_json::{Value, json};

const NOSTR_VARS: [&str; 3] = [
    "CARE_NOSTR_SECRET_KEY",
    "CARE_NOSTR_RELAYS",
    "CARE_APPROVAL_CHANNEL",
];

fn holds_approval_request(role: Role) -> bool {
    care_core::catalog::lookup("approval_request").is_some_and(|e| e.held_by(role))
}

fn reply(body: &str) -> Value {
    json!({"review_id": "rev-en-002", "body": body, "locale": "en-GB"})
}

#[test]
fn roles_that_request_approvals_refuse_to_start_without_the_channel() {
    for role in Role::ALL {
        let sandbox = Sandbox::new();
        let mut cmd = sandbox.serve_command(role.as_str());
        for var in NOSTR_VARS {
            cmd.env_remove(var);
        }
        if holds_approval_request(role) {
            let finished = run_once(&mut cmd, None);
            assert_eq!(finished.code(), Some(2), "{role}: {finished:?}");
            assert!(finished.stdout_lines.is_empty(), "{role}: {finished:?}");
            for var in NOSTR_VARS {
                assert!(finished.stderr.contains(var), "{role}: {}", finished.stderr);
            }
            finished.assert_stderr_is_json_lines();
        } else {
            let mut session = Session::start(cmd);
            assert!(!session.tool_names().is_empty());
            assert_eq!(session.finish().code(), Some(0), "{role}");
        }
    }
    // One variable missing is named alone.
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("reviews");
    cmd.env_remove("CARE_APPROVAL_CHANNEL");
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(2));
    assert!(finished.stderr.contains("CARE_APPROVAL_CHANNEL"));
    assert!(!finished.stderr.contains("CARE_NOSTR_RELAYS"));
    assert!(!finished.stderr.contains(&sandbox.nostr_secret));
}

#[test]
fn an_unreachable_relay_never_keeps_a_role_from_serving() {
    let sandbox = Sandbox::new();
    let started = Instant::now();
    let mut cmd = sandbox.serve_command("reviews");
    cmd.env("CARE_APPROVERS", common::APPROVER_HEX);
    let mut session = Session::start(cmd);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(session.tool_names().contains("approval_request"));
    let error = session.call_err(
        "approval_request",
        json!({"action": "asc_review_reply", "arguments": reply("Thanks for the report!")}),
    );
    assert_code(&error, "UPSTREAM_UNAVAILABLE");
    // Nothing was left that someone could approve unseen.
    let ledger = block_on(common::open_ledger(&sandbox));
    let rows = block_on(ledger.list_approvals(None, 100)).unwrap();
    assert!(rows.is_empty(), "{rows:?}");
    // Other tools go on serving.
    session.call_ok("kpi_record", json!({"metric": "x", "value": 1}));
    assert_eq!(session.finish().code(), Some(0));
}

#[test]
fn keys_generate_prints_a_usable_keypair() {
    let sandbox = Sandbox::new();
    let finished = run_once(sandbox.command().args(["keys", "generate"]), None);
    assert_eq!(finished.code(), Some(0), "{finished:?}");
    let out = finished.stdout();
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in {out}"))
    };
    let nsec = field("nsec:");
    let npub = field("npub:");
    let hex = field("hex:");
    let from_secret = care_nostr::settings::public_key_of_secret(&nsec).unwrap();
    assert_eq!(
        care_nostr::settings::parse_public_key(&npub),
        Some(from_secret.clone())
    );
    assert_eq!(from_secret.hex(), hex);
}

fn key_file(sandbox: &Sandbox, secret: &str, mode: u32) -> std::path::PathBuf {
    let path = sandbox.path().join(format!("approver-{mode:o}.key"));
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_approves_from_the_cli_and_the_evidence_verifies() {
    let relay = care_nostr::relay::InProcessRelay::start(None)
        .await
        .unwrap();
    let approver = care_nostr::keys::generate();
    let sandbox = Sandbox::new();
    let with_relay = |mut cmd: std::process::Command| {
        cmd.env("CARE_NOSTR_RELAYS", relay.url())
            .env("CARE_APPROVERS", &approver.npub);
        cmd
    };
    let mut session = Session::start(with_relay(sandbox.serve_command("reviews")));
    let body = "We are sorry about your notes. Please write to support.";
    // The first request may come before the relay connection is up; it then waits briefly.
    let data = session.call_ok(
        "approval_request",
        json!({"action": "asc_review_reply", "arguments": reply(body)}),
    );
    let id = data["approval_id"].as_str().unwrap().to_owned();
    assert_eq!(data["status"], "pending");
    assert!(data["card_event_id"].is_string(), "{data}");

    // A key file others can read is refused before anything is published.
    let loose = key_file(&sandbox, &approver.nsec, 0o644);
    let mut cmd = with_relay(sandbox.command());
    cmd.args(["approvals", "approve", &id, "--key-file"])
        .arg(&loose);
    let refused = run_once(&mut cmd, None);
    assert_eq!(refused.code(), Some(2), "{refused:?}");
    assert!(!refused.stderr.contains(&approver.nsec));

    let tight = key_file(&sandbox, &approver.nsec, 0o600);
    let mut cmd = with_relay(sandbox.command());
    cmd.args(["approvals", "approve", &id, "--key-file"])
        .arg(&tight);
    let approved = run_once(&mut cmd, None);
    assert_eq!(approved.code(), Some(0), "{approved:?}");
    assert!(
        approved.stdout().contains("approve reaction"),
        "{approved:?}"
    );
    assert!(!approved.stdout().contains(&approver.nsec));

    // The serving process records it when the reaction arrives.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let status = session.call_ok("approval_status", json!({"approval_id": id}));
        if status["status"] == "approved" {
            break;
        }
        assert!(Instant::now() < deadline, "still {status}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(session.finish().code(), Some(0));

    // The operator sees the card exactly as the approvers read it.
    let mut cmd = with_relay(sandbox.command());
    cmd.args(["approvals", "show", &id]);
    let shown = run_once(&mut cmd, None);
    assert_eq!(shown.code(), Some(0), "{shown:?}");
    let out = shown.stdout();
    assert!(out.contains("card as approvers read it:"), "{out}");
    assert!(
        out.contains("  │ Approval needed: reply to an App Store review"),
        "{out}"
    );
    assert!(out.contains(&format!("  │ │ {body}")), "{out}");

    let mut cmd = with_relay(sandbox.command());
    cmd.args(["approvals", "verify", &id]);
    let verified = run_once(&mut cmd, None);
    assert_eq!(verified.code(), Some(0), "{verified:?}");
    let out = verified.stdout();
    assert!(
        out.contains(&format!("ok      {} approve", approver.public_hex)),
        "{out}"
    );
    assert!(out.contains("1 decision(s), 0 failed"), "{out}");
    relay.shutdown();
}

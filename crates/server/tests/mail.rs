//! The mail domain in the binary: a role holding mail tools refuses to start without its
//! configuration (every variable named on stderr, never a value, exit 2; only the role that
//! sends needs SMTP), a role without mail tools never reads it, and the mail role serves the
//! tools over stdio against the sandbox's mail fake without touching `\Seen`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use care_fakes::mail::{DEMO_TICKET_ID, FAKE_PASSWORD, FakeMail};
use common::{Sandbox, Session, run_once};
use serde_json::json;

const MAIL_VARS: [&str; 4] = [
    "CARE_IMAP_URL",
    "CARE_MAIL_USERNAME",
    "CARE_MAIL_PASSWORD_FILE",
    "CARE_MAIL_FROM",
];

fn without_mail(cmd: &mut std::process::Command) {
    for var in MAIL_VARS.iter().chain(&["CARE_SMTP_URL"]) {
        cmd.env_remove(var);
    }
}

#[test]
fn roles_with_mail_tools_refuse_to_start_without_its_config() {
    let sandbox = Sandbox::new();
    for role in ["mail", "lead"] {
        let mut cmd = sandbox.serve_command(role);
        without_mail(&mut cmd);
        let finished = run_once(&mut cmd, None);
        assert_eq!(finished.code(), Some(2), "{role}: {}", finished.stderr);
        assert!(finished.stdout_lines.is_empty(), "{role}");
        for var in MAIL_VARS {
            assert!(finished.stderr.contains(var), "{role}: {}", finished.stderr);
        }
        // Only the role that sends needs the SMTP server.
        assert_eq!(
            finished.stderr.contains("CARE_SMTP_URL"),
            role == "mail",
            "{role}: {}",
            finished.stderr
        );
    }
}

#[test]
fn the_lead_reads_mail_without_smtp_settings() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("lead");
    cmd.env_remove("CARE_SMTP_URL");
    let mut session = Session::start(cmd);
    let names = session.tool_names();
    assert!(names.contains("mail_list") && !names.contains("mail_send"));
    let listed = session.call_ok("mail_list", json!({"limit": 3}));
    assert_eq!(listed["count"], 3);
    assert_eq!(session.finish().code(), Some(0));
}

#[test]
fn a_bad_password_file_or_plaintext_to_a_remote_host_is_named_but_never_quoted() {
    let sandbox = Sandbox::new();
    let world_readable = sandbox.path().join("mail-password-open");
    std::fs::write(&world_readable, "sk-demo-open-password\n").unwrap();
    std::fs::set_permissions(
        &world_readable,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let mut cmd = sandbox.serve_command("mail");
    cmd.env("CARE_MAIL_PASSWORD_FILE", &world_readable)
        .env("CARE_IMAP_URL", "imap://sk-demo-host.example.com")
        .env("CARE_SMTP_URL", "smtp://user:sk-demo-pw@127.0.0.1:25");
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(2), "{}", finished.stderr);
    for var in ["CARE_MAIL_PASSWORD_FILE", "CARE_SMTP_URL"] {
        assert!(finished.stderr.contains(var), "{}", finished.stderr);
    }
    assert!(!finished.stderr.contains("sk-demo"), "{}", finished.stderr);
}

#[test]
fn roles_without_mail_tools_never_read_its_config() {
    let sandbox = Sandbox::new();
    for role in ["reviews", "insight", "community", "ops"] {
        let mut cmd = sandbox.serve_command(role);
        without_mail(&mut cmd);
        cmd.env("CARE_MAIL_PASSWORD_FILE", "/nonexistent/password");
        let mut session = Session::start(cmd);
        let names = session.tool_names();
        assert!(!names.iter().any(|n| n.starts_with("mail_")), "{role}");
        assert_eq!(session.finish().code(), Some(0), "{role}");
    }
    assert_eq!(sandbox.fake::<FakeMail>().logins(), 0);
}

#[test]
fn the_mail_role_serves_the_inbox_over_stdio_and_reads_change_nothing() {
    let sandbox = Sandbox::new();
    let fake = sandbox.fake::<FakeMail>();
    let before = fake.mailbox(fake.support_login(), "INBOX").unwrap();
    let mut session = Session::start(sandbox.serve_command("mail"));
    let listed = session.call_ok("mail_list", json!({}));
    assert!(listed["count"].as_u64().unwrap() >= 8, "{listed}");
    let read = session.call_ok("mail_read", json!({"message_id": DEMO_TICKET_ID}));
    let body = read["body"].as_str().unwrap();
    assert!(body.starts_with("<user_content>") && body.contains("medication"));
    let thread = session.call_ok(
        "mail_thread",
        json!({"message_id": "thread-followup-001@example.com"}),
    );
    assert_eq!(thread["count"], 3);
    let found = session.call_ok("mail_search", json!({"subject": "invoice"}));
    assert_eq!(found["count"], 1);
    let sla = session.call_ok("sla_status", json!({"channel": "mail"}));
    assert!(
        sla["channels"][0]["awaiting"].as_u64().unwrap() >= 6,
        "{sla}"
    );
    let dry = session.call_ok(
        "mail_send",
        json!({"in_reply_to": DEMO_TICKET_ID, "body": "Version 3.2.1 restores the reminders.", "locale": "en-US"}),
    );
    assert_eq!(dry["dry_run"], true);
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    finished.assert_stdout_is_protocol();
    assert!(!finished.stdout().contains(FAKE_PASSWORD) && !finished.stderr.contains(FAKE_PASSWORD));
    let after = fake.mailbox(fake.support_login(), "INBOX").unwrap();
    let flags = |m: &care_fakes::mail::Mailbox| {
        m.messages
            .iter()
            .map(|s| s.flags.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(flags(&after), flags(&before), "no read set a flag");
    assert!(fake.submissions().is_empty(), "a dry run sends nothing");
}

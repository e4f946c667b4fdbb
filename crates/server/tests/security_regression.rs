//! The security regression suite: one test per boundary, each over every role and domain it
//! applies to, through the real binary over stdio against the upstream fakes, a real relay (in
//! process) and approvers with their own keys approving from the CLI. The README's "Security
//! model" points here; a new domain joins by adding its rows to [`write_cases`] and
//! [`hostile_reads`].
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use care_fakes::discourse::{TOPIC_FEATURE, TOPIC_HOSTILE, TOPIC_PRIVATE, TOPIC_UNANSWERED};
use care_fakes::http::Failure;
use care_fakes::mail::HOSTILE_TICKET_ID;
use care_nostr::relay::InProcessRelay;
use common::{Sandbox, Session, run_once};
use serde_json::{Map, Value, json};

/// A token of a well-known shape (the outbound scan's OpenAI pattern); obviously fake.
const FAKE_TOKEN: &str = "sk-demo-0123456789abcdefghijklmnopqrstuv";

/// One external write, as the agent of its role calls it.
struct WriteCase {
    role: &'static str,
    tool: &'static str,
    /// A write the role may make.
    args: Value,
    /// The field holding agent-written text, for writes that send one.
    body: Option<&'static str>,
    /// The same write with something changed after approval (text, recipient, target).
    changed: Vec<Value>,
    /// A target outside the role's allowlist (app, category, recipient domain, namespace).
    outside: Value,
}

fn write_cases() -> Vec<WriteCase> {
    vec![
        WriteCase {
            role: "reviews",
            tool: "asc_review_reply",
            args: json!({"review_id": "rev-en-002", "body": "We are sorry about your notes. Please write to support so we can restore them.", "locale": "en-GB"}),
            body: Some("body"),
            changed: vec![
                json!({"review_id": "rev-en-002", "body": "We are sorry about your notes. Please write to support so we can restore them!", "locale": "en-GB"}),
                json!({"review_id": "rev-en-001", "body": "We are sorry about your notes. Please write to support so we can restore them.", "locale": "en-GB"}),
            ],
            outside: json!({"review_id": "rev-other-001", "body": "Thank you for the review, we appreciate it a lot.", "locale": "en-US"}),
        },
        WriteCase {
            role: "community",
            tool: "discourse_post_reply",
            args: json!({"topic_id": TOPIC_UNANSWERED, "body": "Thanks for the report! Version 3.1.2 fixes the reminders.", "locale": "en-US"}),
            body: Some("body"),
            changed: vec![
                json!({"topic_id": TOPIC_UNANSWERED, "body": "Thanks for the report! Version 3.1.3 fixes the reminders.", "locale": "en-US"}),
                json!({"topic_id": TOPIC_FEATURE, "body": "Thanks for the report! Version 3.1.2 fixes the reminders.", "locale": "en-US"}),
            ],
            outside: json!({"topic_id": TOPIC_PRIVATE, "body": "Thanks for the report! Version 3.1.2 fixes the reminders.", "locale": "en-US"}),
        },
        WriteCase {
            role: "mail",
            tool: "mail_send",
            args: json!({"to": "customer@example.com", "subject": "Your reminders", "body": "Version 3.2.1 restores the reminders. Thank you for your patience.", "locale": "en-US"}),
            body: Some("body"),
            changed: vec![
                json!({"to": "customer@example.com", "subject": "Your reminders", "body": "Version 3.2.1 restores the reminders. Thank you for your patience!", "locale": "en-US"}),
                json!({"to": "other@example.com", "subject": "Your reminders", "body": "Version 3.2.1 restores the reminders. Thank you for your patience.", "locale": "en-US"}),
            ],
            outside: json!({"to": "customer@example.com.evil.test", "subject": "Your reminders", "body": "Version 3.2.1 restores the reminders. Thank you for your patience.", "locale": "en-US"}),
        },
        WriteCase {
            role: "ops",
            tool: "cluster_restart_workload",
            args: json!({"namespace": "shop", "kind": "Deployment", "name": "checkout"}),
            body: None,
            changed: vec![
                json!({"namespace": "shop", "kind": "Deployment", "name": "storefront"}),
                json!({"namespace": "payments", "kind": "Deployment", "name": "payments-api"}),
            ],
            outside: json!({"namespace": "kube-system", "kind": "Deployment", "name": "coredns"}),
        },
    ]
}

/// A read of a hostile upstream item per domain: (role, tool, arguments).
fn hostile_reads() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "reviews",
            "asc_review_get",
            json!({"review_id": "rev-hostile-001"}),
        ),
        (
            "community",
            "discourse_topic_get",
            json!({"topic_id": TOPIC_HOSTILE}),
        ),
        (
            "mail",
            "mail_read",
            json!({"message_id": HOSTILE_TICKET_ID}),
        ),
        (
            "ops",
            "cluster_events",
            json!({"namespace": "shop", "warnings_only": true}),
        ),
    ]
}

/// A sandbox whose roles may write, with a real relay and one approver of our own.
struct World {
    sandbox: Sandbox,
    relay: InProcessRelay,
    approver: care_nostr::keys::NewKeypair,
    approver_key: PathBuf,
}

impl World {
    /// Every audit row so far (the sessions have finished, so their rows are stored).
    async fn audit(&self) -> Vec<care_core::ledger::AuditRecord> {
        let ledger = common::open_ledger(&self.sandbox).await;
        ledger.recent_audit(10_000).await.unwrap()
    }

    async fn start() -> World {
        let relay = InProcessRelay::start(None).await.unwrap();
        let sandbox = Sandbox::new();
        let approver = care_nostr::keys::generate();
        let approver_key = key_file(&sandbox, "approver", &approver.nsec);
        World {
            sandbox,
            relay,
            approver,
            approver_key,
        }
    }

    fn command(&self) -> std::process::Command {
        let mut cmd = self.sandbox.command();
        cmd.env("CARE_NOSTR_RELAYS", self.relay.url())
            .env("CARE_APPROVERS", &self.approver.npub)
            .env("CARE_WRITE_ENABLED", "1")
            .env("CARE_CLUSTER_WRITE", "1");
        cmd
    }

    fn session(&self, role: &str) -> Session {
        let mut cmd = self.command();
        cmd.arg("--role").arg(role);
        Session::start(cmd)
    }

    /// Reacts to `id` with `decision` as the holder of `key_file`, from the CLI.
    fn react(&self, decision: &str, id: &str, key_file: &PathBuf) {
        let mut cmd = self.command();
        cmd.args(["approvals", decision, id, "--key-file"])
            .arg(key_file);
        let done = run_once(&mut cmd, None);
        assert_eq!(done.code(), Some(0), "{done:?}");
    }

    fn writes_received(&self) -> usize {
        self.sandbox
            .upstreams
            .iter()
            .map(|u| u.received_writes().len())
            .sum()
    }
}

fn key_file(sandbox: &Sandbox, name: &str, secret: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = sandbox.path().join(format!("{name}.key"));
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

fn request(session: &mut Session, case: &WriteCase, args: &Value) -> Result<String, String> {
    let answer = session.call_envelope(
        "approval_request",
        json!({"action": case.tool, "arguments": args}),
    );
    if answer["ok"] == true {
        Ok(answer["data"]["approval_id"].as_str().unwrap().to_owned())
    } else {
        Err(answer["error"]["code"].as_str().unwrap().to_owned())
    }
}

fn with_approval(args: &Value, id: &str) -> Value {
    let mut args = args.clone();
    args["approval_id"] = json!(id);
    args
}

fn code_of(session: &mut Session, tool: &str, args: Value) -> String {
    let answer = session.call_envelope(tool, args.clone());
    assert_eq!(answer["ok"], false, "{tool} {args} went through: {answer}");
    answer["error"]["code"].as_str().unwrap().to_owned()
}

/// Waits until the serving process has recorded `wanted` for `id`.
fn wait_status(session: &mut Session, id: &str, wanted: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let status = session.call_ok("approval_status", json!({"approval_id": id}));
        if status["status"] == wanted {
            return;
        }
        assert!(Instant::now() < deadline, "{id} still {status}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Requests and approves `case.args`; returns the approval id.
fn approved(world: &World, session: &mut Session, case: &WriteCase) -> String {
    let id = request(session, case, &case.args).unwrap();
    world.react("approve", &id, &world.approver_key);
    wait_status(session, &id, "approved");
    id
}

fn finish(session: Session) {
    let finished = session.finish();
    finished.assert_stdout_is_protocol();
    finished.assert_stderr_is_json_lines();
}

/// Every occurrence of `needle` in `text` lies inside a `<user_content>` fence.
fn only_fenced(text: &str, needle: &str) -> bool {
    let mut depth_ok = true;
    for (at, _) in text.match_indices(needle) {
        let before = &text[..at];
        let opened = before.rfind("<user_content>");
        let closed = before.rfind("</user_content>");
        depth_ok &= match (opened, closed) {
            (Some(o), Some(c)) => o > c,
            (Some(_), None) => true,
            _ => false,
        };
    }
    depth_ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sensitive_reads_give_metadata_only() {
    use care_fakes::kubernetes::{CONFIGMAP_VALUE, LITERAL_ENV_VALUE, SECRET_VALUE};
    let world = World::start().await;
    let mut ops = world.session("ops");
    let mut seen = String::new();
    seen.push_str(&ops.call_ok("cluster_overview", json!({})).to_string());
    for ns in ["shop", "payments"] {
        for tool in ["cluster_workloads", "cluster_pods", "cluster_events"] {
            seen.push_str(&ops.call_ok(tool, json!({"namespace": ns})).to_string());
        }
    }
    for value in [LITERAL_ENV_VALUE, CONFIGMAP_VALUE, SECRET_VALUE] {
        assert!(
            !seen.contains(value),
            "a Secret, ConfigMap or env value came back"
        );
    }
    finish(ops);

    let mut mail = world.session("mail");
    let read = mail.call_ok(
        "mail_read",
        json!({"message_id": "ticket-invoice-001@example.org"}),
    );
    let text = read.to_string();
    assert!(
        text.contains("invoice-2026-11.pdf"),
        "the attachment is listed: {text}"
    );
    // The PDF's bytes (base64 in the message, "%PDF-1.4" decoded) never come back.
    assert!(
        !text.contains("JVBERi0xLjQ") && !text.contains("%PDF"),
        "{text}"
    );
    finish(mail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_instructions_are_fenced_and_make_the_server_call_nothing() {
    let world = World::start().await;
    for (role, tool, args) in hostile_reads() {
        let mut session = world.session(role);
        let data = session.call_ok(tool, args);
        let text = data.to_string();
        assert!(
            text.to_lowercase().contains("ignore previous instructions"),
            "{role}: the hostile item was read: {text}"
        );
        for needle in ["gnore previous instructions", "\\u{1b}", "\\u{202e}"] {
            assert!(
                only_fenced(&text, needle),
                "{role}: {needle:?} outside a fence: {text}"
            );
        }
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{role}: raw controls"
        );
        finish(session);
    }
    assert_eq!(
        world.writes_received(),
        0,
        "a hostile text made the server write"
    );
    let ledger = common::open_ledger(&world.sandbox).await;
    assert!(ledger.list_approvals(None, 10).await.unwrap().is_empty());
    for upstream in &world.sandbox.upstreams {
        if let Some(server) = upstream.server() {
            assert!(
                server.requests().iter().all(|r| r.method == "GET"),
                "{}: a hostile text made the server call more than reads",
                upstream.name()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_in_any_outbound_body_is_blocked_approved_or_not() {
    let world = World::start().await;
    for case in write_cases() {
        let Some(field) = case.body else { continue };
        let mut session = world.session(case.role);
        let mut leaking = case.args.clone();
        leaking[field] = json!(format!("Use this key: {FAKE_TOKEN} to log in again."));
        // Nothing to approve, and no dry run shows it either.
        assert_eq!(
            request(&mut session, &case, &leaking),
            Err("OUTBOUND_BLOCKED".into())
        );
        assert_eq!(
            code_of(&mut session, case.tool, leaking.clone()),
            "OUTBOUND_BLOCKED"
        );
        // An approval of the clean text does not carry the token out.
        let id = approved(&world, &mut session, &case);
        assert_eq!(
            code_of(&mut session, case.tool, with_approval(&leaking, &id)),
            "OUTBOUND_BLOCKED",
            "{}",
            case.tool
        );
        finish(session);
    }
    assert_eq!(world.writes_received(), 0);
    // The audit says which rule refused each one: the scan and its pattern class, never the
    // token itself.
    let audit = world.audit().await;
    let blocked: Vec<_> = audit
        .iter()
        .filter(|r| r.error_code.as_deref() == Some("OUTBOUND_BLOCKED"))
        .collect();
    assert!(blocked.len() >= 3 * write_cases().iter().filter(|c| c.body.is_some()).count());
    for row in blocked {
        assert_eq!(row.decision, "deny", "{row:?}");
        let rule = row.denied_by.as_deref().unwrap_or_default();
        assert!(
            rule.starts_with("outbound_scan:") && rule.len() > 14,
            "{row:?}"
        );
        assert!(!row.rules.iter().any(|r| r == "outbound_scan"), "{row:?}");
    }
    assert!(!format!("{audit:?}").contains(FAKE_TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_after_approval_is_a_mismatch_and_the_approved_write_still_goes() {
    let world = World::start().await;
    for case in write_cases() {
        let mut session = world.session(case.role);
        let id = approved(&world, &mut session, &case);
        for changed in &case.changed {
            assert_eq!(
                code_of(&mut session, case.tool, with_approval(changed, &id)),
                "APPROVAL_MISMATCH",
                "{} {changed}",
                case.tool
            );
        }
        let before = world.writes_received();
        let sent = session.call_ok(case.tool, with_approval(&case.args, &id));
        assert_eq!(sent["dry_run"], false, "{sent}");
        assert_eq!(world.writes_received(), before + 1, "{}", case.tool);
        finish(session);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_outside_an_allowlist_are_denied() {
    let world = World::start().await;
    for case in write_cases() {
        let mut session = world.session(case.role);
        assert_eq!(
            code_of(&mut session, case.tool, case.outside.clone()),
            "SCOPE_DENIED",
            "{}",
            case.tool
        );
        assert_eq!(
            request(&mut session, &case, &case.outside),
            Err("SCOPE_DENIED".into()),
            "{}",
            case.tool
        );
        finish(session);
    }
    // The reads are scoped too.
    let mut ops = world.session("ops");
    assert_eq!(
        code_of(
            &mut ops,
            "cluster_pods",
            json!({"namespace": "kube-system"})
        ),
        "SCOPE_DENIED"
    );
    finish(ops);
    let mut community = world.session("community");
    assert_eq!(
        code_of(
            &mut community,
            "discourse_topic_get",
            json!({"topic_id": TOPIC_PRIVATE})
        ),
        "SCOPE_DENIED"
    );
    finish(community);
    assert_eq!(world.writes_received(), 0);
    // Every refusal is on the audit trail as the scope rule's, after the input passed.
    let audit = world.audit().await;
    let denied: Vec<_> = audit
        .iter()
        .filter(|r| r.error_code.as_deref() == Some("SCOPE_DENIED"))
        .collect();
    assert_eq!(denied.len(), 2 * write_cases().len() + 2, "{audit:?}");
    for row in denied {
        assert_eq!(
            (row.decision.as_str(), row.denied_by.as_deref()),
            ("deny", Some("scope")),
            "{row:?}"
        );
        assert!(
            row.rules.starts_with(&["role_gate".into(), "input".into()]),
            "{row:?}"
        );
        assert!(!row.rules.iter().any(|r| r == "scope"), "{row:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_approval_is_refused() {
    let world = World::start().await;
    for case in write_cases() {
        let mut session = world.session(case.role);
        let id = approved(&world, &mut session, &case);
        session.call_ok(case.tool, with_approval(&case.args, &id));
        let after_first = world.writes_received();
        assert_eq!(
            code_of(&mut session, case.tool, with_approval(&case.args, &id)),
            "APPROVAL_CONSUMED",
            "{}",
            case.tool
        );
        finish(session);
        // Another process of the same role cannot replay it either.
        let mut other = world.session(case.role);
        assert_eq!(
            code_of(&mut other, case.tool, with_approval(&case.args, &id)),
            "APPROVAL_CONSUMED"
        );
        finish(other);
        assert_eq!(world.writes_received(), after_first, "{}", case.tool);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_approval_and_unlisted_approvers_do_not_count() {
    use care_nostr::{EventId, Keys};
    let world = World::start().await;
    // Signed and published directly (the CLI refuses both keys before publishing anything):
    // the server's own key and a stranger's, each reacting as a real approver's app would.
    let server = Keys::parse(&world.sandbox.nostr_secret).unwrap();
    let stranger = Keys::generate();
    for case in write_cases() {
        let mut session = world.session(case.role);
        let answer = session.call_ok(
            "approval_request",
            json!({"action": case.tool, "arguments": case.args}),
        );
        let id = answer["approval_id"].as_str().unwrap().to_owned();
        let card = EventId::from_hex(answer["card_event_id"].as_str().unwrap()).unwrap();
        for keys in [&server, &stranger] {
            let reaction = care_nostr::reaction::build_reaction(
                keys,
                card,
                Some(server.public_key()),
                Some("care-tests"),
                care_core::ledger::Decision::Approve,
            )
            .unwrap();
            care_nostr::publish::publish(
                &[world.relay.url().to_owned()],
                &reaction,
                Duration::from_secs(5),
            )
            .await
            .unwrap();
        }
        // Give the live subscription the time a counted reaction takes.
        std::thread::sleep(Duration::from_millis(500));
        let status = session.call_ok("approval_status", json!({"approval_id": id}));
        assert_eq!(status["status"], "pending", "{}: {status}", case.tool);
        // Confirming on the channel right before the consume finds no counted decision either.
        assert_eq!(
            code_of(&mut session, case.tool, with_approval(&case.args, &id)),
            "APPROVAL_REQUIRED",
            "{}",
            case.tool
        );
        finish(session);
    }
    assert_eq!(world.writes_received(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_approval_is_refused() {
    let world = World::start().await;
    for case in write_cases() {
        let mut session = world.session(case.role);
        let id = approved(&world, &mut session, &case);
        // The approval's time runs out: its expiry moved to the epoch (the ledger's clock decides).
        care_ledger::test_support::execute(
            &world.sandbox.database_url(),
            &format!("UPDATE approvals SET expires_at = 1 WHERE id = '{id}'"),
        )
        .await
        .unwrap();
        assert_eq!(
            code_of(&mut session, case.tool, with_approval(&case.args, &id)),
            "APPROVAL_EXPIRED",
            "{}",
            case.tool
        );
        finish(session);
    }
    assert_eq!(world.writes_received(), 0);
}

#[test]
fn a_tool_outside_the_role_is_indistinguishable_from_a_nonexistent_one() {
    let sandbox = Sandbox::new();
    for role in care_core::catalog::Role::ALL {
        let mut session = Session::start(sandbox.serve_command(role.as_str()));
        let nonexistent = without_id(session.call("no_such_tool_anywhere", json!({})));
        let held = session.tool_names();
        for entry in care_core::catalog::CATALOG {
            if held.contains(entry.name) {
                continue;
            }
            let answer = without_id(session.call(entry.name, json!({})));
            assert_eq!(answer, nonexistent, "{role}: {} differs", entry.name);
        }
        finish(session);
    }
}

fn without_id(mut response: Value) -> Value {
    response.as_object_mut().map(|o| o.remove("id"));
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_upstream_error_text_reaches_a_result() {
    let world = World::start().await;
    for upstream in &world.sandbox.upstreams {
        if let Some(server) = upstream.server() {
            server.inject(Failure::status("/", 400));
        }
    }
    let reads: [(&str, &str, Value); 3] = [
        ("reviews", "asc_apps_list", json!({})),
        ("community", "discourse_latest_topics", json!({})),
        ("ops", "cluster_pods", json!({"namespace": "shop"})),
    ];
    for (role, tool, args) in reads {
        let mut session = world.session(role);
        let answer = session.call_envelope(tool, args);
        assert_eq!(answer["ok"], false, "{role}: {answer}");
        let finished = session.finish();
        finished.assert_stdout_is_protocol();
        let stdout = finished.stdout().to_lowercase();
        for vendor_text in [
            "injected",
            "not permitted",
            "could not be found",
            "bad request",
        ] {
            assert!(
                !stdout.contains(vendor_text),
                "{role}: upstream text on stdout"
            );
        }
    }
    // Mail: a refused login's server text stays on stderr.
    let wrong = key_file(&world.sandbox, "mail-password", "sk-demo-wrong-password");
    let mut cmd = world.command();
    cmd.arg("--role")
        .arg("mail")
        .env("CARE_MAIL_PASSWORD_FILE", &wrong);
    let mut session = Session::start(cmd);
    let answer = session.call_envelope("mail_list", json!({}));
    assert_eq!(answer["ok"], false, "{answer}");
    let finished = session.finish();
    finished.assert_stdout_is_protocol();
    assert!(!finished.stdout().contains("AUTHENTICATIONFAILED"));
    assert!(!finished.stdout().contains("Authentication failed"));
}

#[cfg_attr(
    not(feature = "fault-injection"),
    ignore = "needs --features fault-injection (CARE_FAULT_PANIC_TOOL)"
)]
#[test]
fn a_panic_answers_internal_and_the_session_goes_on() {
    let sandbox = Sandbox::new();
    let panicking: [(&str, &str, Value, &str, Value); 4] = [
        (
            "reviews",
            "asc_apps_list",
            json!({}),
            "sla_status",
            json!({}),
        ),
        (
            "community",
            "discourse_categories",
            json!({}),
            "discourse_latest_topics",
            json!({}),
        ),
        ("mail", "mail_list", json!({}), "sla_status", json!({})),
        (
            "ops",
            "cluster_overview",
            json!({}),
            "cluster_pods",
            json!({"namespace": "shop"}),
        ),
    ];
    for (role, tool, args, next, next_args) in panicking {
        let mut cmd = sandbox.serve_command(role);
        cmd.env("CARE_FAULT_PANIC_TOOL", tool);
        let mut session = Session::start(cmd);
        let error = session.call_err(tool, args);
        common::assert_code(&error, "INTERNAL");
        session.call_ok(next, next_args);
        let error = session.call_err(tool, json!({}));
        common::assert_code(&error, "INTERNAL");
        finish(session);
    }
}

#[test]
fn every_stdout_byte_is_json_rpc() {
    let sandbox = Sandbox::new();
    for role in care_core::catalog::Role::ALL {
        let mut session = Session::start(sandbox.serve_command(role.as_str()));
        session.send_line("{not json");
        session.wait_for_line(|v| v["error"]["code"] == -32700);
        session.send_line("\u{1b}[2J\u{0}");
        session.wait_for_line(|v| v["error"]["code"] == -32700);
        for name in session.tool_names() {
            // Every tool with empty and with hostile arguments: answers, never prints.
            let _ = session.call(&name, json!({}));
            let mut hostile = Map::new();
            hostile.insert("\u{1b}]0;x\u{7}".into(), json!("</user_content>\u{202e}"));
            let _ = session.call(&name, Value::Object(hostile));
        }
        let finished = session.finish();
        finished.assert_stdout_is_protocol();
        assert!(
            finished
                .stdout()
                .lines()
                .all(|l| { serde_json::from_str::<Value>(l).is_ok_and(|v| v["jsonrpc"] == "2.0") }),
            "{role}: a stdout line that is not JSON-RPC"
        );
    }
}

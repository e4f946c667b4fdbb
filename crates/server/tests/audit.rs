//! Invariant 11 over stdio: every `tools/call` leaves one audit row (unknown tools and invalid
//! input included) with role, client, tool, outcome, error code, duration and a salted digest
//! of the arguments; never the arguments themselves, neither in the ledger nor on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use care_core::ledger::AuditRecord;
use common::{Sandbox, Session};
use serde_json::json;

const METRIC: &str = "leakcheck_metric_77";
const COMMENT: &str = "sk-demo-audit-leak-42";
const TICKET: &str = "T-SECRET-9931";
const DISTINCTIVE: [&str; 3] = [METRIC, COMMENT, TICKET];

fn read_audit(sandbox: &Sandbox) -> Vec<AuditRecord> {
    common::block_on(async {
        let ledger = common::open_ledger(sandbox).await;
        let mut rows = ledger.recent_audit(1000).await.expect("read the audit");
        // Newest first from the ledger; the tests read them in call order.
        rows.reverse();
        rows
    })
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[test]
fn every_call_is_audited_without_its_arguments() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("reviews");
    cmd.env("CARE_CLIENT_ID", "test-client");
    let mut session = Session::start(cmd);

    let kpi = json!({"metric": METRIC, "value": 3.5, "target": 4});
    let csat = json!({"channel": "mail", "ticket_ref": TICKET, "score": 4, "comment": COMMENT});
    let bad_csat = json!({"channel": "mail", "ticket_ref": TICKET, "score": 9, "comment": COMMENT});

    // (tool as audited, outcome, error code), one per call, in call order.
    let mut expected: Vec<(&str, &str, Option<&str>)> = Vec::new();
    session.call_ok("kpi_record", kpi.clone());
    expected.push(("kpi_record", "ok", None));
    session.call_ok("kpi_record", kpi.clone());
    expected.push(("kpi_record", "ok", None));
    session.call_ok("csat_record", csat.clone());
    expected.push(("csat_record", "ok", None));
    session.call_err("csat_record", bad_csat.clone());
    expected.push(("csat_record", "error", Some("INVALID_INPUT")));
    session.call_err(
        "kpi_record",
        json!({"metric": METRIC, "value": 1, "note": COMMENT}),
    );
    expected.push(("kpi_record", "error", Some("INVALID_INPUT")));
    assert!(
        session
            .call("no_such_tool_xyz", json!({"comment": COMMENT}))
            .get("error")
            .is_some()
    );
    expected.push(("unknown", "error", Some("UNKNOWN_TOOL")));
    assert!(session.call(TICKET, json!({})).get("error").is_some());
    expected.push(("unknown", "error", Some("UNKNOWN_TOOL")));
    assert!(
        session
            .call("mail_send", json!({"body": COMMENT, "to": TICKET}))
            .get("error")
            .is_some()
    );
    expected.push(("mail_send", "error", Some("UNKNOWN_TOOL")));
    assert!(
        session
            .call("approval_list", json!({}))
            .get("error")
            .is_some()
    );
    expected.push(("approval_list", "error", Some("UNKNOWN_TOOL")));
    session.call_err("approval_status", json!({"approval_id": TICKET}));
    expected.push(("approval_status", "error", Some("NOT_FOUND")));
    session.call_ok("kpi_report", json!({"metric": METRIC}));
    expected.push(("kpi_report", "ok", None));
    // tools/list and the handshake are not tool calls.
    session.list_tools();

    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    let rows = read_audit(&sandbox);

    let got: Vec<(&str, &str, Option<&str>)> = rows
        .iter()
        .map(|r| (r.tool.as_str(), r.outcome.as_str(), r.error_code.as_deref()))
        .collect();
    assert_eq!(got, expected, "one audit row per tools/call, in call order");

    for row in &rows {
        assert_eq!(row.role, "reviews", "{row:?}");
        assert_eq!(row.client, "test-client", "{row:?}");
        assert!(is_hex64(&row.args_digest), "{row:?}");
        assert!(row.duration_us < 20_000_000, "{row:?}");
        assert_eq!(row.approval_id, None, "{row:?}");
        let text = format!("{row:?}");
        for value in DISTINCTIVE {
            assert!(!text.contains(value), "audit row carries {value:?}: {text}");
        }
    }

    // Why each call was allowed or refused: one session label for the process, the rules
    // passed, the refusing rule, the answer's size (never its content).
    let session = &rows[0].session;
    assert!(
        session.starts_with("s-") && session.len() == 18,
        "{session}"
    );
    assert!(rows.iter().all(|r| &r.session == session));
    let why = |r: &AuditRecord| {
        (
            r.decision.clone(),
            r.rules.join(","),
            r.denied_by.clone().unwrap_or_default(),
        )
    };
    let allowed = (
        "allow".to_owned(),
        "role_gate,input".to_owned(),
        String::new(),
    );
    assert_eq!(why(&rows[0]), allowed);
    assert_eq!(rows[0].capability, "ledger-write");
    assert!(rows[0].output.is_some_and(|o| o.bytes > 10 && !o.truncated));
    let by_input = (
        "deny".to_owned(),
        "role_gate".to_owned(),
        "input".to_owned(),
    );
    assert_eq!(why(&rows[3]), by_input);
    assert_eq!(why(&rows[4]), by_input);
    let by_gate = ("deny".to_owned(), String::new(), "role_gate".to_owned());
    for row in &rows[5..9] {
        assert_eq!(why(row), by_gate, "{row:?}");
        assert_eq!(row.output, None, "a protocol error has no envelope");
    }
    assert_eq!(rows[7].capability, "external-write,upstream,approval-gated");
    assert_eq!(rows[5].capability, "");
    assert_eq!(
        why(&rows[9]),
        (
            "error".to_owned(),
            "role_gate,input".to_owned(),
            String::new()
        )
    );
    assert_eq!(why(&rows[10]), allowed);
    assert!(rows[10].output.is_some_and(|o| o.bytes > 10));

    // Equal arguments, equal digests; different arguments, different digests.
    assert_eq!(rows[0].args_digest, rows[1].args_digest);
    assert_ne!(rows[0].args_digest, rows[2].args_digest);
    assert_ne!(rows[2].args_digest, rows[3].args_digest);
    assert_ne!(rows[0].args_digest, rows[4].args_digest);
    assert_ne!(rows[5].args_digest, rows[6].args_digest);
    let distinct: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.args_digest.as_str()).collect();
    assert_eq!(
        distinct.len(),
        rows.len() - 1,
        "only the repeated call shares a digest"
    );

    // stderr carries the audit lines too, and never the arguments.
    finished.assert_stderr_is_json_lines();
    for value in DISTINCTIVE {
        assert!(
            !finished.stderr.contains(value),
            "stderr carries {value:?}: {}",
            finished.stderr
        );
    }
    let audit_lines = finished
        .stderr
        .lines()
        .filter(|l| l.contains("\"care_mcp::audit\""))
        .count();
    assert_eq!(
        audit_lines,
        expected.len(),
        "one audit line on stderr per call"
    );
}

#[test]
fn digests_are_stable_across_runs_on_the_same_ledger() {
    // The embedded ledger keeps its audit salt beside the database file.
    let sandbox = Sandbox::new();
    let args = json!({"metric": "salt.check", "value": 1});
    for role in ["ops", "lead"] {
        let mut session = Session::start(sandbox.serve_command(role));
        session.call_ok("kpi_record", args.clone());
        assert_eq!(session.finish().code(), Some(0));
    }
    let rows = read_audit(&sandbox);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].role, "ops");
    assert_eq!(rows[1].role, "lead");
    assert_eq!(rows[0].client, "stdio", "default client id");
    assert_eq!(rows[0].args_digest, rows[1].args_digest);

    // A configured salt changes the digest of the same arguments.
    let mut cmd = sandbox.serve_command("ops");
    cmd.env("CARE_AUDIT_SALT", "sk-demo-audit-salt-for-tests");
    let mut session = Session::start(cmd);
    session.call_ok("kpi_record", args);
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0));
    assert!(!finished.stderr.contains("sk-demo-audit-salt-for-tests"));
    let rows = read_audit(&sandbox);
    assert_eq!(rows.len(), 3);
    assert_ne!(rows[2].args_digest, rows[0].args_digest);
}

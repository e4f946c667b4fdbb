//! The ledger and approval tools end to end over stdio on a SQLite ledger: KPI attainment,
//! CSAT summaries, SLA status, and the approval request/status/list refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{APPROVER_HEX, Sandbox, Session, assert_code, assert_invalid};
use serde_json::{Value, json};

#[test]
fn kpi_report_compares_the_latest_value_with_its_target() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("lead"));
    let recorded = session.call_ok(
        "kpi_record",
        json!({"metric": "reviews.rating_avg", "value": 4.2, "target": 4.5, "unit": "stars"}),
    );
    assert_eq!(recorded["recorded"]["metric"], "reviews.rating_avg");
    assert_eq!(recorded["recorded"]["value"], 4.2);
    assert_eq!(recorded["recorded"]["target"], 4.5);
    session.call_ok("kpi_record", json!({"metric": "other.metric", "value": 1}));

    let report = session.call_ok("kpi_report", json!({"metric": "reviews.rating_avg"}));
    let metrics = report["metrics"].as_array().expect("metrics");
    assert_eq!(metrics.len(), 1, "{report}");
    let m = &metrics[0];
    assert_eq!(m["metric"], "reviews.rating_avg");
    assert_eq!(m["latest"]["value"], 4.2);
    assert_eq!(m["target"], 4.5);
    assert_eq!(m["unit"], "stars");
    assert_eq!(m["attainment_pct"], 93.33);
    assert_eq!(m["status"], "under_target");
    assert_eq!(m["count"], 1);

    let all = session.call_ok("kpi_report", json!({}));
    assert_eq!(all["metrics"].as_array().unwrap().len(), 2, "{all}");
    let other = all["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "other.metric")
        .expect("other.metric");
    assert_eq!(other["status"], "no_target");
    assert_eq!(other["attainment_pct"], Value::Null);
    assert_eq!(session.finish().code(), Some(0));
}

#[test]
fn kpi_values_survive_a_restart() {
    // The ledger is the SQLite file of DATABASE_URL, not process memory.
    let sandbox = Sandbox::new();
    let mut first = Session::start(sandbox.serve_command("ops"));
    first.call_ok(
        "kpi_record",
        json!({"metric": "restart.check", "value": 7, "target": 7}),
    );
    assert_eq!(first.finish().code(), Some(0));
    let mut second = Session::start(sandbox.serve_command("lead"));
    let report = second.call_ok("kpi_report", json!({"metric": "restart.check"}));
    assert_eq!(report["metrics"][0]["status"], "on_target", "{report}");
    assert_eq!(second.finish().code(), Some(0));
}

#[test]
fn csat_summary_counts_means_and_distributes() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("reviews"));
    for (ticket, score) in [("T-1", 5), ("T-2", 4), ("T-3", 2)] {
        let data = session.call_ok(
            "csat_record",
            json!({"channel": "app_store", "ticket_ref": ticket, "score": score}),
        );
        assert_eq!(data["recorded"]["score"], score);
    }
    let summary = session.call_ok("csat_summary", json!({}));
    let overall = &summary["overall"];
    assert_eq!(overall["count"], 3, "{summary}");
    assert_eq!(overall["mean"], 3.67, "{summary}");
    assert_eq!(overall["satisfied_pct"], 66.67, "{summary}");
    assert_eq!(
        overall["distribution"],
        json!({"1": 0, "2": 1, "3": 0, "4": 1, "5": 1})
    );
    let channels = summary["channels"].as_array().expect("channels");
    let app_store = channels
        .iter()
        .find(|c| c["channel"] == "app_store")
        .unwrap_or_else(|| panic!("no app_store channel: {summary}"));
    assert_eq!(app_store["count"], 3);
    for c in channels.iter().filter(|c| c["channel"] != "app_store") {
        assert_eq!(c["count"], 0, "{summary}");
    }

    let mail_only = session.call_ok("csat_summary", json!({"channel": "mail"}));
    assert_eq!(mail_only["overall"]["count"], 0, "{mail_only}");
    assert_eq!(mail_only["overall"]["mean"], Value::Null, "{mail_only}");
    assert_eq!(session.finish().code(), Some(0));
}

#[test]
fn sla_status_answers_every_channel_with_zeros_on_an_empty_ledger() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("mail"));
    let status = session.call_ok("sla_status", json!({}));
    let channels = status["channels"].as_array().expect("channels");
    let mut names: Vec<&str> = channels
        .iter()
        .map(|c| c["channel"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["app_store", "forum", "mail"], "{status}");
    for c in channels {
        assert_eq!(c["awaiting"], 0, "{c}");
        assert_eq!(c["breached"], 0, "{c}");
        assert_eq!(c["oldest_wait_hours"], Value::Null, "{c}");
        assert_eq!(c["status"], "within_target", "{c}");
        assert!(c["target_hours"].as_u64().is_some_and(|h| h > 0), "{c}");
    }
    let one = session.call_ok("sla_status", json!({"channel": "forum"}));
    assert_eq!(one["channels"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["channels"][0]["target_hours"], 12, "{one}");
    assert_eq!(session.finish().code(), Some(0));
}

#[test]
fn sla_targets_come_from_configuration() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("mail");
    cmd.env("CARE_SLA_TARGETS", "mail=4");
    let mut session = Session::start(cmd);
    let status = session.call_ok("sla_status", json!({"channel": "mail"}));
    assert_eq!(status["channels"][0]["target_hours"], 4, "{status}");
    assert_eq!(session.finish().code(), Some(0));
}

fn reply_arguments() -> Value {
    // A review of the App Store Connect fake's demo seed (see `common::Sandbox`).
    json!({"review_id": "rev-en-001", "body": "Thank you for the review, a dark mode is on our list.", "locale": "en-US"})
}

/// With no approvers configured, a request for the role's external write is APPROVAL_REQUIRED.
#[test]
fn approval_request_without_approvers_is_approval_required() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("reviews"));
    let e = session.call_err(
        "approval_request",
        json!({"action": "asc_review_reply", "arguments": reply_arguments()}),
    );
    assert_code(&e, "APPROVAL_REQUIRED");
    assert_eq!(session.finish().code(), Some(0));
}

#[test]
fn approval_request_refuses_what_the_role_cannot_write() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("reviews");
    cmd.env("CARE_APPROVERS", APPROVER_HEX);
    let mut session = Session::start(cmd);

    // The role's own write is checked with the write tool's own rules.
    let e = session.call_err(
        "approval_request",
        json!({"action": "asc_review_reply", "arguments": {"review_id": "rev-en-001", "body": "", "locale": "en-US"}}),
    );
    assert_invalid(&e, "arguments.body");
    // Another role's write.
    let e = session.call_err(
        "approval_request",
        json!({"action": "mail_send", "arguments": {"to": "a@example.com", "subject": "s", "body": "b"}}),
    );
    assert_invalid(&e, "action");
    // A read tool is not an action, nor is a name outside the catalog.
    for action in ["kpi_report", "no_such_action"] {
        let e = session.call_err(
            "approval_request",
            json!({"action": action, "arguments": {}}),
        );
        assert_invalid(&e, "action");
    }
    // The lifetime is refused outside 1..=10080, never clamped.
    for ttl in [0, 10_081] {
        let e = session.call_err(
            "approval_request",
            json!({"action": "asc_review_reply", "arguments": reply_arguments(), "ttl_minutes": ttl}),
        );
        assert_invalid(&e, "ttl_minutes");
    }
    let e = session.call_err(
        "approval_request",
        json!({"action": "asc_review_reply", "arguments": reply_arguments(), "ttl_minutes": -1}),
    );
    assert_invalid(&e, "ttl_minutes");
    // Nothing was stored.
    let e = session.call_err(
        "approval_status",
        json!({"approval_id": "apr_0123456789abcdef"}),
    );
    assert_code(&e, "NOT_FOUND");
    assert_eq!(session.finish().code(), Some(0));

    let mut lead = Session::start(sandbox.serve_command("lead"));
    let list = lead.call_ok("approval_list", json!({}));
    assert_eq!(list, json!({"approvals": []}));
    assert_eq!(lead.finish().code(), Some(0));
}

#[test]
fn approval_status_of_an_unknown_id_is_not_found() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("ops"));
    let random = format!("apr_{:032x}", rand::random::<u128>());
    let e = session.call_err("approval_status", json!({"approval_id": random}));
    assert_code(&e, "NOT_FOUND");
    assert!(!e.contains_key("field"), "{e:?}");
    assert_eq!(session.finish().code(), Some(0));
}

#[test]
fn approval_list_on_an_empty_ledger_is_empty() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("lead"));
    assert_eq!(
        session.call_ok("approval_list", json!({})),
        json!({"approvals": []})
    );
    assert_eq!(
        session.call_ok("approval_list", json!({"status": "pending", "limit": 5})),
        json!({"approvals": []})
    );
    for limit in [0, 101] {
        let e = session.call_err("approval_list", json!({"limit": limit}));
        assert_invalid(&e, "limit");
    }
    let e = session.call_err("approval_list", json!({"status": "granted"}));
    assert_invalid(&e, "status");
    assert_eq!(session.finish().code(), Some(0));
}

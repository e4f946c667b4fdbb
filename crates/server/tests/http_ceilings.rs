//! Per-client ceilings over HTTP: each client has its own sliding 60-second window; past it a
//! call answers RATE_LIMITED with Retry-After (and an audit row) while other clients go on;
//! two processes sharing one ledger enforce one ceiling between them.
// Test clients, not upstream clients: the domain kit's HttpClient rule does not apply.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use common::Sandbox;
use common::http::{HttpServer, Raw, add_client};
use serde_json::json;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

#[test]
fn a_client_past_its_ceiling_is_limited_and_the_others_are_not() {
    let sandbox = Sandbox::new();
    let slow = add_client(&sandbox, "slow", "lead", Some(3));
    let busy = add_client(&sandbox, "busy", "lead", None);
    let server = HttpServer::start(&sandbox, &["lead"], &[]);
    rt().block_on(async {
        let raw = Raw::new(&server);
        let slow = raw.session(&slow).await;
        let busy = raw.session(&busy).await;
        for id in 0..3 {
            let ok = slow.call(id, "kpi_report", json!({})).await;
            assert_eq!(
                ok.message()["result"]["structuredContent"]["ok"],
                true,
                "{ok:?}"
            );
        }
        // tools/list is not a call: it does not count and is not limited.
        assert!(!slow.tool_names().await.is_empty());
        let limited = slow.call(7, "kpi_report", json!({})).await;
        assert_eq!(limited.status, 200, "the session goes on: {limited:?}");
        let retry: u64 = limited.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=61).contains(&retry), "{retry}");
        let message = limited.message();
        assert_eq!(message["id"], 7);
        assert_eq!(message["result"]["isError"], true);
        let error = &message["result"]["structuredContent"]["error"];
        assert_eq!(error["code"], "RATE_LIMITED", "{message}");
        assert_eq!(
            error["message"],
            care_core::error::ErrorCode::RateLimited.message()
        );
        for id in 0..10 {
            let ok = busy.call(id, "kpi_report", json!({})).await;
            assert_eq!(ok.message()["result"]["structuredContent"]["ok"], true);
        }
    });
    server.wait_for_audit(|a| {
        a["client"] == "slow" && a["error_code"] == "RATE_LIMITED" && a["tool"] == "kpi_report"
    });
    let limited_rows = server
        .audit_lines()
        .iter()
        .filter(|a| a["error_code"] == "RATE_LIMITED")
        .count();
    assert_eq!(limited_rows, 1);
}

#[test]
fn two_processes_on_one_ledger_share_one_ceiling() {
    let sandbox = Sandbox::new();
    let token = add_client(&sandbox, "shared", "lead", Some(5));
    let a = HttpServer::start(&sandbox, &["lead"], &[]);
    let b = HttpServer::start(&sandbox, &["lead"], &[]);
    rt().block_on(async {
        let on_a = Raw::new(&a).session(&token).await;
        let on_b = Raw::new(&b).session(&token).await;
        let mut answers = Vec::new();
        for id in 0..8 {
            let session = if id % 2 == 0 { &on_a } else { &on_b };
            answers.push(session.call(id, "kpi_report", json!({})).await);
        }
        let passed = answers
            .iter()
            .filter(|a| a.message()["result"]["structuredContent"]["ok"] == true)
            .count();
        let limited = answers
            .iter()
            .filter(|a| a.headers.contains_key("retry-after"))
            .count();
        assert_eq!((passed, limited), (5, 3));
    });
}

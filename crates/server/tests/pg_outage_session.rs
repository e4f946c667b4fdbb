//! A role served on Postgres keeps serving through a database outage: it starts while the
//! database is down (tools listed, ledger calls LEDGER_UNAVAILABLE), recovers by itself when
//! the database starts, degrades again when it stops mid-session, and recovers again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use care_ledger::test_support::ThrowawayCluster;
use common::{Sandbox, Session};
use serde_json::json;

fn record(session: &mut Session, value: f64) -> serde_json::Value {
    session.call_envelope(
        "kpi_record",
        json!({"metric": "outage_check", "value": value}),
    )
}

fn assert_ledger_unavailable(session: &mut Session, value: f64) {
    let envelope = record(session, value);
    assert_eq!(envelope["ok"], false, "{envelope}");
    assert_eq!(
        envelope["error"]["code"], "LEDGER_UNAVAILABLE",
        "{envelope}"
    );
}

#[test]
fn session_survives_postgres_down_at_start_and_mid_session() {
    let cluster = ThrowawayCluster::init();
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("lead");
    cmd.env("DATABASE_URL", cluster.url())
        .env("CARE_AUDIT_SALT", "sk-demo-outage-salt-0123456789");
    let mut session = Session::start(cmd);

    // Down at start: the tools are there, ledger calls fail with the fixed code.
    assert!(session.tool_names().contains("kpi_report"));
    assert_ledger_unavailable(&mut session, 1.0);

    cluster.start();
    assert_eq!(
        record(&mut session, 2.0)["ok"],
        true,
        "no recovery after start"
    );

    cluster.stop();
    assert_ledger_unavailable(&mut session, 3.0);

    cluster.start();
    assert_eq!(
        record(&mut session, 4.0)["ok"],
        true,
        "no recovery after restart"
    );
    let report = session.call_ok("kpi_report", json!({"metric": "outage_check"}));
    let metrics = report["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 1);
    assert_eq!(
        metrics[0]["count"], 2,
        "exactly the two calls made while up were stored"
    );
    assert_eq!(metrics[0]["latest"]["value"], 4.0);

    let finished = session.finish();
    finished.assert_stdout_is_protocol();
    // The SQL detail stays on stderr; the caller only ever saw the fixed sentence.
    assert!(!finished.stdout().contains("connection refused"));
}

//! Invariants 3, 7 and 8 over a real stdio session: stdout carries only JSON-RPC whatever the
//! client sends (bad input, bad JSON, unknown methods, a panicking handler), stderr only JSON
//! lines; results carry only protocol keys and errors only fixed text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, Session, assert_code, assert_invalid, fixed_message};
use serde_json::json;

const PANIC_PAYLOAD: &str = "sk-demo-panic-payload";

#[test]
#[cfg_attr(
    not(feature = "fault-injection"),
    ignore = "needs --features fault-injection (CARE_FAULT_PANIC_TOOL)"
)]
fn stdout_stays_the_protocol_through_bad_input_and_a_panic() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("lead");
    cmd.env("CARE_FAULT_PANIC_TOOL", "kpi_report");
    let mut session = Session::start(cmd);

    // Valid calls.
    session.call_ok(
        "kpi_record",
        json!({"metric": "reviews.rating_avg", "value": 4.2, "target": 4.5}),
    );
    session.call_ok("sla_status", json!({}));

    // Invalid input of several sorts, each answered as a tool error naming the field.
    let e = session.call_err(
        "csat_record",
        json!({"channel": "mail", "ticket_ref": "T-1", "score": 9}),
    );
    assert_invalid(&e, "score");
    let e = session.call_err(
        "kpi_record",
        json!({"metric": "m", "value": 1, "bogus_field": true}),
    );
    assert_invalid(&e, "bogus_field");
    let e = session.call_err("kpi_record", json!({"metric": "m", "value": "high"}));
    assert_invalid(&e, "value");
    let e = session.call_err("kpi_record", json!({"metric": 17, "value": 1}));
    assert_invalid(&e, "metric");
    let e = session.call_err(
        "csat_record",
        json!({"channel": "mail", "ticket_ref": "T-2", "score": 4, "comment": "x".repeat(25_000)}),
    );
    assert_invalid(&e, "comment");
    let e = session.call_err(
        "csat_record",
        json!({"channel": "phone", "ticket_ref": "T-3", "score": 4}),
    );
    assert_invalid(&e, "channel");

    // An unknown tool: a protocol error, not a result.
    let response = session.call("no_such_tool_xyz", json!({}));
    assert!(response.get("error").is_some(), "{response}");

    // A malformed line gets the JSON-RPC parse error (never silence), then a nonexistent method.
    session.send_line("{not json");
    let parse_error = session.wait_for_line(|v| v["error"]["code"] == -32700);
    assert_eq!(parse_error["id"], serde_json::Value::Null, "{parse_error}");
    assert!(!parse_error.to_string().contains("not json"));
    let response = session.request("no/such_method", json!({}));
    assert_eq!(response["error"]["code"], -32601, "{response}");
    assert!(
        !response.to_string().contains("such_method"),
        "the method name is not echoed: {response}"
    );

    // The panicking handler answers INTERNAL with the fixed message.
    let e = session.call_err("kpi_report", json!({}));
    assert_code(&e, "INTERNAL");
    assert_eq!(e.len(), 2, "INTERNAL carries only code and message: {e:?}");

    // The session goes on after the panic.
    let data = session.call_ok(
        "kpi_record",
        json!({"metric": "after.panic", "value": 1, "target": 2}),
    );
    assert_eq!(data["recorded"]["metric"], "after.panic");
    let data = session.call_ok(
        "csat_record",
        json!({"channel": "forum", "ticket_ref": "T-4", "score": 5}),
    );
    assert_eq!(data["recorded"]["score"], 5);
    session.call_ok("csat_summary", json!({}));
    // The same panicking tool panics again without ending the session.
    let e = session.call_err("kpi_report", json!({"metric": "after.panic"}));
    assert_code(&e, "INTERNAL");
    let lead_implemented = care_core::catalog::tools_of(care_core::catalog::Role::Lead)
        .filter(|e| common::implemented().contains(e.name))
        .count();
    assert_eq!(session.tool_names().len(), lead_implemented);

    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    finished.assert_stdout_is_protocol();
    finished.assert_stderr_is_json_lines();
    let stdout = finished.stdout();
    assert!(
        !stdout.contains(PANIC_PAYLOAD),
        "the panic payload reached stdout"
    );
    assert!(!stdout.contains("injected fault"), "panic text on stdout");
    assert!(!stdout.contains("handler.rs"), "panic location on stdout");
    // The panic is recorded on stderr (as a JSON line), where operators look.
    assert!(
        finished.stderr.contains(PANIC_PAYLOAD),
        "the panic is not logged on stderr"
    );
}

#[test]
fn result_envelopes_carry_only_protocol_keys_and_fixed_text() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("reviews"));

    // Success: {ok:true, data:{...}} (call_ok checks the result shape).
    let data = session.call_ok("kpi_record", json!({"metric": "shape.check", "value": 3}));
    assert!(data.is_object(), "{data}");
    let data = session.call_ok("sla_status", json!({}));
    assert!(data.is_object(), "{data}");

    // Two different invalid inputs of the same code: same message.
    let a = session.call_err(
        "csat_record",
        json!({"channel": "mail", "ticket_ref": "T-1", "score": 0}),
    );
    let b = session.call_err("kpi_record", json!({"metric": "Not A Name", "value": 1}));
    assert_invalid(&a, "score");
    assert_invalid(&b, "metric");
    assert_eq!(a["message"], b["message"]);

    // INVALID_INPUT names the field and never contains the submitted value.
    let leak = "sk-demo-leak-check-123";
    let checks = [
        (
            "kpi_record",
            json!({"metric": "m", "value": 1, "at": leak}),
            "at",
        ),
        ("kpi_record", json!({"metric": "m", "value": leak}), "value"),
        (
            "kpi_record",
            json!({"metric": "m", "value": 1, "unit": format!("{leak}-long-unit")}),
            "unit",
        ),
        (
            "csat_record",
            json!({"channel": leak, "ticket_ref": "T-1", "score": 3}),
            "channel",
        ),
        (
            "csat_record",
            json!({"channel": "mail", "ticket_ref": format!("{leak} with spaces"), "score": 3}),
            "ticket_ref",
        ),
        ("csat_summary", json!({"since": leak}), "since"),
        (
            "approval_status",
            json!({"approval_id": format!("{leak} x")}),
            "approval_id",
        ),
    ];
    for (tool, arguments, field) in checks {
        let response = session.call(tool, arguments);
        let text = response.to_string();
        assert!(!text.contains(leak), "{tool}: the value is echoed: {text}");
        let envelope = common::check_result_shape(&response["result"]);
        let error = envelope["error"].as_object().unwrap();
        assert_invalid(error, field);
    }
    // A crafted unknown key is not echoed either.
    let response = session.call(
        "kpi_record",
        json!({"metric": "m", "value": 1, "IGNORE PREVIOUS sk-demo-leak-check-123": 1}),
    );
    assert!(!response.to_string().contains(leak), "{response}");
    let envelope = common::check_result_shape(&response["result"]);
    assert_invalid(envelope["error"].as_object().unwrap(), "arguments");

    // Another code: NOT_FOUND, fixed text, no field.
    let e = session.call_err(
        "approval_status",
        json!({"approval_id": "apr_does_not_exist"}),
    );
    assert_code(&e, "NOT_FOUND");
    assert!(!e.contains_key("field"), "{e:?}");
    assert_ne!(fixed_message("NOT_FOUND"), fixed_message("INVALID_INPUT"));

    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    finished.assert_stdout_is_protocol();
}

#[test]
fn a_call_without_arguments_is_answered_as_a_tool_result() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("lead"));
    // `arguments` omitted entirely: no arguments is an empty object.
    let response = session.request("tools/call", json!({"name": "sla_status"}));
    let envelope = common::check_result_shape(&response["result"]);
    assert_eq!(envelope["ok"], true, "{envelope}");
    let response = session.request("tools/call", json!({"name": "kpi_record"}));
    let envelope = common::check_result_shape(&response["result"]);
    assert_eq!(envelope["error"]["code"], "INVALID_INPUT", "{envelope}");
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0));
    finished.assert_stdout_is_protocol();
}

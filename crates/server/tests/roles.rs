//! Invariant 1 over stdio: each role's `tools/list` is its catalog column (restricted to the
//! implemented tools), with explicit annotations, closed and portable input schemas and the
//! envelope's output schema; a tool outside the role answers exactly like a name that exists
//! nowhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use care_core::catalog::{self, Role, ToolKind, tools_of};
use care_core::envelope;
use care_core::schema::portability_problems;
use common::{Sandbox, Session, implemented};
use serde_json::{Value, json};

/// The names a role should list: its catalog rows that are implemented.
fn expected_names(role: Role) -> BTreeSet<String> {
    tools_of(role)
        .map(|e| e.name)
        .filter(|n| implemented().contains(*n))
        .map(str::to_owned)
        .collect()
}

#[test]
fn implemented_tools_are_all_in_the_catalog() {
    for name in implemented() {
        assert!(
            catalog::lookup(name).is_some(),
            "{name} is not in the catalog"
        );
    }
}

fn check_annotations(role: Role, tool: &Value) {
    let name = tool["name"].as_str().unwrap();
    let entry = catalog::lookup(name).unwrap();
    let a = tool["annotations"]
        .as_object()
        .unwrap_or_else(|| panic!("{role}/{name}: no annotations: {tool}"));
    for hint in [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ] {
        assert!(
            a.get(hint).is_some_and(Value::is_boolean),
            "{role}/{name}: {hint} not set explicitly: {tool}"
        );
    }
    let upstream = entry.domain.is_upstream();
    match entry.kind {
        ToolKind::Read => {
            assert_eq!(a["readOnlyHint"], true, "{role}/{name}");
            assert_eq!(a["destructiveHint"], false, "{role}/{name}");
            assert_eq!(a["openWorldHint"], upstream, "{role}/{name}");
        }
        ToolKind::LedgerWrite => {
            assert!(!upstream, "{name}");
            assert_eq!(a["readOnlyHint"], false, "{role}/{name}");
            assert_eq!(a["destructiveHint"], false, "{role}/{name}");
            assert_eq!(a["openWorldHint"], false, "{role}/{name}");
        }
        ToolKind::ExternalWrite => {
            assert_eq!(a["readOnlyHint"], false, "{role}/{name}");
            assert_eq!(a["destructiveHint"], true, "{role}/{name}");
            assert_eq!(a["openWorldHint"], true, "{role}/{name}");
        }
    }
    let writes = [
        "kpi_record",
        "csat_record",
        "approval_request",
        "asc_review_reply",
        "discourse_post_reply",
        "cluster_restart_workload",
        "mail_send",
    ];
    assert_eq!(
        a["readOnlyHint"] == false,
        writes.contains(&name),
        "{role}/{name}: readOnlyHint"
    );
}

fn check_role(role: Role) {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command(role.as_str()));
    let tools = session.list_tools();
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{role}: {}", finished.stderr);

    let listed: BTreeSet<String> = tools
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(listed.len(), tools.len(), "{role}: duplicate names listed");
    assert_eq!(listed, expected_names(role), "{role}: tools/list");
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let entry = catalog::lookup(name)
            .unwrap_or_else(|| panic!("{role}: {name} is listed but not in the catalog"));
        assert!(entry.held_by(role), "{role}: {name} is listed but not held");
        check_annotations(role, tool);
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{role}/{name}: {schema}");
        assert_eq!(
            schema.get("additionalProperties"),
            Some(&json!(false)),
            "{role}/{name}: input schema must refuse unknown fields: {schema}"
        );
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{role}/{name}: description"
        );
        // Portable: optional means absent (no null type anywhere), no refs, standard formats.
        assert_eq!(
            portability_problems(schema),
            Vec::<String>::new(),
            "{role}/{name}: {schema}"
        );
        assert_eq!(
            tool["outputSchema"],
            Value::Object(envelope::output_schema()),
            "{role}/{name}: outputSchema is the envelope's"
        );
    }
}

#[test]
fn lead_lists_its_catalog_column() {
    check_role(Role::Lead);
}

#[test]
fn reviews_lists_its_catalog_column() {
    check_role(Role::Reviews);
}

#[test]
fn insight_lists_its_catalog_column() {
    check_role(Role::Insight);
}

#[test]
fn community_lists_its_catalog_column() {
    check_role(Role::Community);
}

#[test]
fn mail_lists_its_catalog_column() {
    check_role(Role::Mail);
}

#[test]
fn ops_lists_its_catalog_column() {
    check_role(Role::Ops);
}

#[test]
fn expected_columns_are_not_trivial() {
    // Guards the derivation above: the sets differ between roles as the table says.
    assert_eq!(expected_names(Role::Lead).len(), 25);
    assert_eq!(expected_names(Role::Reviews).len(), 15);
    assert_eq!(expected_names(Role::Insight).len(), 12);
    assert_eq!(expected_names(Role::Community).len(), 11);
    assert_eq!(expected_names(Role::Mail).len(), 10);
    assert_eq!(expected_names(Role::Ops).len(), 9);
}

/// A tool of another role, a tool of no role here and a name that exists nowhere give
/// byte-identical JSON-RPC errors, and none echoes the name.
#[test]
fn unknown_tool_is_indistinguishable_from_another_roles_tool() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("reviews"));
    let names = ["mail_send", "approval_list", "no_such_tool_xyz"];
    let mut errors = Vec::new();
    for name in names {
        for arguments in [json!({}), json!({"to": "a@example.com", "limit": 5})] {
            let response = session.call(name, arguments);
            assert!(
                response.get("result").is_none(),
                "{name} answered a result: {response}"
            );
            let error = response
                .get("error")
                .unwrap_or_else(|| panic!("{name}: no error: {response}"))
                .clone();
            let text = serde_json::to_string(&error).unwrap();
            assert!(!text.contains(name), "{name} is echoed: {text}");
            errors.push((name, text));
        }
    }
    // A held tool still works in the same session (the errors are not a broken session).
    session.call_ok("sla_status", json!({}));
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0));
    let first = &errors[0].1;
    for (name, text) in &errors {
        assert_eq!(
            text, first,
            "{name} answers differently from {}",
            errors[0].0
        );
    }
    let error: Value = serde_json::from_str(first).unwrap();
    assert!(error["code"].is_i64(), "{error}");
    assert!(error["message"].is_string(), "{error}");
}

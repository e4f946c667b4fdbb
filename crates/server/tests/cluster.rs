//! The Kubernetes domain in the binary: the roles holding cluster tools refuse to start without
//! its configuration (reasons on stderr by variable name, never values, exit 2), the other
//! roles never read it nor reach the API server, and the ops role serves the tools over stdio
//! against the fake API server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use care_fakes::kubernetes::FakeKube;
use common::{Sandbox, Session, assert_code, run_once};
use serde_json::json;

const KUBE_VARS: [&str; 4] = [
    "CARE_KUBE_NAMESPACES",
    "CARE_KUBE_API_URL",
    "CARE_KUBE_TOKEN_FILE",
    "CARE_CLUSTER_WRITE",
];

#[test]
fn roles_with_cluster_tools_refuse_to_start_without_its_config() {
    let sandbox = Sandbox::new();
    for role in ["ops", "lead"] {
        let mut cmd = sandbox.serve_command(role);
        for var in KUBE_VARS {
            cmd.env_remove(var);
        }
        let finished = run_once(&mut cmd, None);
        assert_eq!(finished.code(), Some(2), "{role}: {}", finished.stderr);
        assert!(finished.stdout_lines.is_empty(), "{role}");
        assert!(
            finished.stderr.contains("CARE_KUBE_NAMESPACES"),
            "{role}: {}",
            finished.stderr
        );
        assert!(
            finished.stderr.contains("KUBECONFIG or CARE_KUBE_API_URL"),
            "{role}"
        );
    }
    // A namespace list that is not one is named, never quoted.
    let mut cmd = sandbox.serve_command("ops");
    cmd.env("CARE_KUBE_NAMESPACES", "shop, sk-demo_NOT/A-NAMESPACE");
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(2), "{}", finished.stderr);
    assert!(finished.stderr.contains("CARE_KUBE_NAMESPACES entry 2"));
    assert!(!finished.stderr.contains("sk-demo"));
}

#[test]
fn a_role_without_cluster_tools_never_reads_its_config() {
    let sandbox = Sandbox::new();
    for role in ["reviews", "insight", "community", "mail"] {
        let mut cmd = sandbox.serve_command(role);
        for var in KUBE_VARS {
            cmd.env_remove(var);
        }
        cmd.env("KUBECONFIG", "/nonexistent/kubeconfig");
        let mut session = Session::start(cmd);
        let names = session.tool_names();
        assert!(!names.iter().any(|n| n.starts_with("cluster_")), "{role}");
        assert_eq!(session.finish().code(), Some(0), "{role}");
    }
    assert!(sandbox.fake::<FakeKube>().requests().is_empty());
}

#[test]
fn the_ops_role_serves_the_cluster_over_stdio() {
    let sandbox = Sandbox::new();
    let mut session = Session::start(sandbox.serve_command("ops"));
    let overview = session.call_ok("cluster_overview", json!({}));
    assert!(overview["nodes"].is_null());
    assert!(overview["nodes_reason"].is_string());
    assert_eq!(overview["namespaces"][0]["namespace"], "shop");
    let events = session.call_ok(
        "cluster_events",
        json!({"namespace": "shop", "warnings_only": true}),
    );
    for event in events["events"].as_array().unwrap() {
        let message = event["message"].as_str().unwrap();
        assert!(message.starts_with("<user_content>") && message.ends_with("</user_content>"));
    }
    let e = session.call_err("cluster_pods", json!({"namespace": "kube-system"}));
    assert_code(&e, "SCOPE_DENIED");
    // Writes off: a dry run, checked by the API server's own dry run, changes nothing.
    let restart = json!({"namespace": "shop", "kind": "Deployment", "name": "checkout"});
    let dry = session.call_ok("cluster_restart_workload", restart.clone());
    assert_eq!(dry["dry_run"], true);
    assert!(dry["upstream_dry_run"]["validated_by"].is_string());
    assert_eq!(session.finish().code(), Some(0));
    let fake = sandbox.fake::<FakeKube>();
    assert_eq!(fake.dry_runs().len(), 1);

    // Writes on: without an approval the restart goes nowhere.
    let mut cmd = sandbox.serve_command("ops");
    cmd.env("CARE_WRITE_ENABLED", "1");
    let mut session = Session::start(cmd);
    let e = session.call_err("cluster_restart_workload", restart);
    assert_code(&e, "APPROVAL_REQUIRED");
    assert_eq!(session.finish().code(), Some(0));
    assert!(fake.restarts().is_empty());
    assert!(
        fake.forbidden_touches().is_empty(),
        "{:?}",
        fake.forbidden_touches()
    );
}

//! Invariant 2 and the command line: role resolution (`--role` beats `CARE_ROLE`, a missing or
//! unknown role exits 2 with one stderr line and nothing on stdout), the per-role wrappers, and
//! the operator commands `tools` and `approvals`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use care_core::catalog::{Role, tools_of};
use common::{Sandbox, Session, binary, implemented, run_once, wrappers_dir};
use serde_json::Value;

fn expected_names(role: Role) -> BTreeSet<String> {
    tools_of(role)
        .map(|e| e.name)
        .filter(|n| implemented().contains(*n))
        .map(str::to_owned)
        .collect()
}

/// A refused start: exit 2, nothing on stdout, exactly one JSON line on stderr.
fn assert_refused_start(finished: &common::Finished, what: &str) {
    assert_eq!(finished.code(), Some(2), "{what}: {finished:?}");
    assert!(
        finished.stdout_lines.is_empty(),
        "{what}: stdout must stay empty: {:?}",
        finished.stdout_lines
    );
    let lines = finished.stderr_lines();
    assert_eq!(
        lines.len(),
        1,
        "{what}: expected one stderr line: {lines:?}"
    );
    let line: Value = serde_json::from_str(lines[0]).expect("stderr line is JSON");
    assert!(line.is_object(), "{what}: {line}");
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
"#;

#[test]
fn no_role_exits_2_before_serving() {
    let sandbox = Sandbox::new();
    // The client speaks first; a server that served anything would answer on stdout.
    let finished = run_once(&mut sandbox.command(), Some(INITIALIZE));
    assert_refused_start(&finished, "no role");
    assert!(finished.stderr.contains("role"), "{}", finished.stderr);
}

#[test]
fn empty_care_role_is_no_role() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.env("CARE_ROLE", "");
    let finished = run_once(&mut cmd, Some(INITIALIZE));
    assert_refused_start(&finished, "CARE_ROLE empty");
}

#[test]
fn unknown_role_exits_2_before_serving() {
    let sandbox = Sandbox::new();
    let finished = run_once(&mut sandbox.serve_command("admin"), Some(INITIALIZE));
    assert_refused_start(&finished, "--role admin");
    // The reason is ours, not an echo of the input.
    assert!(!finished.stderr.contains("admin"), "{}", finished.stderr);
}

#[test]
fn unknown_care_role_exits_2() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.env("CARE_ROLE", "Lead");
    let finished = run_once(&mut cmd, Some(INITIALIZE));
    assert_refused_start(&finished, "CARE_ROLE=Lead (roles are exact)");
}

#[test]
fn role_flag_beats_care_role() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("lead");
    cmd.env("CARE_ROLE", "ops");
    let mut session = Session::start(cmd);
    let names = session.tool_names();
    assert_eq!(names, expected_names(Role::Lead));
    assert_ne!(names, expected_names(Role::Ops));
    assert_eq!(session.finish().code(), Some(0));
}

#[test]
fn unknown_role_flag_is_not_rescued_by_care_role() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("admin");
    cmd.env("CARE_ROLE", "ops");
    let finished = run_once(&mut cmd, Some(INITIALIZE));
    assert_refused_start(&finished, "--role admin with CARE_ROLE=ops");
}

#[test]
fn care_role_alone_selects_the_role() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.env("CARE_ROLE", "community");
    let mut session = Session::start(cmd);
    assert_eq!(session.tool_names(), expected_names(Role::Community));
    assert_eq!(session.finish().code(), Some(0));
}

/// A configuration the server refuses is a refused start too, and its values are not echoed.
#[test]
fn refused_configuration_exits_2_without_echoing_values() {
    // The Nostr key is read only by the roles that request approvals (reviews here).
    let cases: [(&str, &str, &str); 4] = [
        ("lead", "CARE_APPROVERS", "npub-sk-demo-cfg-leak-1"),
        (
            "lead",
            "DATABASE_URL",
            "mysql://care:sk-demo-cfg-leak-2@db/care",
        ),
        ("lead", "CARE_CLIENT_ID", "sk-demo-cfg-leak-3 with spaces"),
        (
            "reviews",
            "CARE_NOSTR_SECRET_KEY",
            "nsec-sk-demo-cfg-leak-4",
        ),
    ];
    for (role, name, value) in cases {
        let sandbox = Sandbox::new();
        let mut cmd = sandbox.serve_command(role);
        cmd.env(name, value);
        let finished = run_once(&mut cmd, Some(INITIALIZE));
        assert_refused_start(&finished, name);
        assert!(
            !finished.stderr.contains("sk-demo-cfg-leak"),
            "{name}: the value is echoed: {}",
            finished.stderr
        );
    }
}

/// A role that requests no approval reads no Nostr key or relay (care_core::variables): a
/// broken one in its environment does not concern it, and it serves.
#[test]
fn a_role_without_approvals_never_reads_the_nostr_key() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("lead");
    cmd.env("CARE_NOSTR_SECRET_KEY", "nsec-sk-demo-unread")
        .env("CARE_NOSTR_RELAYS", "not a relay");
    let mut session = Session::start(cmd);
    assert_eq!(session.tool_names(), expected_names(Role::Lead));
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
}

fn wrapper(role: Role) -> std::path::PathBuf {
    wrappers_dir().join(format!("care-mcp-{role}"))
}

#[test]
fn every_role_has_an_executable_wrapper() {
    for role in Role::ALL {
        let path = wrapper(role);
        let meta = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(meta.is_file(), "{}", path.display());
        assert_ne!(
            meta.permissions().mode() & 0o111,
            0,
            "{} is not executable",
            path.display()
        );
    }
}

/// The wrapper serves its role from any cwd, ignoring the arguments a host passes.
#[test]
fn wrappers_serve_their_role_and_ignore_arguments() {
    for role in Role::ALL {
        let sandbox = Sandbox::new();
        let mut cmd = sandbox.command_for(&wrapper(role));
        cmd.current_dir("/")
            .env("CARE_MCP_BIN", binary())
            .args(["--role", "lead"]);
        let mut session = Session::start(cmd);
        assert_eq!(
            session.tool_names(),
            expected_names(role),
            "wrapper of {role}"
        );
        let finished = session.finish();
        assert_eq!(finished.code(), Some(0), "{role}: {}", finished.stderr);
        finished.assert_stdout_is_protocol();
    }
}

/// Installed layout: the binary beside a copy of the wrapper, no CARE_MCP_BIN.
#[test]
fn wrapper_finds_the_binary_beside_it() {
    let sandbox = Sandbox::in_target();
    let bin_dir = sandbox.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let installed_bin = bin_dir.join("care-mcp");
    if std::fs::hard_link(binary(), &installed_bin).is_err() {
        std::fs::copy(binary(), &installed_bin).unwrap();
    }
    let installed_wrapper = bin_dir.join("care-mcp-reviews");
    std::fs::copy(wrapper(Role::Reviews), &installed_wrapper).unwrap();
    std::fs::set_permissions(&installed_wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();

    let mut cmd = sandbox.command_for(&installed_wrapper);
    cmd.current_dir("/");
    let mut session = Session::start(cmd);
    assert_eq!(session.tool_names(), expected_names(Role::Reviews));
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
}

/// The image's layout (no shell there): `care-mcp-<role>` is a symbolic link to the binary,
/// which serves the role its name says and ignores the arguments, as the script does.
#[test]
fn a_link_named_after_a_role_serves_that_role() {
    let sandbox = Sandbox::in_target();
    let bin_dir = sandbox.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    for role in [Role::Reviews, Role::Ops] {
        let link = bin_dir.join(format!("care-mcp-{role}"));
        std::os::unix::fs::symlink(binary(), &link).unwrap();
        let mut cmd = sandbox.command_for(&link);
        cmd.current_dir("/").args(["--role", "lead", "tools"]);
        let mut session = Session::start(cmd);
        assert_eq!(session.tool_names(), expected_names(role), "{role}");
        let finished = session.finish();
        assert_eq!(finished.code(), Some(0), "{role}: {}", finished.stderr);
        finished.assert_stdout_is_protocol();
    }
    let unknown = bin_dir.join("care-mcp-nobody");
    std::os::unix::fs::symlink(binary(), &unknown).unwrap();
    let mut cmd = sandbox.command_for(&unknown);
    let finished = run_once(&mut cmd, Some(INITIALIZE));
    assert_eq!(finished.code(), Some(2), "{finished:?}");
    assert!(finished.stdout_lines.is_empty(), "{finished:?}");
}

#[test]
fn wrapper_without_a_binary_fails_on_stderr() {
    let sandbox = Sandbox::new();
    let lone = sandbox.path().join("care-mcp-ops");
    std::fs::copy(wrapper(Role::Ops), &lone).unwrap();
    std::fs::set_permissions(&lone, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = sandbox.command_for(&lone);
    cmd.current_dir("/");
    let finished = run_once(&mut cmd, Some(INITIALIZE));
    assert_eq!(finished.code(), Some(2), "{finished:?}");
    assert!(finished.stdout_lines.is_empty(), "{finished:?}");
}

#[test]
fn tools_command_prints_the_role_manifest() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.args(["tools", "--role", "reviews"]);
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    let manifest: Value = serde_json::from_str(&finished.stdout()).expect("manifest is JSON");
    assert_eq!(manifest["role"], "reviews");
    let tools = manifest["tools"].as_array().expect("tools array");
    let names: BTreeSet<String> = tools
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(names, expected_names(Role::Reviews));
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        let entry = care_core::catalog::lookup(name).unwrap();
        assert_eq!(
            tool["kind"],
            serde_json::to_value(entry.kind).unwrap(),
            "{name}"
        );
        let labels: Vec<&str> = tool["labels"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: labels"))
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert_eq!(labels, entry.labels(), "{name}");
        let annotations = tool["annotations"]
            .as_object()
            .unwrap_or_else(|| panic!("{name}: annotations"));
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(annotations[hint].is_boolean(), "{name}: {hint}");
        }
    }
}

#[test]
fn tools_command_without_role_exits_2() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.arg("tools");
    let finished = run_once(&mut cmd, None);
    assert_refused_start(&finished, "tools without a role");
}

#[test]
fn approvals_list_on_an_empty_ledger_prints_a_header() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.args(["approvals", "list"]);
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    assert_eq!(
        finished.stdout_lines.len(),
        1,
        "{:?}",
        finished.stdout_lines
    );
    let header: Vec<&str> = finished.stdout_lines[0].split_whitespace().collect();
    assert_eq!(header.first(), Some(&"ID"), "{header:?}");
    assert!(header.contains(&"STATUS"), "{header:?}");
    assert!(header.contains(&"ACTION"), "{header:?}");
    finished.assert_stderr_is_json_lines();
}

#[test]
fn approvals_show_of_a_missing_id_exits_2() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.args(["approvals", "show", "nope"]);
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(2), "{finished:?}");
    assert!(finished.stdout_lines.is_empty(), "{finished:?}");
    finished.assert_stderr_is_json_lines();
}

#[test]
fn approvals_list_refuses_a_bad_status() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.args(["approvals", "list", "--status", "sk-demo-bogus"]);
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(2), "{finished:?}");
    assert!(finished.stdout_lines.is_empty(), "{finished:?}");
    assert!(
        !finished.stderr.contains("sk-demo-bogus"),
        "{}",
        finished.stderr
    );
}

/// The ledger the operator commands open is the one `DATABASE_URL` names (the sandbox's).
#[test]
fn operator_commands_use_the_configured_ledger() {
    let sandbox = Sandbox::new();
    let finished = run_once(sandbox.command().args(["approvals", "list"]), None);
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    assert!(
        Path::new(&sandbox.db_path()).exists(),
        "the SQLite ledger was not created at DATABASE_URL"
    );
}

//! Each role's manifest (`care-mcp tools --role R`) is committed under `tests/snapshots/` and
//! compared byte for byte, so a change to a tool's schema, description or annotations is a
//! reviewed diff; and the manifest is what `tools/list` serves, so the snapshots show what
//! clients see. `CARE_UPDATE_SNAPSHOTS=1` rewrites the snapshots instead of comparing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use care_core::catalog::Role;
use common::{Sandbox, Session, run_once};
use serde_json::Value;

const UPDATE: &str =
    "CARE_UPDATE_SNAPSHOTS=1 cargo test -p care-mcp --all-features --test manifests";

fn snapshot_path(role: Role) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("tools-{role}.json"))
}

fn manifest_text(sandbox: &Sandbox, role: Role) -> String {
    let mut cmd = sandbox.command();
    cmd.args(["tools", "--role", role.as_str()]);
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(0), "{role}: {}", finished.stderr);
    finished.stdout()
}

/// The lines that differ, with three lines of context: the common head and tail are cut, the
/// rest shown as `-` (snapshot) and `+` (now), at most 60 lines of each.
fn diff(expected: &str, actual: &str) -> String {
    let old: Vec<&str> = expected.lines().collect();
    let new: Vec<&str> = actual.lines().collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let from = head.saturating_sub(3);
    let mut out = format!("@@ line {} @@\n", from + 1);
    for line in &old[from..head] {
        out += &format!("  {line}\n");
    }
    for line in old[head..old.len() - tail].iter().take(60) {
        out += &format!("- {line}\n");
    }
    for line in new[head..new.len() - tail].iter().take(60) {
        out += &format!("+ {line}\n");
    }
    for line in new[new.len() - tail..].iter().take(3) {
        out += &format!("  {line}\n");
    }
    out
}

#[test]
fn every_role_manifest_matches_its_snapshot() {
    let sandbox = Sandbox::new();
    let update = std::env::var("CARE_UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    for role in Role::ALL {
        let actual = manifest_text(&sandbox, role);
        let path = snapshot_path(role);
        if update {
            std::fs::write(&path, &actual).expect("write the snapshot");
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{} differs from `care-mcp tools --role {role}`:\n{}",
                path.display(),
                diff(&expected, &actual)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\nIf the change is intended, rewrite the snapshots with\n  {UPDATE}\nand commit them.",
        failures.join("\n")
    );
}

#[test]
fn the_diff_shows_the_changed_line_in_context() {
    let shown = diff("a\nb\nc\nd\ne\n", "a\nb\nC\nd\ne\n");
    assert_eq!(shown, "@@ line 1 @@\n  a\n  b\n- c\n+ C\n  d\n  e\n");
}

/// The manifest is `tools/list` plus the catalog row: the snapshots are what clients read.
#[test]
fn manifest_tools_are_what_tools_list_serves() {
    let sandbox = Sandbox::new();
    for role in Role::ALL {
        let manifest: Value = serde_json::from_str(&manifest_text(&sandbox, role)).unwrap();
        let mut from_manifest: Vec<Value> = manifest["tools"].as_array().unwrap().clone();
        for tool in &mut from_manifest {
            let tool = tool.as_object_mut().unwrap();
            for key in ["domain", "kind", "labels"] {
                assert!(tool.remove(key).is_some(), "{role}: no {key}");
            }
        }
        let mut session = Session::start(sandbox.serve_command(role.as_str()));
        let listed = session.list_tools();
        session.finish();
        assert_eq!(from_manifest, listed, "{role}");
    }
}

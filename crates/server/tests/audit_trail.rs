//! The audit trail for operators, through the real binary on both backends: `audit list`
//! filters, `audit show` explains a row, and `audit verify` passes an untouched trail and
//! names each edited, deleted, inserted or reordered row (a test per kind, each undone before
//! the next), exiting 1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use care_core::ledger::{AuditQuery, StoredAudit};
use common::{Finished, Sandbox, Session};
use serde_json::json;

const SALT: &str = "sk-demo-audit-trail-salt-0042";

struct Trail {
    sandbox: Sandbox,
    url: String,
    _db: Option<care_ledger::test_support::PgTestDb>,
}

impl Trail {
    fn new(backend: &str) -> Trail {
        let sandbox = Sandbox::new();
        let (url, db) = match backend {
            "sqlite" => (sandbox.database_url(), None),
            _ => {
                let (url, db) = common::block_on(care_ledger::test_support::fresh_postgres_db());
                (url, Some(db))
            }
        };
        Trail {
            sandbox,
            url,
            _db: db,
        }
    }

    fn command(&self) -> Command {
        let mut cmd = self.sandbox.command();
        cmd.env("DATABASE_URL", &self.url)
            .env("CARE_AUDIT_SALT", SALT);
        cmd
    }

    fn audit(&self, args: &[&str]) -> Finished {
        let mut cmd = self.command();
        cmd.arg("audit").args(args);
        common::run_once(&mut cmd, None)
    }

    /// `audit verify`: its exit code and its findings as (kind, row id) lines.
    fn verify(&self) -> (Option<i32>, String) {
        let finished = self.audit(&["verify"]);
        (finished.code(), finished.stdout())
    }

    fn sql(&self, statement: &str) {
        common::block_on(care_ledger::test_support::execute(&self.url, statement))
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }

    fn rows(&self) -> Vec<StoredAudit> {
        common::block_on(async {
            let ledger = care_ledger::connect(Some(&self.url), &self.sandbox.db_path())
                .await
                .unwrap();
            let rows = ledger
                .audit_rows(&AuditQuery {
                    oldest_first: true,
                    limit: 1000,
                    ..AuditQuery::default()
                })
                .await
                .unwrap();
            ledger.close().await;
            rows
        })
    }

    /// Two sessions (two processes, two chains) of a few calls each.
    fn make_calls(&self) {
        for role in ["reviews", "ops"] {
            let mut cmd = self.command();
            cmd.arg("--role").arg(role);
            let mut session = Session::start(cmd);
            session.call_ok("kpi_record", json!({"metric": "trail.m", "value": 1}));
            session.call_err("kpi_record", json!({"metric": "trail.m", "value": "x"}));
            session.call_ok("kpi_report", json!({"metric": "trail.m"}));
            assert!(
                session
                    .call("no_such_tool", json!({}))
                    .get("error")
                    .is_some()
            );
            session.call_ok("kpi_record", json!({"metric": "trail.n", "value": 2}));
            assert_eq!(session.finish().code(), Some(0));
        }
    }

    /// Runs `tamper`, checks verify names `kind` at the row `named`, runs `undo`, and checks
    /// the trail verifies again.
    fn expect_named(&self, tamper: &[String], kind: &str, named: &str, undo: &[String]) {
        for s in tamper {
            self.sql(s);
        }
        let (code, out) = self.verify();
        assert_eq!(code, Some(1), "{kind}: verify must fail:\n{out}");
        assert!(out.contains("TAMPERED"), "{out}");
        assert!(
            out.lines()
                .any(|l| l.starts_with(kind) && l.contains(named)),
            "{kind} of {named} not named:\n{out}"
        );
        for s in undo {
            self.sql(s);
        }
        let (code, out) = self.verify();
        assert_eq!(code, Some(0), "after undoing the {kind}:\n{out}");
    }
}

fn trail_case(backend: &str) {
    let trail = Trail::new(backend);
    trail.make_calls();
    let (code, out) = trail.verify();
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("10 rows in 2 chains checked"), "{out}");
    assert!(out.contains("intact"), "{out}");

    let rows = trail.rows();
    assert_eq!(rows.len(), 10);
    let chains: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|r| r.link.as_ref().unwrap().chain.as_str())
        .collect();
    assert_eq!(chains.len(), 2);

    // list: filters by tool, outcome and session; newest first.
    let listed = trail.audit(&["list", "--tool", "kpi_report"]);
    assert_eq!(listed.code(), Some(0), "{}", listed.stderr);
    assert_eq!(listed.stdout_lines.len(), 3, "{}", listed.stdout());
    assert!(
        listed.stdout_lines[1..]
            .iter()
            .all(|l| l.contains("kpi_report"))
    );
    let denied = trail.audit(&["list", "--outcome", "error", "--since", "1h"]);
    let denied_lines = &denied.stdout_lines[1..];
    assert_eq!(denied_lines.len(), 4, "{}", denied.stdout());
    assert!(
        denied_lines
            .iter()
            .any(|l| l.contains("INVALID_INPUT by input"))
    );
    assert!(
        denied_lines
            .iter()
            .any(|l| l.contains("UNKNOWN_TOOL by role_gate"))
    );
    let session = rows[0].record.session.clone();
    assert!(session.starts_with("s-"), "{session}");
    let one_session = trail.audit(&["list", "--session", &session]);
    assert_eq!(
        one_session.stdout_lines.len(),
        6,
        "{}",
        one_session.stdout()
    );
    let future = trail.audit(&["list", "--since", "2099-01-01T00:00:00Z"]);
    assert_eq!(future.stdout_lines.len(), 1);
    assert_eq!(
        trail.audit(&["list", "--since", "yesterday"]).code(),
        Some(2)
    );

    // show: the why of one row.
    let shown = trail.audit(&["show", &rows[0].id.to_string()]);
    let text = shown.stdout();
    for expected in [
        "tool:          kpi_record",
        "capability:    ledger-write",
        "decision:      allow",
        "rules passed:  role_gate, input",
        "denied by:     -",
        " #1\n",
    ] {
        assert!(text.contains(expected), "{expected:?} missing:\n{text}");
    }
    let shown = trail.audit(&["show", &rows[1].id.to_string()]);
    assert!(
        shown.stdout().contains("denied by:     input"),
        "{}",
        shown.stdout()
    );
    assert_ne!(trail.audit(&["show", "999999"]).code(), Some(0));

    // Each kind of tampering, named, then undone.
    let a = rows[0].id; // first chain
    let (b, c) = (rows[1].id, rows[2].id);
    let last_of_first = rows[4].id;
    assert_eq!(rows[4].record.session, session);

    trail.expect_named(
        &[format!(
            "UPDATE audit SET outcome = 'ok', error_code = NULL WHERE id = {b}"
        )],
        "edited",
        &format!("row {b} "),
        &[format!(
            "UPDATE audit SET outcome = 'error', error_code = 'INVALID_INPUT' WHERE id = {b}"
        )],
    );
    trail.expect_named(
        &[
            format!("CREATE TABLE saved AS SELECT * FROM audit WHERE id = {c}"),
            format!("DELETE FROM audit WHERE id = {c}"),
        ],
        "deleted",
        &format!("row {} ", rows[3].id),
        &[
            "INSERT INTO audit SELECT * FROM saved".into(),
            "DROP TABLE saved".into(),
        ],
    );
    trail.expect_named(
        &[
            format!("CREATE TABLE saved AS SELECT * FROM audit WHERE id = {last_of_first}"),
            format!("DELETE FROM audit WHERE id = {last_of_first}"),
        ],
        "deleted",
        &format!("after row {}", rows[3].id),
        &[
            "INSERT INTO audit SELECT * FROM saved".into(),
            "DROP TABLE saved".into(),
        ],
    );
    trail.expect_named(
        &[
            "INSERT INTO audit (id, at, role, client, tool, outcome, duration_us, args_digest) \
           VALUES (100000, 1, 'ops', 'stdio', 'restart_workload', 'ok', 5, 'feed')"
                .to_owned(),
        ],
        "inserted",
        "row 100000 ",
        &["DELETE FROM audit WHERE id = 100000".into()],
    );
    let swap = vec![
        format!("UPDATE audit SET id = -7 WHERE id = {a}"),
        format!("UPDATE audit SET id = {a} WHERE id = {b}"),
        format!("UPDATE audit SET id = {b} WHERE id = -7"),
    ];
    trail.expect_named(&swap, "reordered", &format!("row {a} "), &swap);
}

#[test]
fn audit_cli_explains_and_verifies_on_sqlite() {
    trail_case("sqlite");
}

#[test]
fn audit_cli_explains_and_verifies_on_postgres() {
    trail_case("postgres");
}

//! The external-write pipeline end to end in process, on both ledger backends, with a
//! test-only write tool that records every call it receives: dry run, approval states, the
//! edited body, outbound scan after approval, failed delivery, and the fail-closed audit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use care_core::approvals::{ApprovalPolicy, ApproverKey, DecisionRefused, RowPolicy};
use care_core::canonical::{self, HashEncoding};
use care_core::catalog::Role;
use care_core::config::Config;
use care_core::env::MapEnv;
use care_core::gate::{Gate, GateAnswer};
use care_core::ledger::{ApprovalStatus, Decision, Ledger, NewApproval, WriteOutcome};
use care_core::ledger_tools;
use care_core::pipeline::{ExternalWrite, WritePlanner};
use care_core::testkit::{Recorder, RecordingWrite, Sent};
use care_core::tool::{Registry, Services, ToolHandler};
use chrono::{Duration, Utc};
use serde_json::{Map, Value, json};

// Throwaway keys generated for these tests only.
const APPROVER_A: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const APPROVER_B: &str = "2222222222222222222222222222222222222222222222222222222222222222";
const SERVER: &str = "3333333333333333333333333333333333333333333333333333333333333333";
const STRANGER: &str = "4444444444444444444444444444444444444444444444444444444444444444";
const DB_PASSWORD: &str = "sk-demo-db-password-7731";

struct Harness {
    gate: Gate,
    ledger: Arc<dyn Ledger>,
    policy: ApprovalPolicy,
    recorder: Arc<Recorder>,
    url: String,
    _guards: Box<dyn std::any::Any>,
}

fn key(secret: &str) -> ApproverKey {
    care_nostr::settings::public_key_of_secret(secret).unwrap()
}

async fn harness(backend: &str, write_enabled: bool, approvers: &[&str]) -> Harness {
    let (url, guards): (String, Box<dyn std::any::Any>) = match backend {
        "sqlite" => {
            let (url, dir) = care_ledger::test_support::temp_sqlite();
            (url, Box::new(dir))
        }
        _ => {
            let (url, db) = care_ledger::test_support::fresh_postgres_db().await;
            (url, Box::new(db))
        }
    };
    let approver_list: Vec<String> = approvers.iter().map(|s| key(s).hex().to_owned()).collect();
    let mut env: HashMap<String, String> = HashMap::from([
        ("DATABASE_URL".into(), url.clone()),
        ("CARE_APPROVERS".into(), approver_list.join(",")),
        ("CARE_NOSTR_SECRET_KEY".into(), SERVER.to_owned()),
        (
            "CARE_AUDIT_SALT".into(),
            "sk-demo-audit-salt-0001".to_owned(),
        ),
        ("CARE_DB_PASSWORD".into(), DB_PASSWORD.to_owned()),
        ("CARE_CLIENT_ID".into(), "pipeline-test".to_owned()),
    ]);
    if write_enabled {
        env.insert("CARE_WRITE_ENABLED".into(), "1".to_owned());
    }
    let env = MapEnv(env);
    let config = Arc::new(Config::from_env(&env).unwrap());
    let nostr = care_nostr::NostrSettings::from_env(&env).unwrap();
    let ledger = care_ledger::connect(Some(&url), std::path::Path::new("/nonexistent"))
        .await
        .unwrap();
    let services = Arc::new(
        Services::new(config, Arc::clone(&ledger), b"sk-demo-audit-salt-0001")
            .with_policy(nostr.policy()),
    );
    let policy = services.policy.clone();
    let recorder = Arc::new(Recorder::default());
    let write = Arc::new(ExternalWrite::new(
        RecordingWrite(Arc::clone(&recorder)),
        Arc::clone(&services),
    ));
    let mut handlers: Vec<Arc<dyn ToolHandler>> =
        ledger_tools::all(&services, vec![write.clone() as Arc<dyn WritePlanner>]);
    handlers.push(write);
    let registry = Registry::new(Role::Reviews, handlers).unwrap();
    Harness {
        gate: Gate::new(registry, services),
        ledger,
        policy,
        recorder,
        url,
        _guards: guards,
    }
}

fn args(v: Value) -> Option<Map<String, Value>> {
    Some(v.as_object().unwrap().clone())
}

fn reply_args(body: &str) -> Value {
    json!({"review_id": "rev-123", "body": body, "locale": "en-US"})
}

impl Harness {
    async fn call(&self, tool: &str, arguments: Value) -> Result<Value, (String, Value)> {
        match self.gate.call(tool, args(arguments)).await {
            GateAnswer::UnknownTool => panic!("{tool} unknown"),
            GateAnswer::Result {
                envelope, is_error, ..
            } => {
                assert_eq!(envelope["ok"], json!(!is_error));
                if is_error {
                    Err((
                        envelope["error"]["code"].as_str().unwrap().to_owned(),
                        envelope["error"].clone(),
                    ))
                } else {
                    Ok(envelope["data"].clone())
                }
            }
        }
    }

    async fn request(&self, body: &str) -> String {
        let data = self
            .call(
                "approval_request",
                json!({"action": "asc_review_reply", "arguments": reply_args(body)}),
            )
            .await
            .unwrap();
        assert_eq!(data["status"], "pending");
        data["approval_id"].as_str().unwrap().to_owned()
    }

    async fn decide(
        &self,
        id: &str,
        secret: &str,
        decision: Decision,
    ) -> Result<ApprovalStatus, DecisionRefused> {
        let row = self
            .ledger
            .approval(id)
            .await
            .unwrap()
            .ok_or(DecisionRefused::NotFound)?;
        self.policy
            .decide(
                self.ledger.as_ref(),
                &row,
                &key(secret),
                decision,
                "{\"evidence\":\"test\"}",
            )
            .await
            .map(|row| row.status)
    }

    async fn approve(&self, id: &str, secret: &str) -> Result<ApprovalStatus, DecisionRefused> {
        self.decide(id, secret, Decision::Approve).await
    }

    /// The ledger's policy for rows stored here: this harness's approvers.
    fn row_policy(&self) -> RowPolicy {
        self.policy.for_new_rows()
    }

    async fn send(&self, body: &str, approval_id: &str) -> Result<Value, (String, Value)> {
        let mut a = reply_args(body);
        a["approval_id"] = json!(approval_id);
        self.call("asc_review_reply", a).await
    }

    fn sent(&self) -> Vec<Sent> {
        self.recorder.sent()
    }

    async fn status(&self, id: &str) -> ApprovalStatus {
        self.ledger.approval(id).await.unwrap().unwrap().status
    }
}

/// Runs one scenario on SQLite and on Postgres.
macro_rules! both_backends {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                ($body)("sqlite").await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                ($body)("postgres").await;
            }
        }
    };
}

both_backends!(
    dry_run_sends_nothing_and_consumes_nothing,
    |backend| async move {
        let h = harness(backend, false, &[APPROVER_A]).await;
        let id = h.request("Thanks for the review!").await;
        assert_eq!(
            h.approve(&id, APPROVER_A).await.unwrap(),
            ApprovalStatus::Approved
        );
        let data = h.send("Thanks for the review!", &id).await.unwrap();
        assert_eq!(data["dry_run"], true);
        // Agent-written text comes back fenced.
        assert_eq!(
            data["would_send"]["body"],
            "<user_content>Thanks for the review!</user_content>"
        );
        // No approval channel in process: the state is the ledger's, and says so.
        assert_eq!(
            data["approval"],
            json!({"id": id, "status": "approved", "matches": true, "confirmed_on_channel": false})
        );
        let expected_hash = canonical::payload_hash(
            "asc_review_reply",
            reply_args("Thanks for the review!").as_object().unwrap(),
        );
        assert_eq!(data["payload_hash"], expected_hash);
        // Dry run without approval id still runs every check.
        let data = h
            .call("asc_review_reply", reply_args("Other text"))
            .await
            .unwrap();
        assert_eq!(data["dry_run"], true);
        assert_eq!(data["approval"], Value::Null);
        assert!(h.sent().is_empty());
        assert_eq!(h.status(&id).await, ApprovalStatus::Approved);
    }
);

both_backends!(
    the_tools_own_switch_refuses_live_writes_while_dry_runs_preview,
    |backend| async move {
        // Writes off: the dry run asks the upstream to check the write, and shows its answer;
        // an approval request plans without asking.
        let h = harness(backend, false, &[APPROVER_A]).await;
        h.recorder.set_writes_allowed(false);
        let data = h
            .call("asc_review_reply", reply_args("Thanks!"))
            .await
            .unwrap();
        assert_eq!(data["dry_run"], true);
        assert_eq!(data["upstream_dry_run"], json!({"accepted": true}));
        assert_eq!(h.recorder.previews(), ["rev-123"]);
        h.request("Thanks!").await;
        assert_eq!(h.recorder.previews().len(), 1);
        assert!(h.sent().is_empty());

        // Writes on, the tool's own switch off: WRITE_DISABLED before the approval is looked
        // up or consumed, no intent on the audit trail, nothing sent.
        let h = harness(backend, true, &[APPROVER_A]).await;
        h.recorder.set_writes_allowed(false);
        let id = h.request("Thanks!").await;
        h.approve(&id, APPROVER_A).await.unwrap();
        assert_eq!(
            h.send("Thanks!", &id).await.unwrap_err().0,
            "WRITE_DISABLED"
        );
        assert_eq!(
            h.call("asc_review_reply", reply_args("Thanks!"))
                .await
                .unwrap_err()
                .0,
            "WRITE_DISABLED"
        );
        assert_eq!(h.status(&id).await, ApprovalStatus::Approved);
        assert!(h.sent().is_empty());
        h.gate.services().auditor.flush().await;
        let audit = h.ledger.recent_audit(50).await.unwrap();
        assert!(!audit.iter().any(|r| r.outcome == "intent"), "{audit:?}");
        assert_eq!(
            audit
                .iter()
                .filter(|r| r.error_code.as_deref() == Some("WRITE_DISABLED"))
                .count(),
            2
        );

        // Switched on, the same approval sends once; a live write never previews.
        h.recorder.set_writes_allowed(true);
        let data = h.send("Thanks!", &id).await.unwrap();
        assert_eq!(data["dry_run"], false);
        assert!(data.get("upstream_dry_run").is_none());
        assert_eq!(h.sent().len(), 1);
        assert!(h.recorder.previews().is_empty());
    }
);

both_backends!(
    approved_write_is_sent_once_with_the_approved_body,
    |backend| async move {
        let h = harness(backend, true, &[APPROVER_A]).await;
        let body = "감사합니다! \u{200d} We fixed it in 2.3.";
        let id = h.request(body).await;
        assert_eq!(h.send(body, &id).await.unwrap_err().0, "APPROVAL_REQUIRED");
        assert_eq!(
            h.call("asc_review_reply", reply_args(body))
                .await
                .unwrap_err()
                .0,
            "APPROVAL_REQUIRED"
        );
        h.approve(&id, APPROVER_A).await.unwrap();
        let data = h.send(body, &id).await.unwrap();
        assert_eq!(data["dry_run"], false);
        assert_eq!(data["approval"]["status"], "consumed");
        assert_eq!(
            h.sent(),
            vec![Sent {
                approval_id: id.clone(),
                review_id: "rev-123".into(),
                body: body.into()
            }]
        );
        // Replay: refused, nothing sent again.
        assert_eq!(h.send(body, &id).await.unwrap_err().0, "APPROVAL_CONSUMED");
        assert_eq!(h.sent().len(), 1);
        let row = h.ledger.approval(&id).await.unwrap().unwrap();
        assert_eq!(row.status, ApprovalStatus::Consumed);
        assert_eq!(row.outcome, Some(WriteOutcome::Sent));
        // The intent row written before the send pairs with the call's own audit row.
        h.gate.services().auditor.flush().await;
        let audit = h.ledger.recent_audit(50).await.unwrap();
        let writes: Vec<_> = audit
            .iter()
            .filter(|r| {
                r.tool == "asc_review_reply" && r.approval_id.as_deref() == Some(id.as_str())
            })
            .collect();
        let intent = writes.iter().find(|r| r.outcome == "intent").unwrap();
        let done = writes.iter().find(|r| r.outcome == "ok").unwrap();
        assert_eq!(intent.args_digest, done.args_digest);
        assert!(!format!("{audit:?}").contains("감사합니다"));
        // Why the write went: every rule passed (this recording tool has no scope or locale
        // of its own), and who approved it, when, until when.
        assert_eq!(intent.session, done.session);
        assert_eq!(
            done.rules.join(","),
            "role_gate,input,outbound_scan,write_switch,approval"
        );
        assert_eq!(
            (done.decision.as_str(), done.denied_by.as_deref()),
            ("allow", None)
        );
        assert_eq!(
            intent.rules.join(","),
            "role_gate,input,outbound_scan,write_switch"
        );
        let trail: serde_json::Value =
            serde_json::from_str(done.approval_trail.as_deref().unwrap()).unwrap();
        let decisions = trail["decisions"].as_array().unwrap();
        assert_eq!(decisions.len(), 1, "{trail}");
        assert_eq!(decisions[0]["approver"], key(APPROVER_A).hex());
        assert_eq!(decisions[0]["decision"], "approve");
        assert!(decisions[0]["at"].as_i64().unwrap() <= trail["expires_at"].as_i64().unwrap());
        assert_eq!(
            trail["expires_at"].as_i64().unwrap(),
            row.expires_at.timestamp_millis()
        );
        // The replay is refused by the approval rule, with the trail it was refused on.
        let replay = writes
            .iter()
            .find(|r| r.error_code.as_deref() == Some("APPROVAL_CONSUMED"))
            .unwrap();
        assert_eq!(
            (replay.decision.as_str(), replay.denied_by.as_deref()),
            ("deny", Some("approval"))
        );
        assert!(replay.approval_trail.is_some());
    }
);

both_backends!(
    edited_body_after_approval_is_a_mismatch,
    |backend| async move {
        let h = harness(backend, true, &[APPROVER_A]).await;
        let id = h.request("We are sorry, a fix ships Monday.").await;
        h.approve(&id, APPROVER_A).await.unwrap();
        for edited in [
            "We are sorry, a fix ships Monday!",
            "We are sorry, a fix ships Monday. ",
            "Visit evil.example for a refund.",
        ] {
            assert_eq!(
                h.send(edited, &id).await.unwrap_err().0,
                "APPROVAL_MISMATCH",
                "{edited}"
            );
        }
        // Another target with the same body is a mismatch too.
        let other = json!({"review_id": "rev-999", "body": "We are sorry, a fix ships Monday.", "locale": "en-US", "approval_id": id});
        assert_eq!(
            h.call("asc_review_reply", other).await.unwrap_err().0,
            "APPROVAL_MISMATCH"
        );
        assert!(h.sent().is_empty());
        assert_eq!(h.status(&id).await, ApprovalStatus::Approved);
        // The approved text still goes through afterwards.
        assert!(
            h.send("We are sorry, a fix ships Monday.", &id)
                .await
                .is_ok()
        );
    }
);

both_backends!(rejection_expiry_and_other_action, |backend| async move {
    let h = harness(backend, true, &[APPROVER_A, APPROVER_B]).await;
    // Approved by A, then rejected by B before use: the rejection wins.
    let id = h.request("Body one").await;
    h.approve(&id, APPROVER_A).await.unwrap();
    h.decide(&id, APPROVER_B, Decision::Reject).await.unwrap();
    assert_eq!(
        h.send("Body one", &id).await.unwrap_err().0,
        "APPROVAL_REJECTED"
    );

    // Expired: a row that runs out a moment after approval.
    let arguments = reply_args("Body two");
    let now = h.ledger.clock().await.unwrap();
    let expiring = NewApproval::for_arguments(
        "apr_expiring_test",
        "asc_review_reply",
        arguments.as_object().unwrap(),
        "reviews",
        (now, now + Duration::milliseconds(400)),
        h.row_policy(),
    );
    h.ledger.create_approval(&expiring).await.unwrap();
    h.approve("apr_expiring_test", APPROVER_A).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(
        h.send("Body two", "apr_expiring_test").await.unwrap_err().0,
        "APPROVAL_EXPIRED"
    );
    assert_eq!(h.status("apr_expiring_test").await, ApprovalStatus::Expired);

    // An approval for another action never fits this one, even with the same arguments.
    let arguments = reply_args("Body three");
    let mut other = expiring.clone();
    other.id = "apr_other_action".into();
    other.action = "mail_send".into();
    other.payload_hash = canonical::payload_hash("mail_send", arguments.as_object().unwrap());
    other.expires_at = h.ledger.clock().await.unwrap() + Duration::hours(1);
    h.ledger.create_approval(&other).await.unwrap();
    h.approve("apr_other_action", APPROVER_A).await.unwrap();
    assert_eq!(
        h.send("Body three", "apr_other_action")
            .await
            .unwrap_err()
            .0,
        "APPROVAL_MISMATCH"
    );
    assert_eq!(
        h.send("Body three", "apr_does_not_exist")
            .await
            .unwrap_err()
            .0,
        "NOT_FOUND"
    );
    assert!(h.sent().is_empty());
});

both_backends!(server_key_and_strangers_never_count, |backend| async move {
    // The server's own key is listed as an approver too: it still must not count.
    let h = harness(backend, true, &[APPROVER_A, SERVER]).await;
    let id = h.request("Body").await;
    assert!(matches!(
        h.approve(&id, SERVER).await,
        Err(DecisionRefused::ServerKey)
    ));
    assert!(matches!(
        h.approve(&id, STRANGER).await,
        Err(DecisionRefused::NotAnApprover)
    ));
    assert_eq!(h.status(&id).await, ApprovalStatus::Pending);
    assert_eq!(
        h.send("Body", &id).await.unwrap_err().0,
        "APPROVAL_REQUIRED"
    );
    assert!(h.ledger.decisions(&id).await.unwrap().is_empty());
    assert!(h.sent().is_empty());
});

both_backends!(
    secrets_are_blocked_even_when_approved,
    |backend| async move {
        let h = harness(backend, true, &[APPROVER_A]).await;
        let token = format!("{}{}", "ghp_", "x".repeat(36));
        let leaking = [
            format!("Here is our key {token}"),
            format!("db: {DB_PASSWORD}"),
        ];
        for body in &leaking {
            // approval_request runs the same scan: nothing to approve.
            let err = h
                .call(
                    "approval_request",
                    json!({"action": "asc_review_reply", "arguments": reply_args(body)}),
                )
                .await
                .unwrap_err();
            assert_eq!(err.0, "OUTBOUND_BLOCKED");
            // A row approved behind the tool's back (e.g. written to the database directly).
            let arguments = reply_args(body);
            let now = h.ledger.clock().await.unwrap();
            let id = format!("apr_leak_{}", body.len());
            h.ledger
                .create_approval(&NewApproval::for_arguments(
                    &id,
                    "asc_review_reply",
                    arguments.as_object().unwrap(),
                    "reviews",
                    (now, now + Duration::hours(1)),
                    h.row_policy(),
                ))
                .await
                .unwrap();
            h.approve(&id, APPROVER_A).await.unwrap();
            assert_eq!(h.send(body, &id).await.unwrap_err().0, "OUTBOUND_BLOCKED");
            assert_eq!(
                h.status(&id).await,
                ApprovalStatus::Approved,
                "a blocked write consumes nothing"
            );
        }
        assert!(h.sent().is_empty());
    }
);

both_backends!(failed_delivery_never_sends_twice, |backend| async move {
    let h = harness(backend, true, &[APPROVER_A]).await;
    let id = h.request("Body").await;
    h.approve(&id, APPROVER_A).await.unwrap();
    h.recorder.fail_next();
    let (code, error) = h.send("Body", &id).await.unwrap_err();
    assert_eq!(code, "WRITE_FAILED");
    assert_eq!(error["cause"], "UPSTREAM_UNAVAILABLE");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("request a new one")
    );
    assert_eq!(
        h.send("Body", &id).await.unwrap_err().0,
        "APPROVAL_CONSUMED"
    );
    assert_eq!(h.sent().len(), 1, "exactly one delivery attempt");
    let row = h.ledger.approval(&id).await.unwrap().unwrap();
    assert_eq!(
        row.outcome,
        Some(WriteOutcome::Failed {
            code: "UPSTREAM_UNAVAILABLE".into()
        })
    );
});

both_backends!(
    approval_request_checks_with_the_write_tools_rules,
    |backend| async move {
        let h = harness(backend, true, &[APPROVER_A]).await;
        let cases = [
            (
                json!({"action": "asc_review_reply", "arguments": {"review_id": "rev-1", "body": "", "locale": "en"}}),
                "arguments.body",
            ),
            (
                json!({"action": "asc_review_reply", "arguments": {"review_id": "rev-1", "body": "x".repeat(20_001), "locale": "en"}}),
                "arguments.body",
            ),
            (
                json!({"action": "asc_review_reply", "arguments": {"review_id": "rev-1", "body": "hi", "locale": "en", "approval_id": "apr_x"}}),
                "arguments",
            ),
            (json!({"action": "mail_send", "arguments": {}}), "action"),
            (
                json!({"action": "asc_review_reply", "arguments": reply_args("hi"), "ttl_minutes": 0}),
                "ttl_minutes",
            ),
            (
                json!({"action": "asc_review_reply", "arguments": reply_args("hi"), "ttl_minutes": 10_081}),
                "ttl_minutes",
            ),
        ];
        for (arguments, field) in cases {
            let (code, error) = h.call("approval_request", arguments).await.unwrap_err();
            assert_eq!(
                (code.as_str(), error["field"].as_str()),
                ("INVALID_INPUT", Some(field))
            );
        }
        let max = h
        .call("approval_request", json!({"action": "asc_review_reply", "arguments": reply_args("hi"), "ttl_minutes": 10_080}))
        .await
        .unwrap();
        let expires =
            chrono::DateTime::parse_from_rfc3339(max["expires_at"].as_str().unwrap()).unwrap();
        let days = (expires.with_timezone(&Utc) - Utc::now()).num_hours();
        assert!((167..=168).contains(&days), "{days}");
        assert_eq!(h.ledger.list_approvals(None, 100).await.unwrap().len(), 1);
    }
);

both_backends!(no_approvers_means_no_row, |backend| async move {
    let h = harness(backend, true, &[]).await;
    let (code, _) = h
        .call(
            "approval_request",
            json!({"action": "asc_review_reply", "arguments": reply_args("hi")}),
        )
        .await
        .unwrap_err();
    assert_eq!(code, "APPROVAL_REQUIRED");
    assert!(h.ledger.list_approvals(None, 100).await.unwrap().is_empty());
});

/// An external write fails closed: with the audit table gone, nothing is consumed or sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_is_refused_when_its_audit_row_cannot_be_written() {
    let h = harness("sqlite", true, &[APPROVER_A]).await;
    let id = h.request("Body").await;
    h.approve(&id, APPROVER_A).await.unwrap();
    let path = h.url.trim_start_matches("sqlite://");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{path}"))
        .await
        .unwrap();
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%audit%'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(!tables.is_empty(), "audit table not found");
    for (table,) in tables {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE \"{table}\"")))
            .execute(&pool)
            .await
            .unwrap();
    }
    pool.close().await;
    assert_eq!(
        h.send("Body", &id).await.unwrap_err().0,
        "LEDGER_UNAVAILABLE"
    );
    assert!(h.sent().is_empty());
    assert_eq!(h.status(&id).await, ApprovalStatus::Approved);
}

both_backends!(
    an_approval_requested_before_rfc_8785_still_verifies,
    |backend| async move {
        let h = harness(backend, true, &[APPROVER_A]).await;
        // A form feed: the old encoding wrote it as \u000c, RFC 8785 writes \f.
        let body = "Thanks!\u{c}See you in 4.2.";
        let id = h.request(body).await;
        let arguments = reply_args(body);
        let legacy = canonical::payload_hash_with(
            HashEncoding::LegacyV1,
            "asc_review_reply",
            arguments.as_object().unwrap(),
        );
        assert_ne!(
            legacy,
            canonical::payload_hash("asc_review_reply", arguments.as_object().unwrap())
        );
        // The row as the previous release stored it: old encoding, no policy, no facts.
        let changed = care_ledger::test_support::execute(
            &h.url,
            &format!(
                "UPDATE approvals SET hash_encoding = 'legacy-v1', payload_hash = '{legacy}', \
                 approvers_json = NULL, threshold = NULL, checked_facts_json = NULL \
                 WHERE id = '{id}'"
            ),
        )
        .await
        .unwrap();
        assert_eq!(changed, 1);
        h.approve(&id, APPROVER_A).await.unwrap();
        // An edit is still a mismatch under the old encoding...
        assert_eq!(
            h.send("Thanks!\u{c}See you in 4.3.", &id)
                .await
                .unwrap_err()
                .0,
            "APPROVAL_MISMATCH"
        );
        // ...and the approved arguments go out.
        let data = h.send(body, &id).await.unwrap();
        assert_eq!(data["approval"]["status"], "consumed");
        assert_eq!(data["payload_hash"], legacy.as_str());
        assert_eq!(h.sent().len(), 1);
    }
);

/// A dry run names another role's approval `not_found`, as `approval_status` does: it never
/// tells this role that the id exists, nor its state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_does_not_see_another_roles_approval() {
    let h = harness("sqlite", false, &[APPROVER_A]).await;
    let arguments = reply_args("Body");
    let now = h.ledger.clock().await.unwrap();
    let mut theirs = NewApproval::for_arguments(
        "apr_of_another_role",
        "asc_review_reply",
        arguments.as_object().unwrap(),
        "community",
        (now, now + Duration::hours(1)),
        h.row_policy(),
    );
    theirs.requested_by_client = "other".into();
    h.ledger.create_approval(&theirs).await.unwrap();
    h.approve("apr_of_another_role", APPROVER_A).await.unwrap();
    let data = h.send("Body", "apr_of_another_role").await.unwrap();
    assert_eq!(
        data["approval"],
        json!({"id": "apr_of_another_role", "status": "not_found", "matches": false})
    );
}

/// A status read from another role's point of view does not find the row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_status_is_scoped_to_the_requesting_role() {
    let h = harness("sqlite", true, &[APPROVER_A]).await;
    let id = h.request("Body").await;
    let data = h
        .call("approval_status", json!({"approval_id": id}))
        .await
        .unwrap();
    assert_eq!(data["status"], "pending");
    h.ledger
        .create_approval(&NewApproval::for_arguments(
            "apr_of_mail",
            "mail_send",
            &Map::new(),
            "mail",
            (Utc::now(), Utc::now() + Duration::hours(1)),
            h.row_policy(),
        ))
        .await
        .unwrap();
    assert_eq!(
        h.call("approval_status", json!({"approval_id": "apr_of_mail"}))
            .await
            .unwrap_err()
            .0,
        "NOT_FOUND"
    );
}

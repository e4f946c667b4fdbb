//! Stopping without losing an outcome: when a pod is stopped (SIGTERM) or the agent closes the
//! session (stdin EOF) while an approved write is on its way to App Store Connect, the write
//! finishes, its outcome lands on the approval row and its audit rows in the ledger, and only
//! then does the process exit. New calls during the stop are refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use care_core::ledger::{ApprovalStatus, Decision, WriteOutcome};
use care_fakes::asc::FakeAsc;
use care_nostr::reaction::build_reaction;
use care_nostr::{EventId, Keys};
use common::{Sandbox, Session};
use serde_json::{Value, json};

const BODY: &str = "Thank you! The export fix is in version 3.2, available today.";
/// How long the fake holds its answer to the reply: the stop arrives meanwhile.
const SLOW_ANSWER: Duration = Duration::from_secs(2);

fn reply(approval_id: Option<&str>) -> Value {
    let mut args = json!({"review_id": "rev-en-002", "body": BODY, "locale": "en-GB"});
    if let Some(id) = approval_id {
        args["approval_id"] = json!(id);
    }
    args
}

struct Running {
    sandbox: Sandbox,
    session: Session,
    relay: care_nostr::relay::InProcessRelay,
    approval_id: String,
}

/// A reviews session with writes enabled and one approved reply, the fake set to answer the
/// reply slowly, and the reply's `tools/call` sent; returns once the fake has received it.
async fn write_in_flight() -> (Running, u64) {
    let relay = care_nostr::relay::InProcessRelay::start(None)
        .await
        .unwrap();
    let approver = Keys::generate();
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.serve_command("reviews");
    cmd.env("CARE_NOSTR_RELAYS", relay.url())
        .env("CARE_APPROVERS", approver.public_key().to_hex())
        .env("CARE_WRITE_ENABLED", "1");
    let mut session = Session::start(cmd);
    let data = session.call_ok(
        "approval_request",
        json!({"action": "asc_review_reply", "arguments": reply(None)}),
    );
    let approval_id = data["approval_id"].as_str().unwrap().to_owned();
    let card = EventId::from_hex(data["card_event_id"].as_str().unwrap()).unwrap();
    let server = Keys::parse(&sandbox.nostr_secret).unwrap().public_key();
    let reaction = build_reaction(
        &approver,
        card,
        Some(server),
        Some("care-tests"),
        Decision::Approve,
    )
    .unwrap();
    care_nostr::publish::publish(&[relay.url().to_owned()], &reaction, Duration::from_secs(5))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while session.call_ok("approval_status", json!({"approval_id": approval_id}))["status"]
        != "approved"
    {
        assert!(Instant::now() < deadline, "never approved");
        std::thread::sleep(Duration::from_millis(50));
    }
    sandbox
        .fake::<FakeAsc>()
        .delay("POST", "/v1/customerReviewResponses", SLOW_ANSWER);
    let id = session.send_request(
        "tools/call",
        json!({"name": "asc_review_reply", "arguments": reply(Some(&approval_id))}),
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while !sandbox
        .fake::<FakeAsc>()
        .requests()
        .iter()
        .any(|r| r.method == "POST")
    {
        assert!(
            Instant::now() < deadline,
            "the reply never reached the fake"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    (
        Running {
            sandbox,
            session,
            relay,
            approval_id,
        },
        id,
    )
}

/// The outcome and the audit rows of the write, as the ledger holds them after the exit.
async fn assert_recorded(sandbox: &Sandbox, approval_id: &str) {
    let ledger = common::open_ledger(sandbox).await;
    let row = ledger.approval(approval_id).await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);
    assert_eq!(
        row.outcome,
        Some(WriteOutcome::Sent),
        "the outcome is recorded"
    );
    let audit = ledger.recent_audit(100).await.unwrap();
    let of_write: Vec<&str> = audit
        .iter()
        .filter(|r| r.tool == "asc_review_reply")
        .map(|r| r.outcome.as_str())
        .collect();
    assert!(of_write.contains(&"intent"), "{of_write:?}");
    assert!(
        of_write.contains(&"ok"),
        "the write's own audit row: {of_write:?}"
    );
    assert_eq!(sandbox.fake::<FakeAsc>().sent_replies().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_write_in_flight_finish_and_refuses_new_calls() {
    let (mut run, write) = write_in_flight().await;
    let started = Instant::now();
    run.session.terminate();
    // A new call during the stop is refused, audited, and answered at once.
    std::thread::sleep(Duration::from_millis(200));
    let late = run
        .session
        .call("kpi_record", json!({"metric": "late", "value": 1}));
    let envelope = common::check_result_shape(&late["result"]);
    assert_eq!(envelope["error"]["code"], "SERVER_STOPPING", "{late}");
    // The write's answer still reaches the client.
    let answer = run.session.response(write);
    let envelope = common::check_result_shape(&answer["result"]);
    assert_eq!(envelope["ok"], true, "{answer}");
    assert_eq!(envelope["data"]["approval"]["status"], "consumed");
    let finished = run.session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    assert!(started.elapsed() >= SLOW_ANSWER - Duration::from_millis(300));
    finished.assert_stdout_is_protocol();
    assert_recorded(&run.sandbox, &run.approval_id).await;
    run.relay.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_lets_a_write_in_flight_finish_before_the_exit() {
    let (mut run, _write) = write_in_flight().await;
    run.session.close_stdin();
    let finished = run.session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    finished.assert_stdout_is_protocol();
    assert_recorded(&run.sandbox, &run.approval_id).await;
    run.relay.shutdown();
}

/// A pod stopped before the agent's `initialize` (a slow client, a rollout racing a start)
/// still exits in order with status 0: the handler is in place from the moment the process
/// says it serves, not only once a session has started.
#[test]
fn sigterm_before_the_handshake_stops_in_order() {
    let sandbox = Sandbox::new();
    let session = Session::spawn(sandbox.serve_command("lead"));
    let deadline = Instant::now() + common::TIMEOUT;
    while !common::catches_sigterm(session.pid()) {
        assert!(
            Instant::now() < deadline,
            "no SIGTERM handler before the handshake"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    session.terminate();
    let finished = session.exited();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    assert!(
        finished.stdout_lines.is_empty(),
        "{:?}",
        finished.stdout_lines
    );
    assert!(
        finished
            .stderr
            .contains("stop requested before the session started"),
        "{}",
        finished.stderr
    );
}

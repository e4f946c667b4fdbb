//! `care-mcp sandbox --demo`: a scripted walk-through as a real MCP client over stdio. Every
//! step states what it expects; the demo exits 0 only if every step did what it should.

mod cluster;
mod forum;
mod mail;

use std::time::Duration;

use care_core::catalog::{self, Role};
use care_core::display::escape_line;
use care_fakes::asc::{DEMO_APP_ID, FakeAsc};
use serde_json::{Value, json};

use super::client::RoleClientSession;
use super::world::SandboxWorld;
use crate::startup::StartError;

/// The demo's reply: plain English, so the locale gate accepts it for `en-US`.
const REPLY_BODY: &str = "Thank you for the kind words! We are glad the app keeps your mom's appointments in one place. Dark mode is planned for the next release, and we will let you know here when it ships.";

struct Steps<'a> {
    passed: u32,
    failed: u32,
    out: String,
    /// Where the walk-through is shown, step by step (the command's stdout).
    sink: &'a mut (dyn std::io::Write + Send),
}

impl Steps<'_> {
    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            self.passed += 1;
            self.out.push_str(&format!("  ok    {what}\n"));
        } else {
            self.failed += 1;
            self.out.push_str(&format!("  FAIL  {what}\n"));
        }
        self.flush();
    }

    fn note(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
        self.flush();
    }

    fn flush(&mut self) {
        let _ = self.sink.write_all(self.out.as_bytes());
        let _ = self.sink.flush();
        self.out.clear();
    }
}

fn code(envelope: &Value) -> &str {
    envelope["error"]["code"].as_str().unwrap_or("")
}

/// Runs the approvals CLI as an approver would.
async fn decide(world: &SandboxWorld, verb: &str, approval_id: &str) -> bool {
    let mut cmd = world.command();
    cmd.args(["approvals", verb, approval_id, "--key-file"])
        .arg(&world.approver_key_file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    matches!(cmd.status().await, Ok(s) if s.success())
}

/// Polls `approval_status` until it leaves `pending` (the relay round trip is ~100 ms).
async fn wait_status(session: &RoleClientSession, approval_id: &str) -> Result<String, StartError> {
    for _ in 0..100 {
        let env = session
            .call("approval_status", json!({"approval_id": approval_id}))
            .await?;
        let status = env["data"]["status"].as_str().unwrap_or("").to_owned();
        if status != "pending" {
            return Ok(status);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok("pending".into())
}

pub async fn run(
    world: &SandboxWorld,
    sink: &mut (dyn std::io::Write + Send),
) -> Result<bool, StartError> {
    // The story is about an App Store review; the other fakes only serve step 1's roles.
    let asc: &FakeAsc = world.upstream().ok_or_else(|| {
        StartError("sandbox demo: the App Store Connect fake is not running".into())
    })?;
    let mut steps = Steps {
        passed: 0,
        failed: 0,
        out: String::new(),
        sink,
    };
    steps.note(&format!(
        "care-mcp sandbox demo in {}\n",
        world.dir.display()
    ));

    steps.note("1. Each role sees only its own tools");
    for role in Role::ALL {
        let session = RoleClientSession::start(world.command(), role.as_str()).await?;
        let names = session.tool_names().await?;
        let foreign: Vec<&String> = names
            .iter()
            .filter(|n| !catalog::lookup(n).is_some_and(|e| e.held_by(role)))
            .collect();
        let column = catalog::tools_of(role).count();
        steps.check(
            !names.is_empty() && foreign.is_empty(),
            &format!(
                "{role}: {} tools listed (of {column} in its catalog column), none outside it",
                names.len()
            ),
        );
        session.close().await;
    }

    let reviews = RoleClientSession::start(world.command(), "reviews").await?;
    steps.note(
        "\n2. The reviews agent reads an unanswered review (third-party text comes back fenced)",
    );
    let unanswered = reviews
        .call(
            "asc_reviews_unanswered",
            json!({"app_id": DEMO_APP_ID, "older_than_hours": 1}),
        )
        .await?;
    let listed = unanswered["data"]["reviews"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    steps.check(
        unanswered["ok"] == true && !listed.is_empty(),
        &format!("{} unanswered reviews listed", listed.len()),
    );
    let review = reviews
        .call("asc_review_get", json!({"review_id": "rev-en-001"}))
        .await?;
    let body = review["data"]["review"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    steps.check(
        body.starts_with("<user_content>") && body.ends_with("</user_content>"),
        &format!(
            "review rev-en-001 body is fenced: {}",
            body.chars().take(90).collect::<String>()
        ),
    );
    let hostile = reviews
        .call("asc_review_get", json!({"review_id": "rev-hostile-001"}))
        .await?;
    let text = hostile["data"]["review"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let inner = text
        .strip_prefix("<user_content>")
        .and_then(|t| t.strip_suffix("</user_content>"))
        .unwrap_or("<");
    steps.check(
        hostile["ok"] == true && !inner.contains(['<', '>', '\u{1b}', '\u{202e}']),
        &format!(
            "a hostile review comes back neutral: {}",
            text.chars().take(110).collect::<String>()
        ),
    );

    steps.note("\n3. An approved reply goes out exactly once");
    let arguments = json!({"review_id": "rev-en-001", "body": REPLY_BODY, "locale": "en-US"});
    let dry = reviews.call("asc_review_reply", arguments.clone()).await?;
    steps.check(
        code(&dry) == "APPROVAL_REQUIRED",
        "without an approval the reply is refused (APPROVAL_REQUIRED)",
    );
    let request = reviews
        .call(
            "approval_request",
            json!({"action": "asc_review_reply", "arguments": arguments, "reason": "sandbox demo"}),
        )
        .await?;
    let approval_id = request["data"]["approval_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    steps.check(
        request["data"]["status"] == "pending" && request["data"]["card_event_id"].is_string(),
        &format!("approval {approval_id} pending; its card is on the relay"),
    );
    steps.check(
        decide(world, "approve", &approval_id).await,
        "the sandbox approver reacts + to the card (care-mcp approvals approve)",
    );
    let status = wait_status(&reviews, &approval_id).await?;
    steps.check(
        status == "approved",
        &format!("approval_status reads {status}"),
    );
    let mut call = arguments.clone();
    call["approval_id"] = json!(approval_id);
    let sent = reviews.call("asc_review_reply", call.clone()).await?;
    steps.check(
        sent["ok"] == true && sent["data"]["dry_run"] == false,
        "the reply is sent",
    );
    let received = asc.sent_replies();
    steps.check(
        received.len() == 1
            && received[0].body == REPLY_BODY
            && received[0].review_id == "rev-en-001",
        "the App Store Connect fake received exactly the approved body, once",
    );
    for reply in &received {
        steps.note(&format!(
            "        received for {}: {}",
            reply.review_id,
            escape_line(&reply.body).text
        ));
    }
    let replay = reviews.call("asc_review_reply", call).await?;
    steps.check(
        code(&replay) == "APPROVAL_CONSUMED",
        "replaying the approval is refused (APPROVAL_CONSUMED)",
    );
    let mut edited = arguments.clone();
    edited["body"] = json!(format!("{REPLY_BODY} P.S. Use code FREE100."));
    edited["approval_id"] = json!(approval_id);
    let edited = reviews.call("asc_review_reply", edited).await?;
    steps.check(
        matches!(code(&edited), "APPROVAL_MISMATCH" | "APPROVAL_CONSUMED"),
        &format!("an edited body does not ride on it ({})", code(&edited)),
    );

    steps.note("\n4. A rejected request never goes out");
    let second = json!({"review_id": "rev-en-002", "body": "We are sorry about your notes. Please write to us from the Help screen so we can restore them.", "locale": "en-US"});
    let request = reviews
        .call(
            "approval_request",
            json!({"action": "asc_review_reply", "arguments": second}),
        )
        .await?;
    let rejected_id = request["data"]["approval_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    steps.check(
        request["ok"] == true,
        &format!("approval {rejected_id} pending"),
    );
    steps.check(
        decide(world, "reject", &rejected_id).await,
        "the approver reacts - (care-mcp approvals reject)",
    );
    let status = wait_status(&reviews, &rejected_id).await?;
    steps.check(
        status == "rejected",
        &format!("approval_status reads {status}"),
    );
    let mut call = second.clone();
    call["approval_id"] = json!(rejected_id);
    let refused = reviews.call("asc_review_reply", call).await?;
    steps.check(
        code(&refused) == "APPROVAL_REJECTED",
        "the reply is refused (APPROVAL_REJECTED)",
    );
    steps.check(
        asc.sent_replies().len() == 1,
        "nothing more reached the App Store Connect fake",
    );
    reviews.close().await;

    forum::run(world, &mut steps, 5).await?;
    mail::run(world, &mut steps, 6).await?;
    cluster::run(world, &mut steps, 7).await?;

    steps.note("\n8. The evidence re-verifies offline");
    let mut verify = world.command();
    verify
        .args(["approvals", "verify", &approval_id])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    steps.check(
        matches!(verify.status().await, Ok(s) if s.success()),
        "care-mcp approvals verify: the signed reaction checks out",
    );

    steps.note("\n9. The ledger and the audit trail");
    let ledger = care_ledger::connect(
        world.env.get("DATABASE_URL").map(String::as_str),
        &world.dir.join("ledger.db"),
    )
    .await
    .map_err(|e| StartError(e.to_string()))?;
    let rows = ledger
        .list_approvals(None, 10)
        .await
        .map_err(|e| StartError(format!("ledger: {e}")))?;
    for row in &rows {
        steps.note(&format!(
            "  approval {}  {:<9} {}  outcome {}",
            row.id,
            row.status.as_str(),
            row.action,
            row.outcome
                .as_ref()
                .map_or_else(|| "-".to_owned(), ToString::to_string)
        ));
    }
    let audit = ledger
        .recent_audit(12)
        .await
        .map_err(|e| StartError(format!("ledger: {e}")))?;
    for row in audit.iter().rev() {
        steps.note(&format!(
            "  audit {}  {:<8} {:<24} {:<8} {:<18} digest {}…",
            row.at.format("%H:%M:%S%.3f"),
            row.role,
            row.tool,
            row.outcome,
            row.error_code.as_deref().unwrap_or("-"),
            &row.args_digest[..12.min(row.args_digest.len())],
        ));
    }
    // Every row of the walk-through, not only the ones shown (later steps push the reply's
    // rows out of the last twelve).
    let leaked = ledger
        .recent_audit(1_000)
        .await
        .map_err(|e| StartError(format!("ledger: {e}")))?
        .iter()
        .any(|r| {
            let row = format!("{r:?}");
            row.contains("Dark mode is planned")
                || row.contains("restores the reminders")
                || row.contains("Version 3.2.1")
        });
    steps.check(
        !audit.is_empty() && !leaked,
        "audit rows carry digests, never the reply text",
    );

    steps.note(&format!(
        "\n{} passed, {} failed",
        steps.passed, steps.failed
    ));
    Ok(steps.failed == 0)
}

//! The demo's mail step: the mail agent lists the support inbox, reads a ticket (and a hostile
//! one, fenced), asks for an approval, is approved, replies once; the reply is in the fake's
//! Sent mailbox, in the customer's inbox, and in `care-mcp sandbox show-sent`; the replay is
//! refused.

use std::time::Duration;

use care_core::display::escape_line;
use care_fakes::mail::{DEMO_TICKET_ID, FakeMail, HOSTILE_TICKET_ID};
use serde_json::json;

use super::{Steps, code, decide, wait_status};
use crate::sandbox::client::RoleClientSession;
use crate::sandbox::record_sent;
use crate::sandbox::world::SandboxWorld;
use crate::startup::StartError;

/// The demo's reply: plain English, so the locale gate accepts it for `en-US`.
const MAIL_REPLY: &str = "Hello Jordan, thank you for writing. Version 3.2.1, out today, restores the medication reminders after the update. Please update the app and let us know if they still stay silent.";

pub(super) async fn run(
    world: &SandboxWorld,
    steps: &mut Steps<'_>,
    number: u32,
) -> Result<(), StartError> {
    let fake: &FakeMail = world
        .upstream()
        .ok_or_else(|| StartError("sandbox demo: the mail fake is not running".into()))?;
    steps.note(&format!(
        "\n{number}. The mail agent answers a support e-mail, once"
    ));
    let mail = RoleClientSession::start(world.command(), "mail").await?;
    let inbox = mail.call("mail_list", json!({"limit": 10})).await?;
    let listed = inbox["data"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    steps.check(
        inbox["ok"] == true && !listed.is_empty(),
        &format!(
            "{} messages listed, newest first (metadata only)",
            listed.len()
        ),
    );
    for m in listed.iter().take(3) {
        steps.note(&format!(
            "        {}",
            escape_line(m["subject"].as_str().unwrap_or("-")).text
        ));
    }
    let ticket = mail
        .call("mail_read", json!({"message_id": DEMO_TICKET_ID}))
        .await?;
    let body = ticket["data"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    steps.check(
        body.starts_with("<user_content>") && body.contains("medication reminders"),
        &format!(
            "ticket {DEMO_TICKET_ID} read, fenced: {}",
            escape_line(&body.chars().take(80).collect::<String>()).text
        ),
    );
    let hostile = mail
        .call("mail_read", json!({"message_id": HOSTILE_TICKET_ID}))
        .await?;
    let subject = hostile["data"]["message"]["subject"]
        .as_str()
        .unwrap_or("<")
        .to_owned();
    let inner = subject
        .strip_prefix("<user_content>")
        .and_then(|t| t.strip_suffix("</user_content>"))
        .unwrap_or("<");
    steps.check(
        hostile["ok"] == true && !inner.contains(['<', '>', '\u{1b}', '\u{202e}']),
        &format!(
            "a hostile e-mail comes back neutral: {}",
            escape_line(&subject.chars().take(90).collect::<String>()).text
        ),
    );

    let arguments = json!({"in_reply_to": DEMO_TICKET_ID, "body": MAIL_REPLY, "locale": "en-US"});
    let unapproved = mail.call("mail_send", arguments.clone()).await?;
    steps.check(
        code(&unapproved) == "APPROVAL_REQUIRED",
        "without an approval the reply is refused (APPROVAL_REQUIRED)",
    );
    let request = mail
        .call(
            "approval_request",
            json!({"action": "mail_send", "arguments": arguments, "reason": "sandbox demo"}),
        )
        .await?;
    let approval_id = request["data"]["approval_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    steps.check(
        request["data"]["status"] == "pending",
        &format!("approval {approval_id} pending; its card names the recipient and subject"),
    );
    steps.check(
        decide(world, "approve", &approval_id).await,
        "the sandbox approver reacts + to the card",
    );
    let status = wait_status(&mail, &approval_id).await?;
    steps.check(
        status == "approved",
        &format!("approval_status reads {status}"),
    );
    let mut call = arguments.clone();
    call["approval_id"] = json!(approval_id);
    let sent = mail.call("mail_send", call.clone()).await?;
    let message_id = sent["data"]["sent"]["message_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    steps.check(
        sent["ok"] == true && sent["data"]["sent"]["saved_to_sent"] == true,
        &format!("the reply is sent as <{message_id}> and filed in Sent"),
    );
    let submissions = fake.submissions();
    let in_sent = fake.mailbox(fake.support_login(), "Sent").is_some_and(|m| {
        m.messages.iter().any(|s| {
            String::from_utf8_lossy(&s.raw).contains(&format!("Message-ID: <{message_id}>"))
        })
    });
    steps.check(
        submissions.len() == 1 && in_sent,
        "the mail fake accepted exactly one message, and its Sent mailbox holds the copy",
    );
    let replay = mail.call("mail_send", call).await?;
    steps.check(
        code(&replay) == "APPROVAL_CONSUMED",
        "replaying the approval is refused (APPROVAL_CONSUMED)",
    );
    mail.close().await;

    // What `care-mcp sandbox show-sent` lists (the running sandbox records it continuously).
    let _ = tokio::time::timeout(
        Duration::from_millis(300),
        record_sent(&world.upstreams, &world.dir),
    )
    .await;
    let mut show = world.command();
    show.args(["sandbox", "show-sent", "--dir"])
        .arg(&world.dir)
        .stderr(std::process::Stdio::null());
    let shown = show
        .output()
        .await
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let line = shown
        .lines()
        .find(|l| l.contains("Re: Reminder notifications"))
        .unwrap_or("")
        .to_owned();
    steps.check(
        line.contains("jordan.lee@example.com") && line.contains("Version 3.2.1"),
        "care-mcp sandbox show-sent lists the reply",
    );
    steps.note(&format!("      {}", line.trim()));
    Ok(())
}

//! The demo's forum step: the community agent searches the forum, reads a topic (a hostile one
//! comes back as neutral fenced text), asks for an approval of its reply, is approved by the
//! sandbox approver over the relay, and replies once; the Discourse fake received exactly the
//! approved text, and a replay is refused.

use care_core::display::escape_line;
use care_fakes::discourse::{FakeDiscourse, TOPIC_HOSTILE, TOPIC_UNANSWERED};
use serde_json::{Value, json};

use super::{Steps, code, decide, wait_status};
use crate::sandbox::client::RoleClientSession;
use crate::sandbox::world::SandboxWorld;
use crate::startup::StartError;

/// The demo's forum reply: plain English, so the locale gate accepts it for `en-US`.
pub const FORUM_REPLY: &str = "Thanks for the report! Version 3.1.2 restores the reminders: please update and check Settings > Notifications once. Tell us here if they are still missing.";

fn topic_ids(found: &Value) -> Vec<u64> {
    found["data"]["topics"]
        .as_array()
        .map(|ts| ts.iter().filter_map(|t| t["topic_id"].as_u64()).collect())
        .unwrap_or_default()
}

/// Runs the step as section `number` of the demo.
pub(super) async fn run(
    world: &SandboxWorld,
    steps: &mut Steps<'_>,
    number: u32,
) -> Result<(), StartError> {
    let forum: &FakeDiscourse = world
        .upstream()
        .ok_or_else(|| StartError("sandbox demo: the Discourse fake is not running".into()))?;
    steps.note(&format!(
        "\n{number}. The community agent answers a forum topic, once, after approval"
    ));
    let community = RoleClientSession::start(world.command(), "community").await?;

    let found = community
        .call("discourse_search", json!({"query": "reminders"}))
        .await?;
    steps.check(
        found["ok"] == true && topic_ids(&found).contains(&TOPIC_UNANSWERED),
        &format!("discourse_search finds topic {TOPIC_UNANSWERED}"),
    );
    let topic = community
        .call("discourse_topic_get", json!({"topic_id": TOPIC_UNANSWERED}))
        .await?;
    steps.check(
        topic["data"]["topic"]["company_answered"] == false
            && topic["data"]["posts"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("<user_content>")),
        "the topic reads as fenced plain text, not yet answered by the company",
    );
    let hostile = community
        .call("discourse_topic_get", json!({"topic_id": TOPIC_HOSTILE}))
        .await?;
    let text = hostile["data"]["posts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let inner = text
        .strip_prefix("<user_content>")
        .and_then(|t| t.strip_suffix("</user_content>"))
        .unwrap_or("<");
    steps.check(
        hostile["ok"] == true && !inner.contains(['<', '>', '\u{1b}', '\u{202e}']),
        "a hostile post (script, escapes, bidi, a closing fence) comes back neutral",
    );

    let arguments = json!({
        "topic_id": TOPIC_UNANSWERED,
        "reply_to_post_number": 1,
        "body": FORUM_REPLY,
        "locale": "en-US",
    });
    let request = community
        .call(
            "approval_request",
            json!({"action": "discourse_post_reply", "arguments": arguments, "reason": "sandbox demo"}),
        )
        .await?;
    let approval_id = request["data"]["approval_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    steps.check(
        request["data"]["status"] == "pending" && request["data"]["card_event_id"].is_string(),
        &format!("approval {approval_id} pending; its card names the topic"),
    );
    steps.check(
        decide(world, "approve", &approval_id).await,
        "the sandbox approver reacts + to the card",
    );
    let status = wait_status(&community, &approval_id).await?;
    steps.check(
        status == "approved",
        &format!("approval_status reads {status}"),
    );
    let mut call = arguments.clone();
    call["approval_id"] = json!(approval_id);
    let sent = community.call("discourse_post_reply", call.clone()).await?;
    steps.check(
        sent["ok"] == true && sent["data"]["dry_run"] == false,
        "the reply is posted",
    );
    let received = forum.sent_posts();
    steps.check(
        received.len() == 1
            && received[0].raw == FORUM_REPLY
            && received[0].topic_id == TOPIC_UNANSWERED
            && received[0].reply_to_post_number == Some(1),
        "the Discourse fake received exactly the approved text, in reply to post #1, once",
    );
    for post in &received {
        steps.note(&format!(
            "        received in topic {} as post #{}: {}",
            post.topic_id,
            post.post_number,
            escape_line(&post.raw).text
        ));
    }
    let replay = community.call("discourse_post_reply", call).await?;
    steps.check(
        code(&replay) == "APPROVAL_CONSUMED",
        "replaying the approval is refused (APPROVAL_CONSUMED)",
    );
    let sla = community
        .call("sla_status", json!({"channel": "forum"}))
        .await?;
    steps.check(
        sla["ok"] == true,
        &format!(
            "sla_status reads the forum (topics awaiting the company: {})",
            sla["data"]["channels"][0]["awaiting"]
        ),
    );
    community.close().await;
    Ok(())
}

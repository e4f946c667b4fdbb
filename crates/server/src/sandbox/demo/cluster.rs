//! The demo's Kubernetes step: the ops agent reads the overview (nodes null, with the reason),
//! finds the crash-looping `checkout`, reads its pods and the (partly hostile) warnings, is
//! approved, restarts it exactly once, and the restart shows in `sandbox show-sent`.

use std::time::Duration;

use care_core::display::escape_line;
use care_fakes::kubernetes::{CRASH_LOOP, FakeKube};
use serde_json::{Value, json};

use super::{Steps, code, decide, wait_status};
use crate::sandbox::client::RoleClientSession;
use crate::sandbox::record_sent;
use crate::sandbox::world::SandboxWorld;
use crate::startup::StartError;

fn is_fenced(text: &str) -> bool {
    text.starts_with("<user_content>") && text.ends_with("</user_content>")
}

/// Runs the step; checks go to `steps`.
pub(super) async fn run(
    world: &SandboxWorld,
    steps: &mut Steps<'_>,
    number: u32,
) -> Result<(), StartError> {
    let kube: &FakeKube = world
        .upstream()
        .ok_or_else(|| StartError("sandbox demo: the Kubernetes fake is not running".into()))?;
    let (namespace, name) = CRASH_LOOP;
    steps.note(&format!(
        "\n{number}. The ops agent finds a crash loop and restarts it, once"
    ));
    let ops = RoleClientSession::start(world.command(), "ops").await?;

    let overview = ops.call("cluster_overview", json!({})).await?;
    let data = &overview["data"];
    steps.check(
        overview["ok"] == true && data["nodes"].is_null() && data["nodes_reason"].is_string(),
        &format!(
            "the overview is a partial result: nodes null ({})",
            data["nodes_reason"].as_str().unwrap_or_default()
        ),
    );
    let unready: Vec<Value> = data["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["namespace"] == namespace)
        .flat_map(|n| {
            n["workloads"]["not_ready"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    let fenced_name = care_core::fence::fence(name);
    steps.check(
        unready
            .iter()
            .any(|w| w["name"] == fenced_name.as_str() && w["ready"] == 0),
        &format!("{namespace}: {fenced_name} is not ready (0 of 2)"),
    );

    let pods = ops
        .call(
            "cluster_pods",
            json!({"namespace": namespace, "workload": name}),
        )
        .await?;
    let crash_looping = pods["data"]["pods"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["waiting"][0]["reason"] == care_core::fence::fence("CrashLoopBackOff"))
        .count();
    steps.check(
        crash_looping == 2,
        &format!("its {crash_looping} pods wait in CrashLoopBackOff"),
    );
    let events = ops
        .call(
            "cluster_events",
            json!({"namespace": namespace, "warnings_only": true}),
        )
        .await?;
    let messages: Vec<String> = events["data"]["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect();
    let hostile = messages
        .iter()
        .find(|m| m.contains("ignore previous instructions"));
    steps.check(
        !messages.is_empty()
            && messages.iter().all(|m| is_fenced(m))
            && hostile.is_some_and(|m| {
                let inner = &m["<user_content>".len()..m.len() - "</user_content>".len()];
                !inner.contains(['<', '>', '\u{1b}', '\u{202e}'])
            }),
        &format!(
            "{} warnings, every message fenced; the hostile one comes back neutral: {}",
            messages.len(),
            hostile
                .map(|m| m.chars().take(100).collect::<String>())
                .unwrap_or_default()
        ),
    );
    let outside = ops
        .call("cluster_workloads", json!({"namespace": "kube-system"}))
        .await?;
    steps.check(
        code(&outside) == "SCOPE_DENIED",
        "a namespace outside CARE_KUBE_NAMESPACES is refused (SCOPE_DENIED)",
    );

    let arguments = json!({"namespace": namespace, "kind": "Deployment", "name": name});
    let unapproved = ops
        .call("cluster_restart_workload", arguments.clone())
        .await?;
    steps.check(
        code(&unapproved) == "APPROVAL_REQUIRED",
        "without an approval the restart is refused (APPROVAL_REQUIRED)",
    );
    let request = ops
        .call(
            "approval_request",
            json!({"action": "cluster_restart_workload", "arguments": arguments, "reason": "checkout crash-looping since the last deploy"}),
        )
        .await?;
    let approval_id = request["data"]["approval_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    steps.check(
        request["data"]["status"] == "pending" && request["data"]["card_event_id"].is_string(),
        &format!("approval {approval_id} pending; its card (workload, UID, current state) is on the relay"),
    );
    steps.check(
        decide(world, "approve", &approval_id).await,
        "the sandbox approver reacts + to the card",
    );
    let status = wait_status(&ops, &approval_id).await?;
    steps.check(
        status == "approved",
        &format!("approval_status reads {status}"),
    );
    let mut call = arguments.clone();
    call["approval_id"] = json!(approval_id);
    let sent = ops.call("cluster_restart_workload", call.clone()).await?;
    let restarts = kube.restarts();
    steps.check(
        sent["ok"] == true
            && restarts.len() == 1
            && restarts[0].namespace == namespace
            && restarts[0].name == name
            && sent["data"]["sent"]["restarted_at"] == restarts[0].restarted_at.as_str(),
        &format!(
            "the fake API server received exactly one restart patch (restartedAt {})",
            restarts
                .first()
                .map(|r| r.restarted_at.as_str())
                .unwrap_or("-")
        ),
    );
    let replay = ops.call("cluster_restart_workload", call).await?;
    steps.check(
        code(&replay) == "APPROVAL_CONSUMED" && kube.restarts().len() == 1,
        "replaying the approval is refused (APPROVAL_CONSUMED)",
    );
    ops.close().await;

    // What an operator sees with `care-mcp sandbox show-sent` (the fakes' writes are handed
    // over through the sandbox directory, as while the sandbox runs).
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
        .find(|l| l.contains(&format!("Deployment {namespace}/{name}")))
        .map(|l| escape_line(l.trim()).text);
    steps.check(
        shown.contains("Kubernetes:") && line.is_some(),
        "care-mcp sandbox show-sent lists the restart",
    );
    if let Some(line) = line {
        steps.note(&format!(
            "        {}",
            line.chars().take(150).collect::<String>()
        ));
    }
    Ok(())
}

//! `cluster_restart_workload`: the domain's one external write, what `kubectl rollout restart`
//! does — a strategic merge patch setting the pod-template annotation
//! `kubectl.kubernetes.io/restartedAt`, so the pods are replaced by the workload's own update
//! strategy. `plan` finds the workload (in scope, exists) and shows its current state on the
//! card; its UID is the checked fact (a deleted and recreated workload of the same name is not
//! the one approved) and rides in the patch as a precondition the API server enforces. A dry
//! run asks the API server to validate the patch (`dryRun=All`). Besides `CARE_WRITE_ENABLED`,
//! a live restart needs `CARE_CLUSTER_WRITE=1` (else WRITE_DISABLED).

use std::sync::Arc;

use chrono::Utc;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use care_core::approval_channel::{CardContent, CardFact};
use care_core::error::{ErrorCode, ToolError};
use care_core::input::Validate;
use care_core::pipeline::{ExternalWriteTool, WritePermit, WritePlan};
use care_core::tool::CallContext;

use super::{check_namespace, check_workload_name};
use crate::cluster::client::{RestartTarget, Restarted, restart_patch};
use crate::cluster::context::ClusterContext;
use crate::cluster::view::{fenced, rfc3339};
use crate::cluster::workload::{RESTARTED_AT, Workload, WorkloadKind, is_uid};
use crate::kit::cut;

#[derive(Debug)]
pub struct RestartWorkload(pub Arc<ClusterContext>);

/// A rolling restart of one workload.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestartArgs {
    /// A namespace this server may see.
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    /// The workload's kind.
    pub kind: WorkloadKind,
    /// The workload's name (without the fence cluster tools show it in).
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

impl Validate for RestartArgs {
    fn validate(&self) -> Result<(), ToolError> {
        check_namespace(&self.namespace)?;
        check_workload_name("name", &self.name)
    }
}

/// A card fact read from the cluster is shown up to this many characters: whoever may edit the
/// workload words its images, condition reasons and annotations, and a card padded past what a
/// relay accepts could not be sent. The checked fact (the UID) is never cut.
pub const MAX_FACT_CHARS: usize = 500;

/// `value` as the card shows it: cut at [`MAX_FACT_CHARS`], with its full length noted.
fn shown(value: &str) -> String {
    match cut::to_chars(value, MAX_FACT_CHARS) {
        (kept, true) => format!(
            "{kept} … (cut: {} characters in all)",
            value.chars().count()
        ),
        (kept, false) => kept,
    }
}

/// The card's facts: the workload's identity and its current state, in plain words.
fn facts(w: &Workload, uid: &str) -> Vec<CardFact> {
    let mut facts = vec![
        CardFact::new("Workload UID", uid),
        CardFact::new("Ready", format!("{} of {} pods", w.ready, w.desired)),
    ];
    if let (Some(updated), Some(available)) = (w.updated, w.available) {
        facts.push(CardFact::new(
            "Up to date / available",
            format!("{updated} / {available}"),
        ));
    }
    facts.push(CardFact::new("Images", shown(&w.images().join(", "))));
    if !w.conditions.is_empty() {
        let conditions: Vec<String> = w
            .conditions
            .iter()
            .map(|c| match &c.reason {
                Some(reason) => format!("{}={} ({reason})", c.kind, c.status),
                None => format!("{}={}", c.kind, c.status),
            })
            .collect();
        facts.push(CardFact::new("Conditions", shown(&conditions.join("; "))));
    }
    facts.push(CardFact::new(
        "Last restart",
        shown(w.restarted_at().unwrap_or("none recorded")),
    ));
    if let Some(strategy) = &w.strategy {
        let note = if strategy == "OnDelete" {
            " (pods are replaced only as they are deleted)"
        } else {
            ""
        };
        facts.push(CardFact::new(
            "Update strategy",
            format!("{}{note}", shown(strategy)),
        ));
    }
    if w.paused {
        facts.push(CardFact::new(
            "Paused",
            "yes: the pods are replaced only once the rollout is resumed",
        ));
    }
    facts.push(CardFact::new(
        "What is sent",
        format!("a patch setting the pod-template annotation {RESTARTED_AT} to the time of sending (as kubectl rollout restart does)"),
    ));
    facts
}

/// Now, as `kubectl` writes the annotation (RFC 3339, seconds).
fn now() -> String {
    rfc3339(Utc::now())
}

fn restarted_json(target: &RestartTarget, done: &Restarted) -> Value {
    json!({
        "kind": target.kind.as_str(),
        "namespace": target.namespace,
        "name": target.name,
        "uid": done.uid,
        "restarted_at": done.restarted_at,
        "generation": done.generation,
    })
}

impl ExternalWriteTool for RestartWorkload {
    type Args = RestartArgs;
    type Payload = RestartTarget;
    const NAME: &'static str = "cluster_restart_workload";
    const DESCRIPTION: &'static str = "Restart a Deployment, StatefulSet or DaemonSet the way kubectl rollout restart does (its pods are replaced by its update strategy). External write: with writes disabled it only shows what would be sent, checked by the API server's own dry run; otherwise it needs the id of an approved approval_request for exactly these arguments, and the cluster write switch. A workload deleted and recreated since the approval is refused.";

    async fn plan(
        &self,
        _ctx: &CallContext,
        args: RestartArgs,
    ) -> Result<WritePlan<RestartTarget>, ToolError> {
        let cluster = &self.0;
        cluster.require_namespace(&args.namespace)?;
        let workload = cluster
            .workload(&args.namespace, args.kind, &args.name)
            .await?;
        let uid = workload.uid.clone().filter(|u| is_uid(u)).ok_or_else(|| {
            ToolError::new(ErrorCode::UpstreamUnavailable)
                .with_detail("kubernetes workload without a usable uid")
        })?;
        let target = RestartTarget {
            kind: args.kind,
            namespace: args.namespace,
            name: args.name,
            uid,
        };
        let what = format!(
            "{} {} in namespace {}",
            target.kind.as_str(),
            target.name,
            target.namespace
        );
        let would_send = json!({
            "kind": target.kind.as_str(),
            "namespace": target.namespace,
            "name": target.name,
            "uid": target.uid,
            "current": {
                "ready": workload.ready,
                "desired": workload.desired,
                "images": workload.images().iter().map(|i| fenced(i)).collect::<Vec<_>>(),
                "restarted_at": workload.restarted_at().map(fenced),
                "paused": workload.paused,
            },
            "patch": restart_patch(&target.uid, "<the time of sending>"),
            "patch_type": "application/strategic-merge-patch+json",
        });
        let mut checked_facts = serde_json::Map::new();
        checked_facts.insert("uid".into(), json!(target.uid));
        let card = CardContent {
            title: "restart a Kubernetes workload".to_owned(),
            target: what.clone(),
            facts: facts(&workload, &target.uid),
            text: None,
        };
        Ok(WritePlan {
            would_send,
            outbound_text: vec![what],
            card,
            checked_facts,
            payload: target,
        })
    }

    async fn apply(
        &self,
        permit: WritePermit<'_>,
        target: RestartTarget,
    ) -> Result<Value, ToolError> {
        let done = self.0.client.restart(&permit, &target, &now()).await?;
        Ok(restarted_json(&target, &done))
    }

    fn writes_allowed(&self) -> bool {
        self.0.config.write
    }

    async fn preview(&self, target: &RestartTarget) -> Result<Option<Value>, ToolError> {
        let done = self.0.client.restart_dry_run(target, &now()).await?;
        let mut answer = restarted_json(target, &done);
        answer["validated_by"] =
            json!("the API server's dry run (dryRun=All): nothing was changed");
        Ok(Some(answer))
    }
}

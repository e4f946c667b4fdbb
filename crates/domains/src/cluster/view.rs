//! What the cluster tools answer, built from the k8s-openapi types. Every string the API server
//! gave is third-party text and comes back fenced (`<user_content>…</user_content>`): names,
//! images, reasons, messages, keys. Only values checked against a fixed vocabulary (a pod
//! phase, `True`/`False`, `Normal`/`Warning`, a known kind) are given as plain words.
//! Text is bounded before it is fenced: an event's or a condition's message (which whoever
//! creates the event words, at any length the API server stores) is cut with `truncated: true`
//! beside it, and every other string silently at a length no valid Kubernetes name reaches.

use chrono::{DateTime, SecondsFormat, Utc};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use serde_json::{Value, json};

use super::sources::config_sources;
use super::workload::{Workload, WorkloadKind, time};
use crate::kit::cut::{self, CutFence};

/// An event's or a condition's message is cut after this many characters (Kubernetes's own
/// `events.k8s.io` notes stop at 1 KiB; a core event's message has no limit).
pub const MAX_MESSAGE_CHARS: usize = 4_000;
/// Any other string is cut after this many: names are at most 253, so only a hostile API
/// server (or a proxy in between) meets this cut.
pub const MAX_FIELD_CHARS: usize = 1_000;

/// Third-party text, cut to [`MAX_FIELD_CHARS`] and fenced for the model.
pub fn fenced(text: &str) -> String {
    care_core::fence::fence(&cut::to_chars(text, MAX_FIELD_CHARS).0)
}

/// `value` as a plain word when it is one of `known`, else fenced.
pub fn word(value: &str, known: &[&str]) -> String {
    if known.contains(&value) {
        value.to_owned()
    } else {
        fenced(value)
    }
}

const CONDITION_STATUS: &[&str] = &["True", "False", "Unknown"];
const WORKLOAD_CONDITIONS: &[&str] = &["Available", "Progressing", "ReplicaFailure"];
const STRATEGIES: &[&str] = &["RollingUpdate", "Recreate", "OnDelete"];
const PHASES: &[&str] = &["Pending", "Running", "Succeeded", "Failed", "Unknown"];
const EVENT_TYPES: &[&str] = &["Normal", "Warning"];
const KINDS: &[&str] = &[
    "Pod",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
    "CronJob",
    "Node",
    "Service",
    "PersistentVolumeClaim",
    "HorizontalPodAutoscaler",
];

pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A workload with everything `cluster_workloads` shows.
pub fn workload_json(w: &Workload) -> Value {
    json!({
        "kind": w.kind.as_str(),
        "name": fenced(&w.name),
        "ready": w.ready,
        "desired": w.desired,
        "updated": w.updated,
        "available": w.available,
        "all_ready": w.is_ready(),
        "paused": w.paused,
        "strategy": w.strategy.as_deref().map(|s| word(s, STRATEGIES)),
        "images": w.images().iter().map(|i| fenced(i)).collect::<Vec<_>>(),
        "conditions": w.conditions.iter().map(|c| {
            let mut text = CutFence::default();
            let message = c.message.as_deref().map(|m| text.fence(m, MAX_MESSAGE_CHARS));
            json!({
                "type": word(&c.kind, WORKLOAD_CONDITIONS),
                "status": word(&c.status, CONDITION_STATUS),
                "reason": c.reason.as_deref().map(fenced),
                "message": message,
                "truncated": text.cut,
            })
        }).collect::<Vec<_>>(),
        "restarted_at": w.restarted_at().map(fenced),
        "created": w.created.map(rfc3339),
        "config_sources": config_sources(&w.template),
    })
}

/// A workload in one line of the overview.
pub fn workload_brief(w: &Workload) -> Value {
    json!({
        "kind": w.kind.as_str(),
        "name": fenced(&w.name),
        "ready": w.ready,
        "desired": w.desired,
    })
}

/// The workload a pod belongs to (through its ReplicaSet for a Deployment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub kind: WorkloadKind,
    pub name: String,
}

/// Restarts of every container of a pod.
pub fn restarts(pod: &Pod) -> i64 {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .map(|c| i64::from(c.restart_count))
        .sum()
}

/// The pod's `Ready` condition is `True` (a finished pod of a Job is not counted as unready).
pub fn is_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    if status.and_then(|s| s.phase.as_deref()) == Some("Succeeded") {
        return true;
    }
    status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A pod with its phase, readiness, restarts and the last way a container of it ended.
pub fn pod_json(pod: &Pod, owner: Option<&Owner>) -> Value {
    let status = pod.status.as_ref();
    let containers: Vec<_> = status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .collect();
    let waiting: Vec<Value> = containers
        .iter()
        .filter_map(|c| {
            let w = c.state.as_ref()?.waiting.as_ref()?;
            Some(json!({
                "container": fenced(&c.name),
                "reason": w.reason.as_deref().map(fenced),
            }))
        })
        .collect();
    let last_termination = containers
        .iter()
        .filter_map(|c| {
            let t = c.last_state.as_ref()?.terminated.as_ref()?;
            Some((c, t, t.finished_at.as_ref().and_then(|f| time(&f.0))))
        })
        .max_by_key(|(_, _, finished)| *finished)
        .map(|(c, t, finished)| {
            json!({
                "container": fenced(&c.name),
                "reason": t.reason.as_deref().map(fenced),
                "exit_code": t.exit_code,
                "finished_at": finished.map(rfc3339),
            })
        });
    json!({
        "name": fenced(pod.metadata.name.as_deref().unwrap_or_default()),
        "phase": status.and_then(|s| s.phase.as_deref()).map(|p| word(p, PHASES)),
        "ready": is_ready(pod),
        "containers_ready": containers.iter().filter(|c| c.ready).count(),
        "containers": containers.len(),
        "restarts": restarts(pod),
        "waiting": waiting,
        "last_termination": last_termination,
        "node": pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).map(fenced),
        "started": status.and_then(|s| s.start_time.as_ref()).and_then(|t| time(&t.0)).map(rfc3339),
        "workload": owner.map(|o| json!({"kind": o.kind.as_str(), "name": fenced(&o.name)})),
    })
}

/// When an event last happened: its last timestamp, else its event time, first timestamp or
/// creation.
pub fn last_seen(event: &Event) -> Option<DateTime<Utc>> {
    event
        .last_timestamp
        .as_ref()
        .map(|t| &t.0)
        .or(event.event_time.as_ref().map(|t| &t.0))
        .or(event.first_timestamp.as_ref().map(|t| &t.0))
        .or(event.metadata.creation_timestamp.as_ref().map(|t| &t.0))
        .and_then(time)
}

pub fn is_warning(event: &Event) -> bool {
    event.type_.as_deref() == Some("Warning")
}

/// An event, its reason and message fenced (anyone who can create a pod can word them), the
/// message cut to [`MAX_MESSAGE_CHARS`] with `truncated` saying whether it was.
pub fn event_json(event: &Event) -> Value {
    let object = &event.involved_object;
    let mut text = CutFence::default();
    let message = event
        .message
        .as_deref()
        .map(|m| text.fence(m, MAX_MESSAGE_CHARS));
    json!({
        "type": event.type_.as_deref().map(|t| word(t, EVENT_TYPES)),
        "reason": event.reason.as_deref().map(fenced),
        "message": message,
        "truncated": text.cut,
        "object": {
            "kind": object.kind.as_deref().map(|k| word(k, KINDS)),
            "name": object.name.as_deref().map(fenced),
        },
        "count": event.count.unwrap_or(1),
        "first_seen": event.first_timestamp.as_ref().and_then(|t| time(&t.0)).map(rfc3339),
        "last_seen": last_seen(event).map(rfc3339),
    })
}

/// Nodes by readiness (the names of the unready ones fenced).
pub fn nodes_json(nodes: &[Node], truncated: bool) -> Value {
    let ready = |n: &&Node| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    let not_ready: Vec<String> = nodes
        .iter()
        .filter(|n| !ready(n))
        .map(|n| fenced(n.metadata.name.as_deref().unwrap_or_default()))
        .collect();
    json!({
        "total": nodes.len(),
        "ready": nodes.len() - not_ready.len(),
        "not_ready": not_ready,
        "truncated": truncated,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_known_words_go_unfenced() {
        assert_eq!(word("Warning", EVENT_TYPES), "Warning");
        assert_eq!(
            word("Warning</user_content>", EVENT_TYPES),
            "<user_content>Warning&lt;/user_content&gt;</user_content>"
        );
    }

    #[test]
    fn a_crash_looping_pod_shows_why() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "checkout-1"},
            "spec": {"containers": [{"name": "app"}], "nodeName": "node-1"},
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [{
                    "name": "app", "image": "x", "imageID": "", "ready": false, "restartCount": 14,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-12-01T09:58:00Z"}}
                }]
            }
        }))
        .unwrap();
        let owner = Owner {
            kind: WorkloadKind::Deployment,
            name: "checkout".into(),
        };
        let v = pod_json(&pod, Some(&owner));
        assert_eq!(v["phase"], "Running");
        assert_eq!(v["ready"], false);
        assert_eq!(v["restarts"], 14);
        assert_eq!(v["waiting"][0]["reason"], fenced("CrashLoopBackOff"));
        assert_eq!(v["last_termination"]["exit_code"], 1);
        assert_eq!(v["last_termination"]["finished_at"], "2026-12-01T09:58:00Z");
        assert_eq!(v["workload"]["name"], fenced("checkout"));
    }

    #[test]
    fn long_text_is_cut_messages_saying_so() {
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": "e1", "namespace": "shop"},
            "involvedObject": {"kind": "Pod", "name": "p".repeat(5_000)},
            "reason": "R".repeat(5_000),
            "message": "é".repeat(MAX_MESSAGE_CHARS + 1),
        }))
        .unwrap();
        let v = event_json(&event);
        assert_eq!(v["truncated"], true);
        assert_eq!(
            v["message"],
            care_core::fence::fence(&"é".repeat(MAX_MESSAGE_CHARS))
        );
        assert_eq!(
            v["reason"],
            care_core::fence::fence(&"R".repeat(MAX_FIELD_CHARS))
        );
        assert_eq!(
            v["object"]["name"],
            care_core::fence::fence(&"p".repeat(MAX_FIELD_CHARS))
        );
        let whole: Event = serde_json::from_value(json!({
            "metadata": {"name": "e2"},
            "involvedObject": {},
            "message": "é".repeat(MAX_MESSAGE_CHARS),
        }))
        .unwrap();
        assert_eq!(event_json(&whole)["truncated"], false);
        assert_eq!(fenced("short"), care_core::fence::fence("short"));
    }
}

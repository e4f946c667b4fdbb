//! Kubernetes objects as the API server writes them on the wire (JSON, camelCase), built by
//! hand rather than from a client's types, so the client under test decodes what a real server
//! sends and not its own serialisation.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

/// RFC 3339 in seconds, as the API server writes times.
pub fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A UID in the UUID shape Kubernetes gives objects (deterministic per fake and counter).
pub fn uid(n: u64) -> String {
    format!("0b5e{:04x}-7f2d-4a7e-9c3b-{:012x}", (n >> 48) & 0xffff, n)
}

/// `metadata` of a namespaced object.
pub fn meta(namespace: &str, name: &str, uid: &str, created: DateTime<Utc>) -> Value {
    json!({
        "name": name,
        "namespace": namespace,
        "uid": uid,
        "resourceVersion": "1",
        "generation": 1,
        "creationTimestamp": time(created),
    })
}

/// A pod template: one container per image, with `env`, `envFrom` and `volumes` as given.
pub fn template(app: &str, image: &str, env: Value, env_from: Value, volumes: Value) -> Value {
    json!({
        "metadata": { "labels": { "app": app } },
        "spec": {
            "containers": [{ "name": app, "image": image, "env": env, "envFrom": env_from }],
            "volumes": volumes,
        }
    })
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({ "type": kind, "status": status, "reason": reason, "message": message })
}

/// A Deployment with `ready` of `replicas` pods ready.
pub fn deployment(meta: Value, template: Value, replicas: i32, ready: i32) -> Value {
    let available = if ready >= replicas {
        condition(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        condition(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": template["metadata"]["labels"] },
            "strategy": { "type": "RollingUpdate" },
            "template": template,
        },
        "status": {
            "observedGeneration": 1,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": replicas - ready,
            "conditions": [available, condition("Progressing", "True", "NewReplicaSetAvailable", "ReplicaSet has successfully progressed.")],
        }
    })
}

pub fn statefulset(meta: Value, template: Value, replicas: i32, ready: i32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "serviceName": template["metadata"]["labels"]["app"],
            "selector": { "matchLabels": template["metadata"]["labels"] },
            "updateStrategy": { "type": "RollingUpdate" },
            "template": template,
        },
        "status": {
            "replicas": replicas,
            "readyReplicas": ready,
            "currentReplicas": replicas,
            "updatedReplicas": replicas,
            "availableReplicas": ready,
        }
    })
}

pub fn daemonset(meta: Value, template: Value, desired: i32, ready: i32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta,
        "spec": {
            "selector": { "matchLabels": template["metadata"]["labels"] },
            "updateStrategy": { "type": "RollingUpdate" },
            "template": template,
        },
        "status": {
            "currentNumberScheduled": desired,
            "desiredNumberScheduled": desired,
            "numberMisscheduled": 0,
            "numberReady": ready,
            "numberAvailable": ready,
            "updatedNumberScheduled": desired,
        }
    })
}

/// The controller reference an owner puts on what it creates.
pub fn owned_by(mut meta: Value, kind: &str, name: &str, uid: &str) -> Value {
    let api_version = match kind {
        "ReplicaSet" | "Deployment" | "StatefulSet" | "DaemonSet" => "apps/v1",
        _ => "v1",
    };
    meta["ownerReferences"] = json!([{
        "apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
        "controller": true, "blockOwnerDeletion": true,
    }]);
    meta
}

pub fn replicaset(meta: Value, replicas: i32, ready: i32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": { "replicas": replicas, "selector": { "matchLabels": {} } },
        "status": { "replicas": replicas, "readyReplicas": ready },
    })
}

/// How a pod's one container is doing.
#[derive(Debug, Clone)]
pub enum PodState {
    Ready,
    /// Crash-looping: waiting in `CrashLoopBackOff` after `restarts` restarts, the last run
    /// ended with `exit_code` at `finished`.
    CrashLoop {
        restarts: i32,
        exit_code: i32,
        finished: DateTime<Utc>,
    },
}

pub fn pod(
    meta: Value,
    container: &str,
    image: &str,
    node: &str,
    state: &PodState,
    started: DateTime<Utc>,
) -> Value {
    let name = container;
    let (ready, container) = match state {
        PodState::Ready => (
            true,
            json!({
                "name": name, "image": image, "imageID": "", "ready": true, "restartCount": 0,
                "started": true, "state": { "running": { "startedAt": time(started) } },
            }),
        ),
        PodState::CrashLoop {
            restarts,
            exit_code,
            finished,
        } => (
            false,
            json!({
                "name": name, "image": image, "imageID": "", "ready": false,
                "restartCount": restarts, "started": false,
                "state": { "waiting": { "reason": "CrashLoopBackOff", "message": format!("back-off 5m0s restarting failed container={name}") } },
                "lastState": { "terminated": {
                    "exitCode": exit_code, "reason": "Error",
                    "startedAt": time(*finished - chrono::Duration::seconds(3)),
                    "finishedAt": time(*finished),
                } },
            }),
        ),
    };
    let flag = if ready { "True" } else { "False" };
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": { "nodeName": node, "containers": [{ "name": name, "image": image }] },
        "status": {
            "phase": "Running",
            "startTime": time(started),
            "conditions": [
                { "type": "PodScheduled", "status": "True" },
                { "type": "Initialized", "status": "True" },
                { "type": "ContainersReady", "status": flag },
                { "type": "Ready", "status": flag },
            ],
            "containerStatuses": [container],
        }
    })
}

/// A core/v1 Event about `kind`/`name`.
#[allow(clippy::too_many_arguments)]
pub fn event(
    meta: Value,
    kind_type: &str,
    reason: &str,
    message: &str,
    object_kind: &str,
    object_name: &str,
    count: i32,
    last: DateTime<Utc>,
) -> Value {
    let namespace = meta["namespace"].clone();
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": meta,
        "type": kind_type,
        "reason": reason,
        "message": message,
        "involvedObject": { "kind": object_kind, "name": object_name, "namespace": namespace },
        "count": count,
        "firstTimestamp": time(last - chrono::Duration::minutes(i64::from(count.max(1)))),
        "lastTimestamp": time(last),
        "source": { "component": "kubelet" },
    })
}

pub fn node(name: &str, uid: &str, ready: bool, created: DateTime<Utc>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name, "uid": uid, "resourceVersion": "1", "creationTimestamp": time(created) },
        "status": { "conditions": [{ "type": "Ready", "status": if ready { "True" } else { "False" } }] },
    })
}

/// A ConfigMap or Secret with `data` (the fake holds them so that a request for one would have
/// something to leak; it never serves them).
pub fn data_object(kind: &str, meta: Value, data: Value) -> Value {
    json!({ "apiVersion": "v1", "kind": kind, "metadata": meta, "data": data })
}

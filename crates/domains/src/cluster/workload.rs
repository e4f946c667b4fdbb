//! Deployments, StatefulSets and DaemonSets seen alike: their kind, identity, readiness,
//! pod template and conditions, read out of the k8s-openapi types once so the tools and the
//! restart's card share one reading.

use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::Deserialize;

use super::access::{self, ApiResource};

/// The pod-template annotation `kubectl rollout restart` sets; a new value rolls the pods.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// A kind of workload that runs pods from a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
pub enum WorkloadKind {
    Deployment,
    StatefulSet,
    DaemonSet,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 3] = [
        WorkloadKind::Deployment,
        WorkloadKind::StatefulSet,
        WorkloadKind::DaemonSet,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
        }
    }

    pub fn resource(self) -> ApiResource {
        match self {
            WorkloadKind::Deployment => access::DEPLOYMENTS,
            WorkloadKind::StatefulSet => access::STATEFULSETS,
            WorkloadKind::DaemonSet => access::DAEMONSETS,
        }
    }

    /// The kind named exactly as Kubernetes names it.
    pub fn parse(kind: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|k| k.as_str() == kind)
    }
}

/// One condition of a workload, as the API server reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub kind: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
}

/// The apps/v1 conditions share a shape but not a type: each kind's fields, as options.
type ConditionFields = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn conditions<C>(list: Option<&Vec<C>>, fields: impl Fn(&C) -> ConditionFields) -> Vec<Condition> {
    list.into_iter()
        .flatten()
        .map(|c| {
            let (kind, status, reason, message) = fields(c);
            Condition {
                kind: kind.unwrap_or_default(),
                status: status.unwrap_or_default(),
                reason,
                message,
            }
        })
        .collect()
}

/// A workload as the tools describe it.
#[derive(Debug, Clone)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub name: String,
    pub uid: Option<String>,
    pub created: Option<DateTime<Utc>>,
    /// Pods wanted (a DaemonSet: the nodes it should run on).
    pub desired: i32,
    pub ready: i32,
    /// Pods running the current template, when the API reports it.
    pub updated: Option<i32>,
    pub available: Option<i32>,
    /// A Deployment whose rollouts are paused (a restart waits for the resume).
    pub paused: bool,
    /// `RollingUpdate`, `Recreate` or `OnDelete` (an `OnDelete` restart waits for pod deletion).
    pub strategy: Option<String>,
    pub template: PodTemplateSpec,
    pub conditions: Vec<Condition>,
}

fn base(kind: WorkloadKind, meta: &ObjectMeta, template: &PodTemplateSpec) -> Workload {
    Workload {
        kind,
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone(),
        created: meta.creation_timestamp.as_ref().and_then(|t| time(&t.0)),
        desired: 0,
        ready: 0,
        updated: None,
        available: None,
        paused: false,
        strategy: None,
        template: template.clone(),
        conditions: Vec::new(),
    }
}

impl From<&Deployment> for Workload {
    fn from(d: &Deployment) -> Workload {
        let mut w = base(WorkloadKind::Deployment, &d.metadata, &d.spec.template);
        let status = d.status.as_ref();
        w.desired = d.spec.replicas.unwrap_or(1);
        w.ready = status.and_then(|s| s.ready_replicas).unwrap_or(0);
        w.updated = Some(status.and_then(|s| s.updated_replicas).unwrap_or(0));
        w.available = Some(status.and_then(|s| s.available_replicas).unwrap_or(0));
        w.paused = d.spec.paused.unwrap_or(false);
        w.strategy = d.spec.strategy.as_ref().and_then(|s| s.type_.clone());
        w.conditions = conditions(status.and_then(|s| s.conditions.as_ref()), |c| {
            (
                c.type_.clone(),
                c.status.clone(),
                c.reason.clone(),
                c.message.clone(),
            )
        });
        w
    }
}

impl From<&StatefulSet> for Workload {
    fn from(s: &StatefulSet) -> Workload {
        let mut w = base(WorkloadKind::StatefulSet, &s.metadata, &s.spec.template);
        let status = s.status.as_ref();
        w.desired = s.spec.replicas.unwrap_or(1);
        w.ready = status.and_then(|s| s.ready_replicas).unwrap_or(0);
        w.updated = Some(status.and_then(|s| s.updated_replicas).unwrap_or(0));
        w.available = Some(status.and_then(|s| s.available_replicas).unwrap_or(0));
        w.strategy = s
            .spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.type_.clone());
        w.conditions = conditions(status.and_then(|s| s.conditions.as_ref()), |c| {
            (
                c.type_.clone(),
                c.status.clone(),
                c.reason.clone(),
                c.message.clone(),
            )
        });
        w
    }
}

impl From<&DaemonSet> for Workload {
    fn from(d: &DaemonSet) -> Workload {
        let mut w = base(WorkloadKind::DaemonSet, &d.metadata, &d.spec.template);
        let status = d.status.as_ref();
        w.desired = status.map_or(0, |s| s.desired_number_scheduled);
        w.ready = status.map_or(0, |s| s.number_ready);
        w.updated = status.and_then(|s| s.updated_number_scheduled);
        w.available = status.and_then(|s| s.number_available);
        w.strategy = d
            .spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.type_.clone());
        w.conditions = conditions(status.and_then(|s| s.conditions.as_ref()), |c| {
            (
                c.type_.clone(),
                c.status.clone(),
                c.reason.clone(),
                c.message.clone(),
            )
        });
        w
    }
}

impl Workload {
    /// Every pod it wants is ready.
    pub fn is_ready(&self) -> bool {
        self.ready >= self.desired
    }

    /// The images of its containers (init containers first), in template order.
    pub fn images(&self) -> Vec<String> {
        let Some(spec) = &self.template.spec else {
            return Vec::new();
        };
        spec.init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
            .filter_map(|c| c.image.clone())
            .collect()
    }

    /// The time of its last `kubectl rollout restart` (the pod-template annotation), if any.
    pub fn restarted_at(&self) -> Option<&str> {
        self.template
            .metadata
            .as_ref()?
            .annotations
            .as_ref()?
            .get(RESTARTED_AT)
            .map(String::as_str)
    }
}

/// A Kubernetes timestamp as the rest of the server keeps time.
pub fn time(ts: &k8s_openapi::jiff::Timestamp) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(ts.as_second(), u32::try_from(ts.subsec_nanosecond()).ok()?)
}

/// A UID as Kubernetes makes them (a UUID): anything else from the API server is refused
/// rather than shown or re-sent.
pub fn is_uid(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 64
        && value.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_named_exactly_as_kubernetes_names_them() {
        for kind in WorkloadKind::ALL {
            assert_eq!(WorkloadKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(WorkloadKind::parse("deployment"), None);
        assert_eq!(WorkloadKind::parse("Pod"), None);
        assert!(is_uid("0b5e6c1a-7f2d-4a7e-9c3b-2f1d6e8a9b10"));
        assert!(!is_uid("uid</user_content>") && !is_uid(""));
    }
}

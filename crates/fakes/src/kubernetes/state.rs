//! What the fake cluster remembers: its objects (a restart changes a workload's template), the
//! restarts and dry runs it accepted, and every request it held against the client — one that
//! touched a Secret or a ConfigMap, or a body the test's decoder refused. Requests, injected
//! failures and delays are the scaffold's ([`crate::http`]).

use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use super::seed::Seed;

/// Decodes a request body into the client library's own types (the tests give k8s-openapi's):
/// `resource` is the plural the request names (`deployments`). `Err` refuses the body with 400.
pub type BodyCheck = fn(resource: &str, body: &[u8]) -> Result<(), String>;

/// A restart patch the fake accepted (or validated, for a dry run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restart {
    /// `Deployment`, `StatefulSet` or `DaemonSet`.
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The UID of the object the patch changed.
    pub uid: String,
    /// The `kubectl.kubernetes.io/restartedAt` value it set.
    pub restarted_at: String,
    /// The patch as received.
    pub body: String,
}

#[derive(Debug, Default)]
pub(crate) struct Data {
    /// Namespaced objects with their resource plural.
    pub objects: Vec<(String, Value)>,
    pub nodes: Vec<Value>,
    pub granted: Vec<String>,
    /// Nodes answer 403, as they do for a service account with only namespaced grants.
    pub nodes_forbidden: bool,
    pub restarts: Vec<Restart>,
    pub dry_runs: Vec<Restart>,
    /// `METHOD path` of every request that touched a Secret or a ConfigMap.
    pub forbidden_touches: Vec<String>,
    /// Why each refused body was refused.
    pub rejected_bodies: Vec<String>,
    pub body_check: Option<BodyCheck>,
    pub next_uid: u64,
    pub resource_version: u64,
}

/// Shared between the HTTP task and the handle.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    data: Mutex<Data>,
}

impl Shared {
    pub fn new(seed: Seed) -> Shared {
        Shared {
            data: Mutex::new(Data {
                objects: seed.objects,
                nodes: seed.nodes,
                granted: seed.granted,
                nodes_forbidden: true,
                next_uid: 1 << 40,
                resource_version: 1000,
                ..Data::default()
            }),
        }
    }

    /// The data; a panic elsewhere while holding the lock leaves it usable (it is a fake).
    pub fn lock(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Data {
    /// The objects of `resource` in `namespace`, in seed order.
    pub fn list(&self, resource: &str, namespace: &str) -> Vec<&Value> {
        self.objects
            .iter()
            .filter(|(r, o)| r == resource && o["metadata"]["namespace"] == namespace)
            .map(|(_, o)| o)
            .collect()
    }

    pub fn find_mut(&mut self, resource: &str, namespace: &str, name: &str) -> Option<&mut Value> {
        self.objects
            .iter_mut()
            .find(|(r, o)| {
                r == resource
                    && o["metadata"]["namespace"] == namespace
                    && o["metadata"]["name"] == name
            })
            .map(|(_, o)| o)
    }

    pub fn next_resource_version(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }
}

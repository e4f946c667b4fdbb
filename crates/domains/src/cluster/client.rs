//! The Kubernetes client: the real `kube::Client` (it builds its own HTTP stack: rustls with
//! ring, no proxy, no retries), every call bounded by the kit's [`deadline`] with the kit's
//! failure mapping. Reads can only name the resources of [`Readable`]; the one write, the
//! restart's pod-template patch, takes the pipeline's permit. A server-side dry run of the same
//! patch (`dryRun=All`) needs none: the API server validates it and persists nothing.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Node, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use care_core::error::{ErrorCode, ToolError};
use care_core::pipeline::WritePermit;
use care_core::rotation::RotatingSecret;

use super::access::Readable;
use super::failure::KubeFailure;
use super::workload::{RESTARTED_AT, WorkloadKind, is_uid};
use crate::kit::{Limits, deadline};

/// Objects asked for per page.
pub const PAGE_SIZE: u32 = 250;
/// Pages read at most per list; past them the list says it was cut.
pub const MAX_PAGES: usize = 8;
/// Who the API server records as having made the restart (`managedFields`).
pub const FIELD_MANAGER: &str = "care-mcp";

/// Objects of one list, and whether more were left unread.
#[derive(Debug, Clone)]
pub struct Listed<K> {
    pub items: Vec<K>,
    pub truncated: bool,
}

/// What a list asks the API server to filter.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// A field selector such as `type=Warning`.
    pub fields: Option<String>,
}

/// The workload a restart patches: by kind, namespace and name, and only while it is the
/// object with this UID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartTarget {
    pub kind: WorkloadKind,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// What the API server answered to a restart patch (or its dry run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restarted {
    pub uid: String,
    pub restarted_at: String,
    pub generation: Option<i64>,
}

/// A client of one cluster. kube's client is built on first use (inside the runtime, and so
/// a role's start does not wait for TLS roots it may never need), and again whenever the bearer
/// token file holds a new token: the new token is in the outbound scan before it is sent.
pub struct ClusterClient {
    config: kube::Config,
    token: Option<Arc<RotatingSecret>>,
    /// kube's client and the token generation it sends.
    client: Mutex<Option<(u64, kube::Client)>>,
    bound: Duration,
}

impl std::fmt::Debug for ClusterClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterClient")
            .field("bound", &self.bound)
            .field("built", &self.built().is_some())
            .finish_non_exhaustive()
    }
}

fn malformed(what: &str) -> ToolError {
    ToolError::new(ErrorCode::UpstreamUnavailable)
        .with_detail(format!("kubernetes {what}: answer not understood"))
}

/// The strategic merge patch `kubectl rollout restart` sends, plus the UID as a precondition:
/// the API server refuses it (409) for any other object of the same name.
pub fn restart_patch(uid: &str, at: &str) -> Value {
    json!({
        "metadata": { "uid": uid },
        "spec": { "template": { "metadata": { "annotations": { RESTARTED_AT: at } } } },
    })
}

impl ClusterClient {
    /// `token`: the bearer token file to send (see [`ClusterConfig`](super::ClusterConfig)),
    /// `None` when kube authenticates from the kubeconfig.
    pub fn new(config: kube::Config, token: Option<Arc<RotatingSecret>>) -> Self {
        ClusterClient {
            config,
            token,
            client: Mutex::new(None),
            bound: Limits::default().total_timeout,
        }
    }

    fn built(&self) -> std::sync::MutexGuard<'_, Option<(u64, kube::Client)>> {
        self.client.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// kube's client, sending the token file's current value: built once per token.
    async fn kube(&self) -> Result<kube::Client, ToolError> {
        // Reading the token teaches a new value to the outbound scan before it is sent.
        let credential = self.token.as_ref().map(|t| t.current()).transpose()?;
        let generation = credential.as_ref().map_or(0, |c| c.generation);
        let mut built = self.built();
        if let Some((g, client)) = built.as_ref()
            && *g == generation
        {
            return Ok(client.clone());
        }
        let mut config = self.config.clone();
        if let Some(credential) = credential {
            config.auth_info.token = Some(credential.value);
        }
        // kube is built without a default crypto provider (no aws-lc): use ring, unless the
        // process already chose one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = kube::Client::try_from(config).map_err(|e| {
            // Not an answer of the API server: the local configuration (TLS files).
            ToolError::new(ErrorCode::UpstreamUnavailable)
                .with_detail(format!("kubernetes client not built: {e}"))
        })?;
        *built = Some((generation, client.clone()));
        Ok(client)
    }

    /// One call under the kit's bound, its failure mapped once. A 401 tells the token file's
    /// credential it was refused (a stale one is dropped; see `care_core::rotation`).
    async fn call<T>(
        &self,
        what: &str,
        operation: impl Future<Output = Result<T, KubeFailure>>,
    ) -> Result<T, ToolError> {
        let generation = self.built().as_ref().map_or(0, |(g, _)| *g);
        let operation = async {
            let answer = operation.await;
            if let (Err(failure), Some(token)) = (&answer, &self.token)
                && failure.status == Some(401)
            {
                token.refused(generation);
            }
            answer
        };
        deadline(&format!("kubernetes {what}"), self.bound, operation, |f| {
            f.code
        })
        .await
    }

    /// Every `K` in `namespace` (up to [`MAX_PAGES`] pages of [`PAGE_SIZE`]).
    pub async fn list<K: Readable>(
        &self,
        namespace: &str,
        query: &Query,
    ) -> Result<Listed<K>, ToolError> {
        let api: Api<K> = Api::namespaced(self.kube().await?, namespace);
        let what = format!("list {} in {namespace}", K::ACCESS.resource);
        self.call(&what, pages(&api, query)).await
    }

    /// One `K` by name; NOT_FOUND when there is none.
    pub async fn get<K: Readable>(&self, namespace: &str, name: &str) -> Result<K, ToolError> {
        let api: Api<K> = Api::namespaced(self.kube().await?, namespace);
        let what = format!("get {} {namespace}/{name}", K::ACCESS.resource);
        self.call(&what, async {
            Box::pin(api.get(name)).await.map_err(KubeFailure::from)
        })
        .await
    }

    /// The cluster's nodes. Cluster-scoped: a namespaced grant cannot reach them, so a refusal
    /// is expected and handed back as it is (the inner result) for the caller to explain; the
    /// outer error is the kit's bound running out.
    pub async fn nodes(&self) -> Result<Result<Listed<Node>, KubeFailure>, ToolError> {
        let api: Api<Node> = Api::all(self.kube().await?);
        self.call("list nodes", async {
            Ok::<_, KubeFailure>(pages(&api, &Query::default()).await)
        })
        .await
    }

    /// Restarts the workload: one strategic merge patch of its pod template, only with the
    /// permit of a consumed approval for exactly this restart.
    pub async fn restart(
        &self,
        _permit: &WritePermit<'_>,
        target: &RestartTarget,
        at: &str,
    ) -> Result<Restarted, ToolError> {
        self.patch_template(target, at, false).await
    }

    /// The same patch as a server-side dry run (`dryRun=All`): validated and admitted by the
    /// API server, never persisted.
    pub async fn restart_dry_run(
        &self,
        target: &RestartTarget,
        at: &str,
    ) -> Result<Restarted, ToolError> {
        self.patch_template(target, at, true).await
    }

    async fn patch_template(
        &self,
        target: &RestartTarget,
        at: &str,
        dry_run: bool,
    ) -> Result<Restarted, ToolError> {
        let patch = restart_patch(&target.uid, at);
        let params = PatchParams {
            dry_run,
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let (meta, template) = match target.kind {
            WorkloadKind::Deployment => {
                let d: Deployment = self.patch(target, &params, &patch).await?;
                (d.metadata, d.spec.template)
            }
            WorkloadKind::StatefulSet => {
                let s: StatefulSet = self.patch(target, &params, &patch).await?;
                (s.metadata, s.spec.template)
            }
            WorkloadKind::DaemonSet => {
                let d: DaemonSet = self.patch(target, &params, &patch).await?;
                (d.metadata, d.spec.template)
            }
        };
        restarted(&meta, &template, at).ok_or_else(|| malformed("restart"))
    }

    async fn patch<K: Readable>(
        &self,
        target: &RestartTarget,
        params: &PatchParams,
        patch: &Value,
    ) -> Result<K, ToolError> {
        let api: Api<K> = Api::namespaced(self.kube().await?, &target.namespace);
        let what = format!(
            "patch {} {}/{}{}",
            K::ACCESS.resource,
            target.namespace,
            target.name,
            if params.dry_run { " (dry run)" } else { "" }
        );
        self.call(&what, async {
            Box::pin(api.patch(&target.name, params, &Patch::Strategic(patch)))
                .await
                .map_err(KubeFailure::from)
        })
        .await
    }
}

/// The patched object's UID and annotation, which must be the ones asked for.
fn restarted(meta: &ObjectMeta, template: &PodTemplateSpec, at: &str) -> Option<Restarted> {
    let uid = meta.uid.clone().filter(|u| is_uid(u))?;
    let restarted_at = template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(RESTARTED_AT)
        .filter(|v| *v == at)?
        .clone();
    Some(Restarted {
        uid,
        restarted_at,
        generation: meta.generation,
    })
}

/// Reads up to [`MAX_PAGES`] pages of a list. kube's request futures are boxed here and in
/// `get` and `patch`: inline, they made each cluster tool's future about 90 KiB (massif, release
/// build), moved on the stack as it was built (an `ops` session's stack held 312 KiB against
/// 184 boxed; bench/roles, README "Memory account").
async fn pages<K>(api: &Api<K>, query: &Query) -> Result<Listed<K>, KubeFailure>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut params = ListParams::default().limit(PAGE_SIZE);
    if let Some(fields) = &query.fields {
        params = params.fields(fields);
    }
    let mut items = Vec::new();
    for _ in 0..MAX_PAGES {
        let page = Box::pin(api.list(&params))
            .await
            .map_err(KubeFailure::from)?;
        items.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => {
                return Ok(Listed {
                    items,
                    truncated: false,
                });
            }
        }
    }
    Ok(Listed {
        items,
        truncated: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_is_kubectls_with_the_uid_as_precondition() {
        assert_eq!(
            restart_patch(
                "0b5e6c1a-0000-4000-8000-000000000001",
                "2026-12-01T10:00:00Z"
            ),
            json!({
                "metadata": {"uid": "0b5e6c1a-0000-4000-8000-000000000001"},
                "spec": {"template": {"metadata": {"annotations": {
                    "kubectl.kubernetes.io/restartedAt": "2026-12-01T10:00:00Z"
                }}}}
            })
        );
    }
}

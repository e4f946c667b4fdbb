//! What the cluster tools share: the configuration, the client, and the scope rule — a call
//! naming a namespace outside `CARE_KUBE_NAMESPACES` is SCOPE_DENIED before any request, and
//! the answer never names the allowed ones. Also the reads several tools make alike: a
//! namespace's workloads, one workload, and which workload each pod belongs to.

use std::collections::HashMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::Pod;

use care_core::decision::{self, Rule};
use care_core::error::{ErrorCode, ToolError};

use super::client::{ClusterClient, Listed, Query};
use super::config::ClusterConfig;
use super::view::Owner;
use super::workload::{Workload, WorkloadKind};

/// Shared by the five tools of one process.
#[derive(Debug)]
pub struct ClusterContext {
    pub config: ClusterConfig,
    pub client: ClusterClient,
}

impl ClusterContext {
    pub fn new(config: ClusterConfig, client: ClusterClient) -> Self {
        ClusterContext { config, client }
    }

    /// SCOPE_DENIED unless `namespace` is allowlisted.
    pub fn require_namespace(&self, namespace: &str) -> Result<(), ToolError> {
        if self.config.allows(namespace) {
            decision::passed(Rule::Scope);
            Ok(())
        } else {
            Err(ToolError::new(ErrorCode::ScopeDenied)
                .with_detail("namespace not in CARE_KUBE_NAMESPACES"))
        }
    }

    /// The Deployments, StatefulSets and DaemonSets of a namespace, by kind then name; and
    /// whether a list was cut.
    pub async fn workloads(&self, namespace: &str) -> Result<Listed<Workload>, ToolError> {
        let none = Query::default();
        let (deployments, statefulsets, daemonsets) = tokio::try_join!(
            self.client.list::<Deployment>(namespace, &none),
            self.client.list::<StatefulSet>(namespace, &none),
            self.client.list::<DaemonSet>(namespace, &none),
        )?;
        let mut items: Vec<Workload> = deployments.items.iter().map(Workload::from).collect();
        items.extend(statefulsets.items.iter().map(Workload::from));
        items.extend(daemonsets.items.iter().map(Workload::from));
        Ok(Listed {
            items,
            truncated: deployments.truncated || statefulsets.truncated || daemonsets.truncated,
        })
    }

    /// One workload; NOT_FOUND when the namespace has no such workload of that kind.
    pub async fn workload(
        &self,
        namespace: &str,
        kind: WorkloadKind,
        name: &str,
    ) -> Result<Workload, ToolError> {
        let c = &self.client;
        Ok(match kind {
            WorkloadKind::Deployment => {
                Workload::from(&c.get::<Deployment>(namespace, name).await?)
            }
            WorkloadKind::StatefulSet => {
                Workload::from(&c.get::<StatefulSet>(namespace, name).await?)
            }
            WorkloadKind::DaemonSet => Workload::from(&c.get::<DaemonSet>(namespace, name).await?),
        })
    }

    /// The workload each pod belongs to, by pod name: a StatefulSet or DaemonSet owns its pods
    /// directly, a Deployment through a ReplicaSet (listed only when some pod has one).
    pub async fn owners(
        &self,
        namespace: &str,
        pods: &[Pod],
    ) -> Result<HashMap<String, Owner>, ToolError> {
        let controller = |refs: Option<&Vec<_>>| {
            refs.into_iter()
                .flatten()
                .find(
                    |r: &&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference| {
                        r.controller == Some(true)
                    },
                )
                .map(|r| (r.kind.clone(), r.name.clone()))
        };
        let needs_replicasets = pods.iter().any(|p| {
            controller(p.metadata.owner_references.as_ref()).is_some_and(|(k, _)| k == "ReplicaSet")
        });
        let deployment_of: HashMap<String, String> = if needs_replicasets {
            let sets = self
                .client
                .list::<ReplicaSet>(namespace, &Query::default())
                .await?;
            sets.items
                .iter()
                .filter_map(|rs| {
                    let (kind, owner) = controller(rs.metadata.owner_references.as_ref())?;
                    let name = rs.metadata.name.clone()?;
                    (kind == "Deployment").then_some((name, owner))
                })
                .collect()
        } else {
            HashMap::new()
        };
        Ok(pods
            .iter()
            .filter_map(|pod| {
                let (kind, name) = controller(pod.metadata.owner_references.as_ref())?;
                let owner = match kind.as_str() {
                    "ReplicaSet" => Owner {
                        kind: WorkloadKind::Deployment,
                        name: deployment_of.get(&name)?.clone(),
                    },
                    other => Owner {
                        kind: WorkloadKind::parse(other)?,
                        name,
                    },
                };
                Some((pod.metadata.name.clone()?, owner))
            })
            .collect())
    }
}

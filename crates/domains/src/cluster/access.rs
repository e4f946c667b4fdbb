//! What each cluster tool may touch in the API, declared once: the RBAC manifests in `deploy/`
//! are checked against it (a role is granted exactly what its tools need), the tests check
//! every request the tools make against it, and the client can only name these resources
//! ([`Readable`] is sealed). Secrets and ConfigMaps are not among them: no tool reads them.

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Event, Pod};
use serde::de::DeserializeOwned;

/// One namespaced resource: its API group (`""` is the core group) and its plural name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiResource {
    pub group: &'static str,
    pub resource: &'static str,
}

const fn res(group: &'static str, resource: &'static str) -> ApiResource {
    ApiResource { group, resource }
}

pub const PODS: ApiResource = res("", "pods");
pub const EVENTS: ApiResource = res("", "events");
pub const DEPLOYMENTS: ApiResource = res("apps", "deployments");
pub const STATEFULSETS: ApiResource = res("apps", "statefulsets");
pub const DAEMONSETS: ApiResource = res("apps", "daemonsets");
pub const REPLICASETS: ApiResource = res("apps", "replicasets");

/// The workloads (read by several tools, restarted by one).
pub const WORKLOADS: &[ApiResource] = &[DEPLOYMENTS, STATEFULSETS, DAEMONSETS];

/// The verbs a read is granted: what `kubectl get` needs (watch included, as is customary for
/// read-only roles, though the tools only get and list).
pub const READ_VERBS: &[&str] = &["get", "list", "watch"];
/// The verb a restart needs: a strategic merge patch of the pod template.
pub const WRITE_VERBS: &[&str] = &["patch"];

/// The cluster-scoped resource the overview reads when it may. A namespaced Role cannot grant
/// it, and the manifests deliberately grant no ClusterRole: the overview answers `nodes: null`.
pub const NODES: ApiResource = res("", "nodes");

/// What one tool reads and patches in the allowed namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolAccess {
    pub reads: &'static [ApiResource],
    pub patches: &'static [ApiResource],
    /// Cluster-scoped reads tried without a grant (a refusal is a partial result).
    pub cluster_reads: &'static [ApiResource],
}

/// The access of each cluster tool, by catalog name; `None` for any other name.
pub fn of_tool(tool: &str) -> Option<ToolAccess> {
    let access = |reads, patches, cluster_reads| ToolAccess {
        reads,
        patches,
        cluster_reads,
    };
    Some(match tool {
        "cluster_overview" => access(
            &[DEPLOYMENTS, STATEFULSETS, DAEMONSETS, PODS, EVENTS][..],
            &[][..],
            &[NODES][..],
        ),
        "cluster_workloads" => access(WORKLOADS, &[], &[]),
        "cluster_pods" => access(&[PODS, REPLICASETS][..], &[], &[]),
        "cluster_events" => access(&[EVENTS][..], &[], &[]),
        "cluster_restart_workload" => access(WORKLOADS, WORKLOADS, &[]),
        _ => return None,
    })
}

mod sealed {
    pub trait Sealed {}
}

/// A namespaced resource the client may get and list: exactly the ones in [`of_tool`].
pub trait Readable:
    kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
    + sealed::Sealed
{
    /// Its entry in the access table.
    const ACCESS: ApiResource;
}

macro_rules! readable {
    ($($ty:ty => $access:expr),* $(,)?) => {$(
        impl sealed::Sealed for $ty {}
        impl Readable for $ty {
            const ACCESS: ApiResource = $access;
        }
    )*};
}

readable! {
    Pod => PODS,
    Event => EVENTS,
    Deployment => DEPLOYMENTS,
    StatefulSet => STATEFULSETS,
    DaemonSet => DAEMONSETS,
    ReplicaSet => REPLICASETS,
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    use k8s_openapi::Resource;

    fn matches<T: Readable + Resource>() -> bool {
        T::ACCESS.group == <T as Resource>::GROUP
            && T::ACCESS.resource == <T as Resource>::URL_PATH_SEGMENT
    }

    #[test]
    fn the_table_names_the_types_the_client_reads() {
        assert!(matches::<Pod>() && matches::<Event>() && matches::<Deployment>());
        assert!(matches::<StatefulSet>() && matches::<DaemonSet>() && matches::<ReplicaSet>());
        for tool in care_core::catalog::CATALOG
            .iter()
            .filter(|e| e.domain == care_core::catalog::Domain::Kubernetes)
        {
            let access = of_tool(tool.name).expect("every cluster tool has an access row");
            let writes = tool.kind == care_core::catalog::ToolKind::ExternalWrite;
            assert_eq!(!access.patches.is_empty(), writes, "{}", tool.name);
            for r in access.reads.iter().chain(access.patches) {
                assert!(!["secrets", "configmaps"].contains(&r.resource));
            }
        }
        assert_eq!(of_tool("asc_review_reply"), None);
    }
}

//! Kubernetes: namespace-scoped cluster status and the gated workload restart (issue 11).
//!
//! # Layout
//! - [`config`]: `CARE_KUBE_NAMESPACES`, `CARE_CLUSTER_WRITE`, and the API server
//!   (`CARE_KUBE_API_URL`, `KUBECONFIG` or the pod's service account).
//! - [`access`]: what each tool may read and patch, declared once (the RBAC in `deploy/` is
//!   checked against it); the client can name nothing else, Secrets and ConfigMaps least of all.
//! - [`client`]: the real `kube::Client` under the kit's deadline; [`failure`]: its errors.
//! - [`workload`]: Deployments, StatefulSets and DaemonSets read alike.
//! - [`view`] and [`sources`]: the answers, cluster text fenced, configuration sources as names.
//! - [`context`]: what the tools share, and the namespace scope rule.
//! - [`tools`]: the five tools.
//!
//! [`register`] is the domain's one entry point (see `crate::DOMAINS`): the server calls it only
//! for a role holding Kubernetes tools (lead, ops); it reads the configuration (a missing or bad
//! one stops the start with the reasons, never the values), declares the credentials it read
//! and registers the tools (kube's client itself is built on the first call).

pub mod access;
pub mod client;
pub mod config;
pub mod context;
pub mod failure;
pub mod sources;
pub mod tools;
pub mod view;
pub mod workload;

use std::sync::Arc;

use care_core::env::EnvReader;
use care_core::registrar::Registrar;

pub use config::ClusterConfig;
pub use context::ClusterContext;

/// Registers the five tools (the registry keeps the ones the role holds).
pub fn register(registrar: &mut Registrar, env: &mut EnvReader<'_>) {
    let Some(config) = ClusterConfig::read(env) else {
        return;
    };
    for secret in &config.secrets {
        registrar.secret(secret);
    }
    if let Some(token) = &config.token {
        registrar.rotating_secret(token);
    }
    let client = client::ClusterClient::new(config.kube.clone(), config.token.clone());
    let cluster = Arc::new(ClusterContext::new(config, client));
    let c = || Arc::clone(&cluster);
    registrar.read(tools::overview::Overview(c()));
    registrar.read(tools::workloads::Workloads(c()));
    registrar.read(tools::pods::Pods(c()));
    registrar.read(tools::events::Events(c()));
    registrar.write(tools::restart::RestartWorkload(c()));
}

//! The Kubernetes fake as one of the sandbox's upstreams: its role environment (the token
//! written beside it, the demo namespaces, the cluster write switch on so the demo can restart)
//! and the restarts it accepted, as `sandbox show-sent` lists them.

use std::path::Path;

use super::FakeKube;
use super::seed::{DEMO_NAMESPACES, demo_seed};
use crate::http::FakeServer;
use crate::upstream::{ReceivedWrite, StartFailed, Upstream};

/// The demo cluster, as `crate::start_demo_upstreams` starts it.
pub fn start_demo() -> Result<FakeKube, StartFailed> {
    FakeKube::start(demo_seed()).map_err(|e| StartFailed {
        upstream: "kubernetes",
        reason: e.to_string(),
    })
}

impl Upstream for FakeKube {
    fn name(&self) -> &'static str {
        "kubernetes"
    }

    fn title(&self) -> &'static str {
        "Kubernetes"
    }

    fn server(&self) -> Option<&FakeServer> {
        Some(&self.server)
    }

    /// `CARE_KUBE_*` for the demo namespaces, the token written as `dir/kube-token`, and
    /// `CARE_CLUSTER_WRITE=1` (the sandbox lets an approved restart go out).
    fn role_env(&self, dir: &Path) -> std::io::Result<Vec<(String, String)>> {
        let token_file = self.write_token(dir)?;
        let mut env = self.env(&token_file, &DEMO_NAMESPACES);
        env.push(("CARE_CLUSTER_WRITE".into(), "1".into()));
        Ok(env)
    }

    fn received_writes(&self) -> Vec<ReceivedWrite> {
        self.restarts()
            .into_iter()
            .map(|r| ReceivedWrite {
                target: format!(
                    "{} {}/{} (uid {}) restarted",
                    r.kind, r.namespace, r.name, r.uid
                ),
                text: r.body,
            })
            .collect()
    }
}

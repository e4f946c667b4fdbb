//! A fake Kubernetes API server over real HTTP on `127.0.0.1`, for the real `kube::Client`.
//!
//! It checks the service account's bearer token on every request, serves the core/v1 and apps/v1
//! reads the cluster tools make (JSON as the API server writes it, lists paged), applies the
//! RBAC of `deploy/` (reads in the granted namespaces, patch on workloads, nothing on Secrets
//! and ConfigMaps, 403 on nodes) and answers every error with a proper `Status` document. The
//! one write it accepts is the restart patch (strategic merge, `restartedAt`), with
//! `dryRun=All` and a UID precondition honoured. Every request that touches a Secret or a
//! ConfigMap, and every body the test's decoder ([`BodyCheck`]) refuses, is kept, so a harness
//! can fail the test on it. Recording, injected failures ([`Failure`]) and delays are the
//! shared scaffold's ([`crate::http`]).

mod dialect;
pub mod objects;
mod routes;
mod seed;
mod state;
mod upstream;

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;

pub use crate::http::{Failure, RecordedRequest};
use crate::http::{FakeServer, ServeError};
pub use dialect::status_body;
pub use routes::{RESTARTED_AT, STRATEGIC_MERGE};
pub use seed::{
    CONFIGMAP_VALUE, CRASH_LOOP, DEMO_NAMESPACES, FORBIDDEN_NAMESPACES, HOSTILE_EVENT_MESSAGE,
    LITERAL_ENV_VALUE, SECRET_VALUE, Seed, demo_seed,
};
use state::Shared;
pub use state::{BodyCheck, Restart};
pub use upstream::start_demo;

/// The service account the fake's RBAC messages name.
const USER: &str = "system:serviceaccount:care-mcp:care-mcp-ops";

/// A running fake API server; stops when dropped.
#[derive(Debug)]
pub struct FakeKube {
    server: FakeServer,
    shared: Arc<Shared>,
    /// The one token accepted, shared with the dialect (a rotation replaces it).
    token: Arc<RwLock<String>>,
}

fn new_token() -> String {
    format!("sk-demo-kube-sa-token-{}", uuid::Uuid::new_v4().simple())
}

impl FakeKube {
    /// Starts a fake cluster holding `seed`, with a fresh service account token.
    pub fn start(seed: Seed) -> Result<FakeKube, ServeError> {
        let token = Arc::new(RwLock::new(new_token()));
        let shared = Arc::new(Shared::new(seed));
        let app_state = Arc::clone(&shared);
        let dialect = dialect::KubeDialect {
            token: Arc::clone(&token),
        };
        let server = FakeServer::start("kubernetes", dialect, |_base_url| {
            let app = Arc::new(routes::App {
                shared: app_state,
                user: USER.to_owned(),
            });
            axum::Router::new().fallback(routes::handle).with_state(app)
        })?;
        Ok(FakeKube {
            server,
            shared,
            token,
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.server.base_url()
    }

    /// The service account token the fake accepts now.
    pub fn token(&self) -> String {
        self.token
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The token rotates (a projected token's refresh, or a new service account Secret): a
    /// new one is accepted from now on and the old one answers 401. Returns the new token.
    pub fn rotate_token(&self) -> String {
        let fresh = new_token();
        *self.token.write().unwrap_or_else(PoisonError::into_inner) = fresh.clone();
        fresh
    }

    /// Writes the token as `dir/kube-token` (mode 0600, no newline, like a service account's
    /// token file), as `CARE_KUBE_TOKEN_FILE` wants it.
    pub fn write_token(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join("kube-token");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(self.token().as_bytes())?;
        Ok(path)
    }

    /// The environment a care-mcp role needs to use this fake: `CARE_KUBE_API_URL`,
    /// `CARE_KUBE_TOKEN_FILE` (= `token_file`, see [`FakeKube::write_token`]) and
    /// `CARE_KUBE_NAMESPACES` (= `namespaces`). The write switch is the caller's to give.
    pub fn env(&self, token_file: &Path, namespaces: &[&str]) -> Vec<(String, String)> {
        vec![
            ("CARE_KUBE_API_URL".into(), self.base_url().to_owned()),
            (
                "CARE_KUBE_TOKEN_FILE".into(),
                token_file.display().to_string(),
            ),
            ("CARE_KUBE_NAMESPACES".into(), namespaces.join(",")),
        ]
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    pub fn clear_requests(&self) {
        self.server.clear_requests();
    }

    /// Answers matching requests with `failure` (a `Status` document), in injection order.
    pub fn inject(&self, failure: Failure) {
        self.server.inject(failure);
    }

    pub fn clear_failures(&self) {
        self.server.clear_failures();
    }

    /// Answers matching requests `by` later than it would.
    pub fn delay(&self, method: &str, path_prefix: &str, by: Duration) {
        self.server.delay(method, path_prefix, by);
    }

    /// Every restart the fake accepted (not the dry runs), in order.
    pub fn restarts(&self) -> Vec<Restart> {
        self.shared.lock().restarts.clone()
    }

    /// Every dry-run restart the fake validated, in order.
    pub fn dry_runs(&self) -> Vec<Restart> {
        self.shared.lock().dry_runs.clone()
    }

    /// `METHOD path` of every request that touched a Secret or a ConfigMap: a test fails on
    /// any.
    pub fn forbidden_touches(&self) -> Vec<String> {
        self.shared.lock().forbidden_touches.clone()
    }

    /// Why each request body the [`BodyCheck`] refused was refused.
    pub fn rejected_bodies(&self) -> Vec<String> {
        self.shared.lock().rejected_bodies.clone()
    }

    /// Decodes every request body with `check` (a body it refuses is answered 400 and kept).
    pub fn check_bodies_with(&self, check: BodyCheck) {
        self.shared.lock().body_check = Some(check);
    }

    /// Lets the service account list nodes (they answer 403 by default).
    pub fn allow_nodes(&self) {
        self.shared.lock().nodes_forbidden = false;
    }

    /// Adds a namespaced object (`resource` is its plural, e.g. `deployments`).
    pub fn add_object(&self, resource: &str, object: Value) {
        self.shared
            .lock()
            .objects
            .push((resource.to_owned(), object));
    }

    /// The UID of an object, if it exists.
    pub fn uid_of(&self, resource: &str, namespace: &str, name: &str) -> Option<String> {
        let mut data = self.shared.lock();
        let object = data.find_mut(resource, namespace, name)?;
        object["metadata"]["uid"].as_str().map(str::to_owned)
    }

    /// The workload's current pod-template `restartedAt`, if any.
    pub fn restarted_at(&self, resource: &str, namespace: &str, name: &str) -> Option<String> {
        let mut data = self.shared.lock();
        let object = data.find_mut(resource, namespace, name)?;
        object["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT]
            .as_str()
            .map(str::to_owned)
    }

    /// Someone deletes the object and creates it again under the same name: same spec, a new
    /// UID. Returns the new UID.
    pub fn recreate(&self, resource: &str, namespace: &str, name: &str) -> Option<String> {
        let mut data = self.shared.lock();
        data.next_uid += 1;
        let uid = objects::uid(data.next_uid);
        let object = data.find_mut(resource, namespace, name)?;
        object["metadata"]["uid"] = Value::String(uid.clone());
        object["metadata"]["generation"] = Value::from(1);
        Some(uid)
    }
}

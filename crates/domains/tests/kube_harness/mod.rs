//! The Kubernetes domain in process, with the real `kube::Client` against the fake API server
//! over HTTP: the demo cluster, its service account token in a temp file, a temp SQLite
//! ledger, and the five tools plus the ledger tools behind a real `Gate`. The fake decodes
//! every request body into k8s-openapi's types, and dropping the harness fails the test if any
//! request touched a Secret or a ConfigMap or sent a body that did not decode.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/in_process.rs"]
pub mod in_process;

use std::collections::HashMap;
use std::sync::Arc;

use care_core::catalog::Role;
use care_core::env::MapEnv;
use care_core::gate::{Gate, GateAnswer};
use care_core::ledger::Ledger;
use care_core::pipeline::{CheckedPlan, WritePlanner};
use care_core::tool::{CallContext, Services};
use care_fakes::kubernetes::{DEMO_NAMESPACES, FakeKube, RecordedRequest, demo_seed};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use serde_json::{Map, Value, json};

/// Decodes a request body into the k8s-openapi type of the resource it was sent to (the
/// fake's [`care_fakes::kubernetes::BodyCheck`]).
pub fn decode_body(resource: &str, body: &[u8]) -> Result<(), String> {
    let decoded = match resource {
        "deployments" => serde_json::from_slice::<Deployment>(body).map(drop),
        "statefulsets" => serde_json::from_slice::<StatefulSet>(body).map(drop),
        "daemonsets" => serde_json::from_slice::<DaemonSet>(body).map(drop),
        other => return Err(format!("no body is expected for {other}")),
    };
    decoded.map_err(|e| e.to_string())
}

pub struct Harness {
    pub fake: FakeKube,
    pub gate: Gate,
    pub ledger: Arc<dyn Ledger>,
    pub services: Arc<Services>,
    pub planners: Vec<Arc<dyn WritePlanner>>,
    pub role: Role,
    /// `CARE_KUBE_TOKEN_FILE` (mode 0600), for a test that rotates the token.
    pub token_file: std::path::PathBuf,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

pub struct Options {
    pub role: Role,
    pub write_enabled: bool,
    pub cluster_write: bool,
    pub namespaces: Vec<&'static str>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            role: Role::Ops,
            write_enabled: false,
            cluster_write: true,
            namespaces: DEMO_NAMESPACES.to_vec(),
        }
    }
}

pub async fn harness(options: Options) -> Harness {
    let fake = FakeKube::start(demo_seed()).unwrap();
    fake.check_bodies_with(decode_body);
    let token_dir = tempfile::tempdir().unwrap();
    let token_file = fake.write_token(token_dir.path()).unwrap();
    let (url, db_dir) = care_ledger::test_support::temp_sqlite();
    let mut env: HashMap<String, String> = fake
        .env(&token_file, &options.namespaces)
        .into_iter()
        .collect();
    env.insert("DATABASE_URL".into(), url.clone());
    env.insert(
        "CARE_AUDIT_SALT".into(),
        "sk-demo-audit-salt-kube-0001".into(),
    );
    env.insert("CARE_CLIENT_ID".into(), "kube-test".into());
    if options.write_enabled {
        env.insert("CARE_WRITE_ENABLED".into(), "1".into());
    }
    if options.cluster_write {
        env.insert("CARE_CLUSTER_WRITE".into(), "1".into());
    }
    let env = MapEnv(env);
    // The Kubernetes domain alone (the lead role's App Store Connect tools are not under test).
    let built = in_process::build(options.role, &env, care_domains::cluster::register).await;
    Harness {
        fake,
        gate: built.gate,
        ledger: built.ledger,
        services: built.services,
        planners: built.planners,
        role: options.role,
        token_file,
        _dirs: (token_dir, db_dir),
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let touched = self.fake.forbidden_touches();
        assert!(
            touched.is_empty(),
            "requests touched Secrets or ConfigMaps: {touched:?}"
        );
        let rejected = self.fake.rejected_bodies();
        assert!(
            rejected.is_empty(),
            "bodies k8s-openapi could not decode: {rejected:?}"
        );
    }
}

pub type CallResult = Result<Value, (String, Value)>;

/// Text that must never appear in any answer: the token and every value the cluster holds in
/// Secrets, ConfigMaps and literal env.
fn assert_no_secret(envelope: &Value, token: &str) {
    let text = envelope.to_string();
    for secret in [
        token,
        care_fakes::kubernetes::SECRET_VALUE,
        care_fakes::kubernetes::CONFIGMAP_VALUE,
        care_fakes::kubernetes::LITERAL_ENV_VALUE,
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

impl Harness {
    /// Calls a tool; `Ok(data)` or `Err((code, error))`. Every answer is checked for leaks and
    /// for the fixed error sentence.
    pub async fn call(&self, tool: &str, arguments: Value) -> CallResult {
        let args: Map<String, Value> = arguments.as_object().unwrap().clone();
        match self.gate.call(tool, Some(args)).await {
            GateAnswer::UnknownTool => panic!("{tool} unknown"),
            GateAnswer::Result {
                envelope, is_error, ..
            } => {
                assert_no_secret(&envelope, &self.fake.token());
                if is_error {
                    let error = envelope["error"].clone();
                    let code = error["code"].as_str().unwrap().to_owned();
                    let fixed = care_core::error::ErrorCode::ALL
                        .into_iter()
                        .find(|c| c.as_str() == code)
                        .unwrap()
                        .message();
                    assert_eq!(error["message"], fixed, "{error}");
                    Err((code, error))
                } else {
                    Ok(envelope["data"].clone())
                }
            }
        }
    }

    pub async fn ok(&self, tool: &str, arguments: Value) -> Value {
        match self.call(tool, arguments.clone()).await {
            Ok(data) => data,
            Err((code, e)) => panic!("{tool} {arguments} failed with {code}: {e}"),
        }
    }

    pub async fn err(&self, tool: &str, arguments: Value) -> String {
        match self.call(tool, arguments.clone()).await {
            Ok(data) => panic!("{tool} {arguments} succeeded: {data}"),
            Err((code, _)) => code,
        }
    }

    /// What `approval_request` checks and would put on the card, for these arguments.
    pub async fn plan(&self, arguments: Value) -> Result<CheckedPlan, String> {
        let ctx = CallContext {
            role: self.role,
            client: "kube-test".into(),
            session: "s-kube-test".into(),
            now: chrono::Utc::now(),
        };
        self.planners[0]
            .check(&ctx, arguments.as_object().unwrap())
            .await
            .map_err(|e| e.code.as_str().to_owned())
    }

    pub async fn request_approval(&self, arguments: Value) -> (String, Value) {
        let data = self
            .ok(
                "approval_request",
                json!({"action": "cluster_restart_workload", "arguments": arguments}),
            )
            .await;
        (data["approval_id"].as_str().unwrap().to_owned(), data)
    }

    pub async fn approve(&self, id: &str) {
        in_process::approve(&self.services, self.ledger.as_ref(), id).await;
    }

    /// Requests to the fake, as `METHOD path`.
    pub fn paths(&self) -> Vec<String> {
        self.fake
            .requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }

    pub fn patches(&self) -> Vec<RecordedRequest> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| r.method == "PATCH")
            .collect()
    }
}

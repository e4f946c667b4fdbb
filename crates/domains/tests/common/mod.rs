//! The App Store Connect domain in process against the verifying fake over real HTTP: a fake
//! with the demo seed, its throwaway `.p8` in a temp dir, a temp SQLite ledger, and the
//! seven tools plus the ledger tools behind a real `Gate`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/in_process.rs"]
pub mod in_process;

use std::collections::HashMap;
use std::sync::Arc;

use care_core::catalog::Role;
use care_core::env::MapEnv;
use care_core::gate::{Gate, GateAnswer};
use care_core::ledger::Ledger;
use care_core::tool::Services;
use care_domains::asc::AscConfig;
use care_fakes::asc::{DEMO_APP_ID, DEMO_PRO_APP_ID, FakeAsc, Seed, TestKey, demo_seed};
use serde_json::{Map, Value, json};

pub struct Harness {
    pub fake: FakeAsc,
    pub gate: Gate,
    pub ledger: Arc<dyn Ledger>,
    pub services: Arc<Services>,
    pub config: AscConfig,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

pub struct Options {
    pub role: Role,
    pub write_enabled: bool,
    pub seed: Seed,
    pub extra_env: Vec<(&'static str, String)>,
    /// Given the fake's key, writes its credentials where the test wants and returns the
    /// variables to set (`Some`) or remove (`None`) (rotation tests).
    pub credentials: Option<CredentialPlacer>,
}

/// See [`Options::credentials`].
pub type CredentialPlacer = Box<dyn FnOnce(&TestKey) -> Vec<(&'static str, Option<String>)>>;

impl Default for Options {
    fn default() -> Self {
        Options {
            role: Role::Reviews,
            write_enabled: false,
            seed: demo_seed(),
            extra_env: Vec::new(),
            credentials: None,
        }
    }
}

pub async fn harness(options: Options) -> Harness {
    let fake = FakeAsc::start(options.seed).unwrap();
    let key_dir = tempfile::tempdir().unwrap();
    let key_file = fake.key().write_p8(key_dir.path()).unwrap();
    let (url, db_dir) = care_ledger::test_support::temp_sqlite();
    let mut env: HashMap<String, String> = fake
        .env(&key_file, &[DEMO_APP_ID, DEMO_PRO_APP_ID])
        .into_iter()
        .collect();
    env.insert("DATABASE_URL".into(), url.clone());
    env.insert(
        "CARE_AUDIT_SALT".into(),
        "sk-demo-audit-salt-asc-0001".into(),
    );
    env.insert("CARE_CLIENT_ID".into(), "asc-test".into());
    if options.write_enabled {
        env.insert("CARE_WRITE_ENABLED".into(), "1".into());
    }
    for (k, v) in options.extra_env {
        env.insert(k.to_owned(), v);
    }
    for (k, v) in options
        .credentials
        .map(|place| place(fake.key()))
        .unwrap_or_default()
    {
        match v {
            Some(v) => env.insert(k.to_owned(), v),
            None => env.remove(k),
        };
    }
    let env = MapEnv(env);
    let config = AscConfig::from_env(&env).unwrap();

    // The registration the server does, through the App Store Connect row of `DOMAINS` only:
    // these tests are about this domain (a role's other domains have their own fakes and tests).
    let asc = care_domains::DOMAINS
        .iter()
        .find(|d| d.domain == care_core::catalog::Domain::AppStoreConnect)
        .expect("App Store Connect is in DOMAINS");
    let built = in_process::build(options.role, &env, |r, e| (asc.register)(r, e)).await;
    Harness {
        fake,
        gate: built.gate,
        ledger: built.ledger,
        services: built.services,
        config,
        _dirs: (key_dir, db_dir),
    }
}

pub type CallResult = Result<Value, (String, Value)>;

impl Harness {
    /// Calls a tool; `Ok(data)` or `Err((code, error))`. Every envelope is kept for leak checks.
    pub async fn call(&self, tool: &str, arguments: Value) -> CallResult {
        let args: Map<String, Value> = arguments.as_object().unwrap().clone();
        match self.gate.call(tool, Some(args)).await {
            GateAnswer::UnknownTool => panic!("{tool} unknown"),
            GateAnswer::Result {
                envelope, is_error, ..
            } => {
                self.assert_no_key_material(&envelope);
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

    /// No answer ever carries the private key or any sizeable piece of it.
    pub fn assert_no_key_material(&self, envelope: &Value) {
        let text = envelope.to_string();
        assert!(!text.contains("PRIVATE KEY"), "{text}");
        let base64: String = self
            .fake
            .key()
            .private_key_pem
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        for chunk in base64.as_bytes().chunks(16) {
            let chunk = std::str::from_utf8(chunk).unwrap();
            assert!(!text.contains(chunk), "key material in {text}");
        }
    }

    pub async fn request_approval(&self, arguments: Value) -> (String, Value) {
        let data = self
            .ok(
                "approval_request",
                json!({"action": "asc_review_reply", "arguments": arguments}),
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

    pub fn posts(&self) -> usize {
        self.fake
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count()
    }
}

//! The Discourse domain in process against the verifying fake over real HTTP: a fake with the
//! demo forum, its throwaway API key in a temp file, a temp SQLite ledger, and the six tools
//! plus the ledger tools behind a real `Gate`, registered as the server does (`DOMAINS`).
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
use care_fakes::discourse::{DEMO_CATEGORY_SCOPE, FakeDiscourse, Seed, demo_seed};
use serde_json::{Map, Value, json};

pub struct Harness {
    pub fake: FakeDiscourse,
    pub gate: Gate,
    pub ledger: Arc<dyn Ledger>,
    pub services: Arc<Services>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

pub struct Options {
    pub role: Role,
    pub write_enabled: bool,
    pub seed: Seed,
    /// `CARE_DISCOURSE_CATEGORY_IDS`; unset when `None`.
    pub scope: Option<Vec<u64>>,
    pub extra_env: Vec<(&'static str, String)>,
    /// Given the fake's key, writes it where the test wants and returns the path to use as
    /// `CARE_DISCOURSE_API_KEY_FILE` (rotation tests); a plain file in a temp dir otherwise.
    pub key_file: Option<KeyPlacer>,
}

/// See [`Options::key_file`].
pub type KeyPlacer = Box<dyn FnOnce(&str) -> std::path::PathBuf>;

impl Default for Options {
    fn default() -> Self {
        Options {
            role: Role::Community,
            write_enabled: false,
            seed: demo_seed(),
            scope: Some(DEMO_CATEGORY_SCOPE.to_vec()),
            extra_env: Vec::new(),
            key_file: None,
        }
    }
}

pub async fn harness(options: Options) -> Harness {
    let fake = FakeDiscourse::start(options.seed).unwrap();
    let key_dir = tempfile::tempdir().unwrap();
    let key_file = match options.key_file {
        Some(place) => place(&fake.api_key()),
        None => fake.write_key_file(key_dir.path()).unwrap(),
    };
    let (url, db_dir) = care_ledger::test_support::temp_sqlite();
    let mut env: HashMap<String, String> = fake
        .env(&key_file, options.scope.as_deref())
        .into_iter()
        .collect();
    env.insert("DATABASE_URL".into(), url.clone());
    env.insert(
        "CARE_AUDIT_SALT".into(),
        "sk-demo-audit-salt-forum-0001".into(),
    );
    env.insert("CARE_CLIENT_ID".into(), "forum-test".into());
    if options.write_enabled {
        env.insert("CARE_WRITE_ENABLED".into(), "1".into());
    }
    for (k, v) in options.extra_env {
        env.insert(k.to_owned(), v);
    }
    let env = MapEnv(env);

    let built = in_process::build(options.role, &env, care_domains::register_domains).await;
    Harness {
        fake,
        gate: built.gate,
        ledger: built.ledger,
        services: built.services,
        _dirs: (key_dir, db_dir),
    }
}

pub type CallResult = Result<Value, (String, Value)>;

impl Harness {
    /// Calls a tool; `Ok(data)` or `Err((code, error))`. Every envelope is checked: never the
    /// API key, never raw post HTML, error messages only the fixed sentences.
    pub async fn call(&self, tool: &str, arguments: Value) -> CallResult {
        let args: Map<String, Value> = arguments.as_object().unwrap().clone();
        match self.gate.call(tool, Some(args)).await {
            GateAnswer::UnknownTool => panic!("{tool} unknown"),
            GateAnswer::Result {
                envelope, is_error, ..
            } => {
                let text = envelope.to_string();
                assert!(!text.contains(&self.fake.api_key()), "key in {text}");
                assert!(
                    !text.contains("<p>") && !text.contains("<script"),
                    "HTML in {text}"
                );
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

    pub async fn request_approval(&self, arguments: Value) -> (String, Value) {
        let data = self
            .ok(
                "approval_request",
                json!({"action": "discourse_post_reply", "arguments": arguments}),
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

/// The text between the fence's tags; panics when `value` is not one fenced string.
pub fn inside_fence(value: &Value) -> String {
    let text = value.as_str().unwrap();
    care_core::fence::fenced_inner(text)
        .unwrap_or_else(|| panic!("not one fenced block: {text}"))
        .to_owned()
}

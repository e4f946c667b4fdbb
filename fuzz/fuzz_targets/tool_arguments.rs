//! Every tool's argument handling, through the real gate of every role, with the demo fakes as
//! upstreams and a SQLite ledger: whatever the arguments, no panic (even one the gate would
//! contain), an answer is a well-formed envelope whose message is its code's fixed sentence,
//! a `field` is one of the tool's own argument names (never an echo of input), and a name
//! outside the role is unknown exactly as a name that exists nowhere.
#![no_main]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use arbitrary::Arbitrary;
use care_core::approvals::{ApprovalPolicy, ApproverKey};
use care_core::catalog::Role;
use care_core::config::Config;
use care_core::env::{EnvReader, ExposeSecret, MapEnv};
use care_core::error::ErrorCode;
use care_core::gate::{Gate, GateAnswer};
use care_core::input::schema_properties;
use care_core::ledger_tools;
use care_core::outbound::OutboundScanner;
use care_core::registrar::{Registrar, TicketPort};
use care_core::tool::{Registry, Services};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

struct World {
    runtime: tokio::runtime::Runtime,
    gates: Vec<Gate>,
    _upstreams: Vec<Box<dyn care_fakes::Upstream>>,
}

/// A fresh directory for this process's ledger and key files (scripts/fuzz points TMPDIR at a
/// directory it removes afterwards).
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("care-fuzz-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

async fn gate_for(role: Role, env: &MapEnv) -> Gate {
    let url = env.0.get("DATABASE_URL").expect("ledger URL");
    let ledger = care_ledger::connect(Some(url), std::path::Path::new("/nonexistent"))
        .await
        .expect("SQLite ledger");
    let mut reader = EnvReader::new(env);
    let config = Arc::new(Config::read(&mut reader));
    let mut registrar = Registrar::new(role, TicketPort::new(Arc::clone(&ledger)));
    care_domains::register_domains(&mut registrar, &mut reader);
    if let Err(problems) = reader.finish() {
        panic!("the fuzz environment is incomplete for {role}: {problems:?}");
    }
    let mut secrets: Vec<String> = config
        .own_secrets()
        .iter()
        .map(|s| s.expose_secret().to_owned())
        .collect();
    secrets.extend(registrar.secret_values());
    let approver = "1111111111111111111111111111111111111111111111111111111111111111";
    let policy = ApprovalPolicy::new(vec![ApproverKey::from_hex(approver).expect("hex")], None, 1);
    let services = Arc::new(
        Services::new(config, Arc::clone(&ledger), b"sk-demo-fuzz-salt")
            .with_policy(policy)
            .with_scanner(OutboundScanner::new(secrets)),
    );
    let registered = registrar.finish(&services);
    let mut handlers = registered.handlers;
    handlers.extend(ledger_tools::all(&services, registered.planners));
    Gate::new(Registry::new(role, handlers).expect("registry"), services)
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        // A panic anywhere is a finding, even one the gate would turn into INTERNAL.
        std::panic::set_hook(Box::new(|info| {
            eprintln!("panic: {info}");
            std::process::abort();
        }));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let dir = scratch();
        let upstreams = care_fakes::start_demo_upstreams().expect("the demo fakes start");
        let mut vars: HashMap<String, String> = HashMap::new();
        vars.insert(
            "DATABASE_URL".into(),
            format!("sqlite://{}", dir.join("ledger.db").display()),
        );
        vars.insert(
            "CARE_AUDIT_SALT".into(),
            "sk-demo-fuzz-salt-0123456789abcdef".into(),
        );
        for upstream in &upstreams {
            vars.extend(upstream.role_env(&dir).expect("fake's files"));
        }
        let env = MapEnv(vars);
        let gates = runtime.block_on(async {
            let mut gates = Vec::new();
            for role in Role::ALL {
                gates.push(gate_for(role, &env).await);
            }
            gates
        });
        World {
            runtime,
            gates,
            _upstreams: upstreams,
        }
    })
}

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    role: u8,
    /// `Ok(i)`: the i-th tool of the role; `Err(name)`: any name at all.
    tool: Result<u8, &'a str>,
    arguments: &'a [u8],
}

fn check_envelope(envelope: &Value, allowed_fields: &[String]) {
    let ok = envelope
        .get("ok")
        .and_then(Value::as_bool)
        .expect("envelope has ok");
    if ok {
        assert!(envelope.get("data").is_some(), "success without data");
        return;
    }
    let error = envelope
        .get("error")
        .and_then(Value::as_object)
        .expect("failure has error");
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .expect("error code");
    let code = ErrorCode::ALL
        .into_iter()
        .find(|c| c.as_str() == code)
        .expect("a known code");
    assert_ne!(
        code,
        ErrorCode::Internal,
        "a call ended INTERNAL: {envelope}"
    );
    assert_eq!(
        error.get("message").and_then(Value::as_str),
        Some(code.message())
    );
    for key in error.keys() {
        assert!(
            ["code", "message", "field", "cause"].contains(&key.as_str()),
            "extra key {key}"
        );
    }
    if let Some(field) = error.get("field").and_then(Value::as_str) {
        let top = field.split(['.', '[']).next().unwrap_or_default();
        assert!(
            top == "arguments" || allowed_fields.iter().any(|f| f == top),
            "field {field:?} is not an argument name of the tool"
        );
    }
}

fuzz_target!(|input: Input<'_>| {
    let w = world();
    let gate = &w.gates[usize::from(input.role) % w.gates.len()];
    let tools = gate.registry().tools();
    let name = match input.tool {
        Ok(i) => tools[usize::from(i) % tools.len()].entry().name.to_owned(),
        Err(name) => name.to_owned(),
    };
    let arguments = match serde_json::from_slice::<Value>(input.arguments) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    };
    let held = gate
        .registry()
        .get(&name)
        .map(|h| schema_properties(&h.input_schema()));
    let answer = w.runtime.block_on(gate.call(&name, arguments));
    match (answer, held) {
        (GateAnswer::UnknownTool, None) => {}
        (GateAnswer::UnknownTool, Some(_)) => panic!("a held tool answered unknown: {name}"),
        (GateAnswer::Result { .. }, None) => panic!("a tool outside the role answered: {name}"),
        (GateAnswer::Result { envelope, .. }, Some(fields)) => check_envelope(&envelope, &fields),
    }
});

//! Every tool's argument handling, through the real gate of every role, with the demo fakes as
//! upstreams and a SQLite ledger: whatever the arguments, no panic (even one the gate would
//! contain), an answer is a well-formed envelope whose message is its code's fixed sentence,
//! a `field` is one of the tool's own argument names (never an echo of input), and a name
//! outside the role is unknown exactly as a name that exists nowhere.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use care_core::catalog::Role;
use care_core::error::ErrorCode;
use care_core::gate::{Gate, GateAnswer};
use care_core::input::schema_properties;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

struct World {
    runtime: tokio::runtime::Runtime,
    gates: Vec<Gate>,
    _upstreams: Vec<Box<dyn care_fakes::Upstream>>,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let demo = care_fuzz::demo::start("tools");
        let gates = demo.runtime.block_on(async {
            let mut gates = Vec::new();
            for role in Role::ALL {
                // A ledger per role, as each role's process has.
                let ledger = demo.ledger().await;
                gates.push(demo.gate(role, &ledger).await);
            }
            gates
        });
        World {
            runtime: demo.runtime,
            gates,
            _upstreams: demo.upstreams,
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

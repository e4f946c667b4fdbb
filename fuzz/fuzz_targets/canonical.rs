//! The canonical payload encoding (RFC 8785): for any arguments that pass `check_exact`, the
//! encoding parses back to the same value (numbers as the doubles they are) and re-encodes to
//! the same bytes. So two different argument sets never share an encoding, hence never a hash.
#![no_main]

use care_core::canonical::{check_exact, encode, payload_hash};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

/// Equal as JSON values are equal under JCS: numbers by their double, all else exactly.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let encoded = encode(&value);
    if check_exact(&value).is_err() {
        return;
    }
    let back: Value = serde_json::from_slice(&encoded).expect("the encoding is JSON");
    assert!(same(&value, &back), "the encoding changed the value");
    assert_eq!(encode(&back), encoded, "the encoding is not stable");
    if let Value::Object(arguments) = &value {
        // The hash covers exactly this encoding of {action, arguments}.
        let mut root = Map::new();
        root.insert("action".into(), Value::String("mail_send".into()));
        root.insert("arguments".into(), Value::Object(arguments.clone()));
        let again = payload_hash("mail_send", arguments);
        assert_eq!(again.len(), 64);
        assert_eq!(encode(&Value::Object(root)), {
            let mut e = b"{\"action\":\"mail_send\",\"arguments\":".to_vec();
            e.extend_from_slice(&encoded);
            e.push(b'}');
            e
        });
    }
});

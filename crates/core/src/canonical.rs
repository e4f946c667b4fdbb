//! The canonical JSON encoding behind approval payload hashes and audit digests.
//!
//! Encoding (documented in the README, stable across releases):
//! - objects: keys sorted by their UTF-8 bytes, `{"k":v,...}`, no whitespace;
//! - arrays: in order, `[a,b]`; `null`, `true`, `false` as themselves;
//! - strings: the exact bytes given (no Unicode normalisation, no trimming), escaped as JSON
//!   requires and nothing more (`"` `\` and U+0000..U+001F; everything else as raw UTF-8);
//! - numbers: as serde_json prints them (integers without a fraction, floats shortest round-trip).
//!
//! The encoder sorts keys itself, so it does not depend on how `serde_json::Map` is ordered.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Appends the canonical encoding of `value` to `out`.
pub fn encode_into(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => encode_str(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                encode_into(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                encode_str(key, out);
                out.push(b':');
                if let Some(v) = map.get(key) {
                    encode_into(v, out);
                }
            }
            out.push(b'}');
        }
    }
}

fn encode_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for ch in s.chars() {
        match ch {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// The canonical encoding of `value`.
pub fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode_into(value, &mut out);
    out
}

/// The canonical encoding as text (it is always valid UTF-8 JSON).
pub fn encode_string(value: &Value) -> String {
    String::from_utf8_lossy(&encode(value)).into_owned()
}

/// `{"action": action, "arguments": arguments}`: what an approval is bound to.
pub fn payload(action: &str, arguments: &Map<String, Value>) -> Value {
    let mut root = Map::new();
    root.insert("action".into(), Value::String(action.to_owned()));
    root.insert("arguments".into(), Value::Object(arguments.clone()));
    Value::Object(root)
}

/// Hex SHA-256 of the canonical `{action, arguments}`.
pub fn payload_hash(action: &str, arguments: &Map<String, Value>) -> String {
    hex::encode(Sha256::digest(encode(&payload(action, arguments))))
}

/// Hex HMAC-SHA256 of the canonical `{tool, arguments}` keyed by the audit salt: lets an
/// operator match two calls with equal arguments without the log ever holding them.
pub fn audit_digest(salt: &[u8], tool: &str, arguments: &Value) -> String {
    let mut root = Map::new();
    root.insert("arguments".into(), arguments.clone());
    root.insert("tool".into(), Value::String(tool.to_owned()));
    // HMAC accepts keys of any length, so this cannot fail; fall back to an empty key anyway.
    let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(salt) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(&encode(&Value::Object(root)));
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_no_whitespace() {
        let v = json!({"b": 1, "a": {"z": [true, null], "y": "x"}});
        assert_eq!(
            encode_string(&v),
            r#"{"a":{"y":"x","z":[true,null]},"b":1}"#
        );
    }

    #[test]
    fn strings_keep_their_exact_bytes() {
        // NFC and NFD forms of "é" must hash differently: no normalisation.
        let nfc = json!({"body": "caf\u{e9}"});
        let nfd = json!({"body": "cafe\u{301}"});
        assert_ne!(encode(&nfc), encode(&nfd));
        assert_eq!(encode_string(&json!("안녕 \u{200d}")), "\"안녕 \u{200d}\"");
        assert_eq!(encode_string(&json!("a\"b\\c\u{1}")), r#""a\"b\\c\u0001""#);
        assert_eq!(encode_string(&json!(" trailing ")), "\" trailing \"");
    }

    #[test]
    fn payload_hash_changes_with_any_argument() {
        let args = json!({"review_id": "rev-1", "body": "Thanks!", "locale": "en-US"});
        let base = payload_hash("asc_review_reply", args.as_object().unwrap());
        let mut edited = args.as_object().unwrap().clone();
        edited.insert("body".into(), json!("Thanks!!"));
        assert_ne!(base, payload_hash("asc_review_reply", &edited));
        assert_ne!(base, payload_hash("mail_send", args.as_object().unwrap()));
        assert_eq!(base.len(), 64);
        // Known answer: pins the documented encoding.
        let expected = hex::encode(Sha256::digest(
            br#"{"action":"asc_review_reply","arguments":{"body":"Thanks!","locale":"en-US","review_id":"rev-1"}}"#,
        ));
        assert_eq!(base, expected);
    }

    #[test]
    fn audit_digest_depends_on_salt() {
        let args = json!({"metric": "csat"});
        let a = audit_digest(b"salt-a", "kpi_record", &args);
        let b = audit_digest(b"salt-b", "kpi_record", &args);
        assert_ne!(a, b);
        assert_eq!(a, audit_digest(b"salt-a", "kpi_record", &args));
        assert!(!a.contains("csat"));
    }
}

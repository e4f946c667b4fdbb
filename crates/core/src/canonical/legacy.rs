//! The first canonical encoding (`legacy-v1`), kept byte for byte so approvals requested before
//! the switch to RFC 8785 still verify. New hashes never use it.
//!
//! Encoding:
//! - objects: keys sorted by their UTF-8 bytes, `{"k":v,...}`, no whitespace;
//! - arrays: in order, `[a,b]`; `null`, `true`, `false` as themselves;
//! - strings: the exact bytes given (no Unicode normalisation, no trimming), escaped as JSON
//!   requires and nothing more (`"` `\` `\n` `\r` `\t`, other U+0000..U+001F as `\u00xx`,
//!   so `\b` and `\f` come out as `\u0008` and `\u000c`; everything else as raw UTF-8);
//! - numbers: as serde_json prints them (integers without a fraction, floats shortest round-trip).
//!
//! It differs from JCS in the key order of characters beyond U+FFFF, in `\b`/`\f`, and in
//! integer-valued floats (`1.0` and `-0.0` here, `1` and `0` in JCS). Its numbers depend on
//! serde_json's printing (1.0.154 made every legacy hash; a test pins it).

use serde_json::Value;

/// Appends the legacy encoding of `value` to `out`.
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

/// The legacy encoding of `value`.
pub fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode_into(value, &mut out);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::canonical::{HashEncoding, payload_hash_with};
    use serde_json::json;
    use sha2::{Digest, Sha256};

    fn encode_string(value: &Value) -> String {
        String::from_utf8(encode(value)).unwrap()
    }

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
    fn where_it_differs_from_jcs() {
        // Pinned so the legacy encoder never drifts towards JCS: old hashes depend on these.
        assert_eq!(encode_string(&json!("\u{8}\u{c}")), r#""\u0008\u000c""#);
        let astral = json!({"\u{1f600}": 1, "\u{fb33}": 2});
        assert_eq!(encode_string(&astral), "{\"\u{fb33}\":2,\"\u{1f600}\":1}");
        // Floats as serde_json 1.0.154 prints them, the version every legacy hash was made with:
        // this fails if a serde_json upgrade changes them.
        assert_eq!(
            encode_string(&json!([1e21, 1e-7, 1.0, -0.0, 0.5])),
            "[1e+21,1e-7,1.0,-0.0,0.5]"
        );
    }

    #[test]
    fn payload_hash_changes_with_any_argument() {
        let hash = |action: &str, args: &serde_json::Map<String, Value>| {
            payload_hash_with(HashEncoding::LegacyV1, action, args)
        };
        let args = json!({"review_id": "rev-1", "body": "Thanks!", "locale": "en-US"});
        let base = hash("asc_review_reply", args.as_object().unwrap());
        let mut edited = args.as_object().unwrap().clone();
        edited.insert("body".into(), json!("Thanks!!"));
        assert_ne!(base, hash("asc_review_reply", &edited));
        assert_ne!(base, hash("mail_send", args.as_object().unwrap()));
        assert_eq!(base.len(), 64);
        // Known answer: pins the documented encoding.
        let expected = hex::encode(Sha256::digest(
            br#"{"action":"asc_review_reply","arguments":{"body":"Thanks!","locale":"en-US","review_id":"rev-1"}}"#,
        ));
        assert_eq!(base, expected);
    }
}

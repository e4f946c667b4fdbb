//! The canonical JSON encoding behind approval payload hashes and audit digests.
//!
//! # The encoding: RFC 8785
//! New payload hashes and all audit digests use the JSON Canonicalization Scheme (JCS,
//! RFC 8785, see [`jcs`]): members sorted by the UTF-16 code units of their keys, no whitespace,
//! strings escaped as ECMAScript `JSON.stringify` does and otherwise raw UTF-8 (no Unicode
//! normalisation), numbers written as ECMAScript writes doubles. `payload_hash` is the hex
//! SHA-256 of the JCS text of `{"action": <tool>, "arguments": {...}}`, so an approver or
//! auditor can check a card's hash with any JCS library.
//!
//! JCS numbers are IEEE-754 doubles: `1` and `1.0` are one number, and integers beyond
//! ±(2^53−1) cannot all be told apart. [`check_exact`] refuses such integers; a payload hash is
//! only computed for arguments that pass it (send larger numbers as strings). The encoder
//! itself never fails: such integers keep their exact decimal digits (an extension of JCS that
//! only audit digests meet). serde_json is built with `float_roundtrip`, so a number in the
//! arguments is the double that any JCS library reads from the same text.
//!
//! # Versions
//! [`HashEncoding`] names the encoding a stored hash used. Approvals requested before the
//! switch carry `legacy-v1` ([`legacy`]: keys in UTF-8 byte order, `\b`/`\f` as
//! `\u0008`/`\u000c`, numbers as serde_json prints them) and are verified with it; new ones
//! carry `jcs` ([`HashEncoding::CURRENT`]).
//!
//! # Recomputing a hash by hand
//! With Python and the `rfc8785` package (`python3 -m pip install rfc8785`), given the action and
//! the arguments as JSON text:
//!
//! ```text
//! python3 -c 'import sys, json, hashlib, rfc8785
//! payload = {"action": sys.argv[1], "arguments": json.loads(sys.argv[2])}
//! print(hashlib.sha256(rfc8785.dumps(payload)).hexdigest())' asc_review_reply '{"review_id":"rev-1","body":"Thanks!"}'
//! ```
//!
//! or with Node and the `canonicalize` package (`npm install canonicalize`, version 5):
//!
//! ```text
//! node -e 'const c = require("canonicalize").default; const h = require("crypto").createHash("sha256");
//! console.log(h.update(c({action: process.argv[1], arguments: JSON.parse(process.argv[2])})).digest("hex"))' \
//!   asc_review_reply '{"review_id":"rev-1","body":"Thanks!"}'
//! ```
//!
//! For a `jcs` row the ledger's `arguments_json` already is the canonical text of the arguments,
//! and `"action"` sorts before `"arguments"`, so without any library:
//! `printf '{"action":"%s","arguments":%s}' "$ACTION" "$ARGUMENTS_JSON" | sha256sum`
//! (tool names need no escaping).

mod exact;
pub mod jcs;
pub mod legacy;

pub use exact::{MAX_EXACT_INTEGER, NotExact, check_exact};

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Which canonical encoding a payload hash was computed with; stored beside the hash so a hash
/// keeps verifying after the default changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashEncoding {
    /// The first encoding ([`legacy`]); every approval requested before the switch to JCS.
    LegacyV1,
    /// RFC 8785 ([`jcs`]).
    Jcs,
}

impl HashEncoding {
    /// The encoding of new payload hashes.
    pub const CURRENT: Self = Self::Jcs;

    /// The stable name stored in the ledger: `legacy-v1` or `jcs`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::LegacyV1 => "legacy-v1",
            Self::Jcs => "jcs",
        }
    }

    /// The encoding named by [`Self::as_str`]; `None` for any other text (never a guess: an
    /// unknown name must fail verification, not fall back).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "legacy-v1" => Some(Self::LegacyV1),
            "jcs" => Some(Self::Jcs),
            _ => None,
        }
    }
}

impl fmt::Display for HashEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Appends the canonical (JCS) encoding of `value` to `out`.
pub fn encode_into(value: &Value, out: &mut Vec<u8>) {
    jcs::encode_into(value, out);
}

/// The canonical (JCS) encoding of `value`.
pub fn encode(value: &Value) -> Vec<u8> {
    jcs::encode(value)
}

/// The canonical (JCS) encoding as text (it is always valid UTF-8 JSON).
pub fn encode_string(value: &Value) -> String {
    String::from_utf8_lossy(&encode(value)).into_owned()
}

/// The encoding of `value` under `encoding`.
pub fn encode_with(encoding: HashEncoding, value: &Value) -> Vec<u8> {
    match encoding {
        HashEncoding::LegacyV1 => legacy::encode(value),
        HashEncoding::Jcs => jcs::encode(value),
    }
}

/// `{"action": action, "arguments": arguments}`: what an approval is bound to.
pub fn payload(action: &str, arguments: &Map<String, Value>) -> Value {
    let mut root = Map::new();
    root.insert("action".into(), Value::String(action.to_owned()));
    root.insert("arguments".into(), Value::Object(arguments.clone()));
    Value::Object(root)
}

/// Hex SHA-256 of the canonical `{action, arguments}` under the current encoding (JCS). Call
/// [`check_exact`] on the arguments first.
pub fn payload_hash(action: &str, arguments: &Map<String, Value>) -> String {
    payload_hash_with(HashEncoding::CURRENT, action, arguments)
}

/// Hex SHA-256 of `{action, arguments}` under `encoding`: verifies a stored hash with the
/// encoding its row records.
pub fn payload_hash_with(
    encoding: HashEncoding,
    action: &str,
    arguments: &Map<String, Value>,
) -> String {
    hex::encode(Sha256::digest(encode_with(
        encoding,
        &payload(action, arguments),
    )))
}

/// Hex HMAC-SHA256 of the canonical (JCS) `{tool, arguments}` keyed by the audit salt: lets an
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
    fn payload_hash_is_jcs_and_old_hashes_still_verify() {
        let args = json!({"body": "line\u{c}feed\u{8}", "\u{1f600}": 1, "\u{fb33}": 1e21});
        let args = args.as_object().unwrap();
        // Known answer in JCS: \f and \b short escapes, UTF-16 key order, ECMAScript numbers.
        let jcs_text = "{\"action\":\"mail_send\",\"arguments\":{\"body\":\"line\\ffeed\\b\",\
                        \"\u{1f600}\":1,\"\u{fb33}\":1e+21}}";
        let jcs = hex::encode(Sha256::digest(jcs_text.as_bytes()));
        assert_eq!(payload_hash("mail_send", args), jcs);
        assert_eq!(payload_hash_with(HashEncoding::Jcs, "mail_send", args), jcs);
        let legacy = payload_hash_with(HashEncoding::LegacyV1, "mail_send", args);
        assert_ne!(legacy, jcs);
        let legacy_text = legacy::encode(&payload("mail_send", args));
        assert_eq!(legacy, hex::encode(Sha256::digest(&legacy_text)));
        // Plain arguments hash the same under both encodings.
        let plain = json!({"review_id": "rev-1", "n": 3});
        let plain = plain.as_object().unwrap();
        assert_eq!(
            payload_hash_with(HashEncoding::LegacyV1, "x", plain),
            payload_hash("x", plain)
        );
    }

    #[test]
    fn hash_encoding_names_are_stable() {
        for (encoding, name) in [
            (HashEncoding::LegacyV1, "legacy-v1"),
            (HashEncoding::Jcs, "jcs"),
        ] {
            assert_eq!(encoding.as_str(), name);
            assert_eq!(encoding.to_string(), name);
            assert_eq!(HashEncoding::parse(name), Some(encoding));
        }
        assert_eq!(HashEncoding::parse("JCS"), None);
        assert_eq!(HashEncoding::parse(""), None);
        assert_eq!(HashEncoding::CURRENT, HashEncoding::Jcs);
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

    #[test]
    fn audit_digest_is_over_jcs() {
        let args = json!({"note": "\u{8}", "big": u64::MAX});
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(b"salt").unwrap();
        mac.update(
            br#"{"arguments":{"big":18446744073709551615,"note":"\b"},"tool":"kpi_record"}"#,
        );
        let expected = hex::encode(mac.finalize().into_bytes());
        assert_eq!(audit_digest(b"salt", "kpi_record", &args), expected);
    }
}

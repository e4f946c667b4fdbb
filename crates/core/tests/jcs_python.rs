//! Cross-checks the JCS encoder and payload hashes against an independent RFC 8785
//! implementation: the `rfc8785` Python package (Trail of Bits), run by the interpreter named
//! in `CARE_TEST_PYTHON` (default `python3`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

use care_core::canonical;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Reads a JSON list of payloads on stdin and prints, for each, the hex of its RFC 8785 bytes
/// and their SHA-256. Exit 3 names a missing package, so the test can say how to install it.
const SCRIPT: &str = r#"
import sys, json, hashlib
try:
    import rfc8785
except ImportError:
    sys.exit(3)
payloads = json.loads(sys.stdin.buffer.read().decode("utf-8"))
out = []
for p in payloads:
    b = rfc8785.dumps(p)
    out.append([b.hex(), hashlib.sha256(b).hexdigest()])
sys.stdout.write(json.dumps(out))
"#;

/// Hand-picked arguments: the cases where encoders differ.
fn fixed_corpus() -> Vec<(&'static str, Value)> {
    vec![
        (
            "asc_review_reply",
            json!({"review_id": "rev-1", "body": "안녕하세요! 리뷰 감사합니다 🙏", "locale": "ko-KR"}),
        ),
        (
            "asc_review_reply",
            json!({"review_id": "rev-2", "body": "Thanks!", "locale": "en-US"}),
        ),
        (
            "mail_send",
            json!({
                "\u{20ac}": 1, "\r": 2, "\u{fb33}": 3, "1": 4, "\u{1f600}": 5, "\u{80}": 6,
                "\u{f6}": 7, "\u{e000}": 8, "\u{ffff}": 9, "\u{10000}": 10, "": 11, "a\u{0}": 12,
                "😀😀": 13, "😀a": 14, "Z": 15, "z": 16, "가": 17, "각": 18
            }),
        ),
        (
            "mail_send",
            json!({"s": "\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{e}\u{1f}\"\\/\u{7f}\u{80}\u{2028}\u{2029}\u{feff}"}),
        ),
        (
            "kpi_record",
            json!({"a": {"b": {"c": [1, [2, [3, {"d": null}]]]}}, "e": [], "f": {}, "g": [true, false, null]}),
        ),
        (
            "kpi_record",
            json!({"n": [
                0, -0.0, 1, -1, 1.0, 1.5, 0.1, 0.2, 0.30000000000000004, 1e21, 1e20, 1e-7, 1e-6,
                123456789012345680000.0, 9007199254740991_i64, -9007199254740991_i64, 5e-324,
                -5e-324, 1.7976931348623157e308, 333333333.3333333, 4.656612873077393e-10, 1e23,
                9.999999999999997e22, 0.000001, 2.5e-8, 1e300, -1e-300, 100, 1e2
            ]}),
        ),
        (
            "mail_send",
            json!({"body": "caf\u{e9}", "body_nfd": "cafe\u{301}", "zwj": "👩\u{200d}👩\u{200d}👧", "flag": "🇰🇷"}),
        ),
        (
            "mail_send",
            json!({"to": ["a@example.com"], "subject": "Re: <urgent> & more", "html": "<p>Hi</p>\r\n"}),
        ),
        ("mail_send", json!({})),
    ]
}

/// A deterministic generator (xorshift) of further arguments, so the corpus also holds inputs
/// nobody picked by hand.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn char(&mut self) -> char {
        const POOL: &[char] = &[
            '\u{0}',
            '\u{8}',
            '\t',
            '\n',
            '\u{c}',
            '\r',
            '\u{1f}',
            '"',
            '\\',
            '/',
            '\u{7f}',
            '\u{2028}',
            '\u{e000}',
            '\u{fb33}',
            '\u{ffff}',
            '\u{10000}',
            '\u{1f600}',
            '가',
            'a',
        ];
        if self.below(3) == 0 {
            POOL[self.below(POOL.len() as u64) as usize]
        } else {
            // Any scalar value: surrogate code points are not chars, so from_u32 skips them.
            char::from_u32(self.below(0x11_0000) as u32).unwrap_or('?')
        }
    }

    fn string(&mut self) -> String {
        (0..self.below(6)).map(|_| self.char()).collect()
    }

    fn number(&mut self) -> Value {
        match self.below(3) {
            0 => {
                let max = canonical::MAX_EXACT_INTEGER;
                let n = (self.next() % (2 * max + 1)) as i64 - max as i64;
                json!(n)
            }
            1 => json!(self.below(2000) as i64 - 1000),
            _ => loop {
                let f = f64::from_bits(self.next());
                if f.is_finite() {
                    break json!(f);
                }
            },
        }
    }

    fn value(&mut self, depth: u32) -> Value {
        match self.below(if depth == 0 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::Bool(self.below(2) == 0),
            2 => self.number(),
            3 => Value::String(self.string()),
            4 => Value::Array((0..self.below(4)).map(|_| self.value(depth - 1)).collect()),
            _ => Value::Object(self.object(depth - 1)),
        }
    }

    fn object(&mut self, depth: u32) -> Map<String, Value> {
        (0..self.below(5))
            .map(|_| (self.string(), self.value(depth)))
            .collect()
    }
}

fn python() -> String {
    std::env::var("CARE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// The Python package's bytes (hex) and SHA-256 for each payload.
fn rfc8785_python(payloads: &[Value]) -> Vec<(String, String)> {
    let python = python();
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(SCRIPT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {python:?} (set CARE_TEST_PYTHON to a Python 3 interpreter): {e}")
        });
    let input = serde_json::to_vec(payloads).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.code() != Some(3),
        "the Python package rfc8785 is not importable by {python:?}: \
         run `{python} -m pip install rfc8785` (or set CARE_TEST_PYTHON)"
    );
    assert!(
        output.status.success(),
        "{python:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn payload_hashes_match_the_rfc8785_python_package() {
    let mut cases: Vec<(String, Map<String, Value>)> = fixed_corpus()
        .into_iter()
        .map(|(action, args)| (action.to_owned(), args.as_object().unwrap().clone()))
        .collect();
    let mut generator = Gen(0x9e37_79b9_7f4a_7c15);
    for i in 0..300 {
        cases.push((format!("tool_{i}"), generator.object(3)));
    }

    let payloads: Vec<Value> = cases
        .iter()
        .map(|(action, args)| canonical::payload(action, args))
        .collect();
    let theirs = rfc8785_python(&payloads);
    assert_eq!(theirs.len(), payloads.len());

    for (((action, args), payload), (their_hex, their_sha)) in
        cases.iter().zip(&payloads).zip(&theirs)
    {
        assert_eq!(canonical::check_exact(payload), Ok(()));
        let ours = canonical::encode(payload);
        assert_eq!(
            &hex::encode(&ours),
            their_hex,
            "encodings differ for {payload}:\n ours:   {}\n theirs: {}",
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&hex::decode(their_hex).unwrap()),
        );
        assert_eq!(&hex::encode(Sha256::digest(&ours)), their_sha);
        assert_eq!(&canonical::payload_hash(action, args), their_sha);
    }
}

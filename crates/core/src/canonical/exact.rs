//! The exactness check of payload arguments: every number must be one an RFC 8785 (JCS)
//! implementation reads as the same IEEE-754 double, so anyone can recompute the hash.

use serde_json::{Number, Value};

/// The largest integer magnitude a double holds exactly together with its neighbours:
/// 2^53−1 (ECMAScript `Number.MAX_SAFE_INTEGER`; I-JSON, RFC 7493 §2.2).
pub const MAX_EXACT_INTEGER: u64 = (1 << 53) - 1;

/// A number in the arguments that a JCS hash cannot carry exactly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the number {number} at {} is an integer outside ±(2^53−1), which a JSON \
     Canonicalization (RFC 8785) hash cannot carry exactly; send it as a string",
    if pointer.is_empty() { "the top level" } else { pointer.as_str() }
)]
pub struct NotExact {
    /// JSON Pointer (RFC 6901) to the number within the checked value; empty for the value itself.
    pub pointer: String,
    /// The number as given.
    pub number: String,
}

/// Refuses integers outside ±(2^53−1) anywhere in `value`.
///
/// JCS numbers are IEEE-754 doubles, and beyond 2^53 neighbouring integers round to one double
/// (9007199254740992 and 9007199254740993 would share a hash). Non-integer numbers pass: a
/// serde_json float already is a double, written by JCS exactly. Run it before
/// [`super::payload_hash`]; the first offending number is reported.
pub fn check_exact(value: &Value) -> Result<(), NotExact> {
    let mut pointer = String::new();
    check_at(value, &mut pointer)
}

fn check_at(value: &Value, pointer: &mut String) -> Result<(), NotExact> {
    match value {
        Value::Number(n) if !is_exact(n) => Err(NotExact {
            pointer: pointer.clone(),
            number: n.to_string(),
        }),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                check_at(item, pointer)?;
                pointer.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = pointer.len();
                pointer.push('/');
                // RFC 6901 escaping: '~' first, so "~1" in a key stays distinguishable.
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                check_at(item, pointer)?;
                pointer.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn is_exact(n: &Number) -> bool {
    if let Some(i) = n.as_i64() {
        i.unsigned_abs() <= MAX_EXACT_INTEGER
    } else if let Some(u) = n.as_u64() {
        u <= MAX_EXACT_INTEGER
    } else {
        n.as_f64().is_some_and(f64::is_finite)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_within_the_exact_range_pass() {
        let edge = MAX_EXACT_INTEGER as i64;
        let value = json!({"a": [0, 1, -1, edge, -edge], "b": {"c": 1.5e300, "d": -0.0}});
        assert_eq!(check_exact(&value), Ok(()));
    }

    #[test]
    fn integers_beyond_the_exact_range_are_refused_with_their_place() {
        let edge = MAX_EXACT_INTEGER as i64;
        let cases = [
            (json!(edge + 1), "", "9007199254740992"),
            (json!([1, -edge - 1]), "/1", "-9007199254740992"),
            (
                json!({"x": {"a/b~c": u64::MAX}}),
                "/x/a~1b~0c",
                "18446744073709551615",
            ),
            (json!({"n": [i64::MIN]}), "/n/0", "-9223372036854775808"),
        ];
        for (value, pointer, number) in cases {
            let err = check_exact(&value).unwrap_err();
            assert_eq!(err.pointer, pointer);
            assert_eq!(err.number, number);
            assert!(err.to_string().contains("send it as a string"), "{err}");
        }
        assert!(
            check_exact(&json!(edge + 1))
                .unwrap_err()
                .to_string()
                .contains("top level")
        );
    }
}

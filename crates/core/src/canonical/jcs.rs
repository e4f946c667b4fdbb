//! The RFC 8785 JSON Canonicalization Scheme (JCS) encoder: the encoding of new payload hashes
//! and of audit digests.
//!
//! - objects: members sorted by their keys' UTF-16 code units (RFC 8785 §3.2.3), `{"k":v,...}`,
//!   no whitespace; arrays in order; `null`, `true`, `false` as themselves;
//! - strings (§3.2.2.2): as ECMAScript `JSON.stringify` writes them: `\"` `\\` `\b` `\f` `\n`
//!   `\r` `\t`, other U+0000..U+001F as `\u00xx` (lowercase hex), everything else (U+2028,
//!   U+2029, DEL, non-ASCII) as raw UTF-8; no Unicode normalisation;
//! - numbers (§3.2.2.3): as ECMAScript `Number.prototype.toString` writes the IEEE-754 double
//!   (shortest round-trip digits, `1e+21`, `1e-7`, `-0` as `0`).
//!
//! Integers: serde_json keeps u64/i64 exactly while JCS numbers are doubles. Integers within
//! ±(2^53−1) are exact doubles and are written as JCS writes them. Integers outside that range
//! are written as their exact decimal digits: an extension of JCS, so that two different
//! integers never share an encoding. Only audit digests ever see it: payload hashes are computed
//! after [`super::check_exact`] has refused such integers.

use serde_json::{Number, Value};

/// Appends the JCS encoding of `value` to `out`.
pub fn encode_into(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_str(s, out),
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
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            // JCS asks for UTF-16 order; it differs from UTF-8 (code point) order where a
            // character of U+E000..U+FFFF meets one beyond U+FFFF (a surrogate pair sorts first).
            members.sort_unstable_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push(b'{');
            for (i, (key, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(key, out);
                out.push(b':');
                encode_into(v, out);
            }
            out.push(b'}');
        }
    }
}

/// The JCS encoding of `value`.
pub fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode_into(value, &mut out);
    out
}

/// Appends an integer as JCS writes it (exact digits, also beyond ±(2^53−1): see the module).
pub(crate) fn write_i64(i: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
}

fn write_number(n: &Number, out: &mut Vec<u8>) {
    if let Some(i) = n.as_i64() {
        write_i64(i, out);
    } else if let Some(u) = n.as_u64() {
        out.extend_from_slice(u.to_string().as_bytes());
    } else if let Some(f) = n.as_f64()
        && f.is_finite()
    {
        // ryu-js is Number.prototype.toString (§3.2.2.3): shortest round-trip digits, the
        // ECMAScript switch to exponent form, and -0 as "0".
        out.extend_from_slice(ryu_js::Buffer::new().format_finite(f).as_bytes());
    } else {
        // serde_json never holds a non-finite number; if a future feature made it possible,
        // its own text still keeps different numbers apart (check_exact refuses it anyway).
        out.extend_from_slice(n.to_string().as_bytes());
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `s` as a JCS string (quoted and escaped).
pub(crate) fn write_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    // Every byte that needs escaping is ASCII, and UTF-8 never uses ASCII bytes inside a
    // multi-byte character, so scanning bytes is exact.
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if short.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0x0f)]);
        } else {
            out.extend_from_slice(short);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::canonical::check_exact;
    use proptest::prelude::*;
    use serde_json::{Map, json};

    fn text(value: &Value) -> String {
        String::from_utf8(encode(value)).unwrap()
    }

    /// RFC 8785 Appendix B ("Number Serialization Samples"): every finite row, IEEE-754 bits
    /// to JCS text. The two non-finite rows (NaN, Infinity) cannot occur in a serde_json Value.
    const APPENDIX_B: &[(u64, &str)] = &[
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];

    /// Further ECMAScript Number::toString answers (checked against V8's `JSON.stringify`):
    /// the boundaries of the plain and exponent forms.
    const MORE_NUMBERS: &[(u64, &str)] = &[
        (0x4415af1d78b58c3f, "99999999999999980000"),
        (0x4415af1d78b58c40, "100000000000000000000"),
        (0x3e00000000000000, "4.656612873077393e-10"),
        (0x3ff0000000000000, "1"),
        (0x3ff8000000000000, "1.5"),
        (0x3e7ad7f29abcaf48, "1e-7"),
        (0x43e0000000000000, "9223372036854776000"),
    ];

    #[test]
    fn appendix_b_numbers() {
        for &(bits, expected) in APPENDIX_B.iter().chain(MORE_NUMBERS) {
            let value = Value::from(f64::from_bits(bits));
            assert_eq!(text(&value), expected, "bits {bits:#018x}");
            assert_eq!(check_exact(&value), Ok(()), "bits {bits:#018x}");
        }
    }

    #[test]
    fn integers_within_the_exact_range_are_written_as_jcs_does() {
        assert_eq!(text(&json!(0)), "0");
        assert_eq!(text(&json!(-7)), "-7");
        assert_eq!(text(&json!(9_007_199_254_740_991_u64)), "9007199254740991");
        assert_eq!(
            text(&json!(-9_007_199_254_740_991_i64)),
            "-9007199254740991"
        );
        // An integer-valued float is the same JCS number as the integer.
        assert_eq!(text(&json!(5.0)), "5");
        assert_eq!(text(&json!(-0.0)), "0");
    }

    #[test]
    fn integers_outside_the_exact_range_keep_their_digits() {
        // The documented extension: as doubles these two would both be 9007199254740992.
        assert_eq!(text(&json!(9_007_199_254_740_993_u64)), "9007199254740993");
        assert_eq!(text(&json!(u64::MAX)), "18446744073709551615");
        assert_eq!(text(&json!(i64::MIN)), "-9223372036854775808");
    }

    /// RFC 8785 §3.2.3: the sorting example, keys given in the RFC's order.
    #[test]
    fn section_3_2_3_sorts_by_utf16_code_units() {
        let keys = [
            ("\u{20ac}", "Euro Sign"),
            ("\r", "Carriage Return"),
            ("\u{fb33}", "Hebrew Letter Dalet With Dagesh"),
            ("1", "One"),
            ("\u{1f600}", "Emoji: Grinning Face"),
            ("\u{80}", "Control"),
            ("\u{f6}", "Latin Small Letter O With Diaeresis"),
        ];
        let mut map = Map::new();
        for (k, v) in keys {
            map.insert(k.to_owned(), json!(v));
        }
        assert_eq!(
            text(&Value::Object(map)),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
             \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
             \"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
        );
    }

    /// RFC 8785 §3.2.2 (with §3.2.4's output): the sample of literals, numbers and a string.
    #[test]
    fn section_3_2_2_primitives() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        let value: Value = serde_json::from_str(input).unwrap();
        assert_eq!(
            text(&value),
            "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\
             \"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}"
        );
    }

    /// RFC 8785 §3.2.4: the same sample's UTF-8 bytes, as the RFC prints them in hex.
    #[test]
    fn section_3_2_4_sample_bytes() {
        let input = r#"{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}"#;
        let value: Value = serde_json::from_str(input).unwrap();
        let expected = "7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72 75 65 2c 66 61 6c \
                        73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a 5b 33 33 33 33 33 33 33 33 33 2e 33 \
                        33 33 33 33 33 33 2c 31 65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d \
                        32 37 5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30 30 66 5c 6e \
                        41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d";
        assert_eq!(hex::encode(encode(&value)), expected.replace(' ', ""));
    }

    /// JCS assumes JSON text is read as JSON.parse reads it, correctly rounded. serde_json does
    /// so only with its `float_roundtrip` feature (set in the workspace); without it these two
    /// land one unit in the last place off, and the hash would differ from any JCS library's.
    #[test]
    fn floats_are_parsed_correctly_rounded() {
        for (input, bits) in [
            ("333333333.33333329", 0x41b3de4355555555_u64),
            (
                "2.111643617105211e-308",
                2.111643617105211e-308_f64.to_bits(),
            ),
        ] {
            let value: Value = serde_json::from_str(input).unwrap();
            assert_eq!(value.as_f64().unwrap().to_bits(), bits, "{input}");
        }
    }

    #[test]
    fn strings_escape_as_json_stringify() {
        let all_controls: String = (0u8..0x20).map(char::from).collect();
        assert_eq!(
            text(&json!(all_controls)),
            "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\
             \\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\
             \\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\""
        );
        // DEL, U+2028/U+2029, '/', Korean and emoji stay raw.
        let raw = "\u{7f}\u{2028}\u{2029}/안녕하세요 👋🏽";
        assert_eq!(text(&json!(raw)), format!("\"{raw}\""));
        assert_eq!(text(&json!("a\"b\\c")), r#""a\"b\\c""#);
    }

    #[test]
    fn keys_are_sorted_and_no_whitespace() {
        let v = json!({"b": 1, "a": {"z": [true, null], "y": "x"}, "": [], "aa": {}});
        assert_eq!(
            text(&v),
            r#"{"":[],"a":{"y":"x","z":[true,null]},"aa":{},"b":1}"#
        );
    }

    /// Equality in the JCS data model: numbers are doubles, so `1` and `1.0` are one number.
    fn same_data(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_data(p, q))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .all(|(k, v)| y.get(k).is_some_and(|w| same_data(v, w)))
            }
            _ => a == b,
        }
    }

    fn any_char() -> impl Strategy<Value = char> {
        prop_oneof![
            // The characters whose escaping or ordering is easy to get wrong.
            prop::sample::select(vec![
                '\u{0}',
                '\u{8}',
                '\t',
                '\n',
                '\u{b}',
                '\u{c}',
                '\r',
                '\u{1f}',
                '"',
                '\\',
                '/',
                '\u{7f}',
                '\u{80}',
                '\u{2028}',
                '\u{2029}',
                '\u{e000}',
                '\u{fb33}',
                '\u{ffff}',
                '\u{10000}',
                '\u{1f600}',
                '\u{10ffff}',
                '가',
                'a',
                'A',
                '1',
            ]),
            any::<char>(),
        ]
    }

    fn any_string() -> impl Strategy<Value = String> {
        prop::collection::vec(any_char(), 0..6).prop_map(String::from_iter)
    }

    fn any_number() -> impl Strategy<Value = Value> {
        let max = 9_007_199_254_740_991_i64;
        prop_oneof![
            (-max..=max).prop_map(Value::from),
            (-3_i64..=3).prop_map(Value::from),
            prop::num::f64::NORMAL.prop_map(Value::from),
            prop::num::f64::SUBNORMAL.prop_map(Value::from),
            prop::num::f64::ZERO.prop_map(Value::from),
            (-3_i64..=3).prop_map(|i| Value::from(i as f64 / 2.0)),
        ]
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any_number(),
            any_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(any_string(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A narrow domain, so that pairs of values are often equal or nearly equal.
    fn small_value() -> impl Strategy<Value = Value> {
        let small_string =
            prop::collection::vec(prop::sample::select(vec!['a', '\u{8}', '"']), 0..3)
                .prop_map(String::from_iter);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-2_i64..=2).prop_map(Value::from),
            (-2_i64..=2).prop_map(|i| Value::from(i as f64)),
            Just(Value::from(0.5)),
            small_string.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 12, 3, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map(small_string.clone(), inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn encoding_reparses_to_the_same_value(value in any_value()) {
            prop_assert_eq!(check_exact(&value), Ok(()));
            let bytes = encode(&value);
            let back: Value = serde_json::from_slice(&bytes).unwrap();
            prop_assert!(same_data(&value, &back), "{} from {:?}", String::from_utf8_lossy(&bytes), value);
            // Canonical: encoding the parsed text again gives the same bytes.
            prop_assert_eq!(encode(&back), bytes);
        }

        #[test]
        fn different_values_never_share_an_encoding(a in small_value(), b in small_value()) {
            prop_assert_eq!(same_data(&a, &b), encode(&a) == encode(&b));
        }

        #[test]
        fn different_large_values_never_share_an_encoding(a in any_value(), b in any_value()) {
            prop_assert_eq!(same_data(&a, &b), encode(&a) == encode(&b));
        }
    }
}

//! The portability check of an advertised schema: what MCP Inspector's `--strict` lint reports
//! (type unions, bare boolean schemas, remote refs, schemas that constrain nothing) plus what
//! this project promises beyond it (no null anywhere, no refs at all, standard formats only).

use serde_json::{Map, Value};

/// Keywords whose value is one subschema.
const ONE: &[&str] = &[
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
];
/// Keywords whose value is an array of subschemas.
const LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to subschemas.
const MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];
/// Where `true` / `false` is an ordinary value, not a stand-in for a schema.
const BOOLEAN_OK: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];
/// A schema with none of these accepts anything (Inspector's `untyped-schema`).
const CONSTRAINING: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "required",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "items",
    "prefixItems",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
];
/// The formats JSON Schema 2020-12 defines; anything else is a generator's private word.
const FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every portability problem of `schema`, one line each (`path: problem`); empty when clean.
pub fn portability_problems(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    walk(schema, "#", None, &mut problems);
    problems
}

fn walk(node: &Value, path: &str, keyword: Option<&str>, out: &mut Vec<String>) {
    let object = match node {
        Value::Bool(_) if keyword.is_some_and(|k| BOOLEAN_OK.contains(&k)) => return,
        Value::Bool(b) => return out.push(format!("{path}: bare `{b}` instead of a schema")),
        Value::Object(object) => object,
        _ => return out.push(format!("{path}: not a schema")),
    };
    check_node(object, path, keyword, out);
    for &key in ONE {
        if let Some(sub) = object.get(key) {
            walk(sub, &format!("{path}/{key}"), Some(key), out);
        }
    }
    for &key in LIST {
        if let Some(Value::Array(subs)) = object.get(key) {
            for (i, sub) in subs.iter().enumerate() {
                walk(sub, &format!("{path}/{key}/{i}"), Some(key), out);
            }
        }
    }
    for &key in MAP {
        if let Some(Value::Object(subs)) = object.get(key) {
            for (name, sub) in subs {
                walk(sub, &format!("{path}/{key}/{name}"), Some(key), out);
            }
        }
    }
}

fn check_node(
    object: &Map<String, Value>,
    path: &str,
    keyword: Option<&str>,
    out: &mut Vec<String>,
) {
    let mut problem = |what: String| out.push(format!("{path}: {what}"));
    match object.get("type") {
        Some(Value::Array(types)) => problem(format!("type array {}", Value::Array(types.clone()))),
        Some(t) if t == "null" => problem("null type".into()),
        _ => {}
    }
    if let Some(Value::Array(values)) = object.get("enum")
        && values.iter().any(Value::is_null)
    {
        problem("null in enum".into());
    }
    if object.get("const").is_some_and(Value::is_null) {
        problem("const null".into());
    }
    if object.get("default").is_some_and(Value::is_null) {
        problem("default null".into());
    }
    if object.contains_key("nullable") {
        problem("nullable (OpenAPI, not JSON Schema)".into());
    }
    for key in ["$ref", "$dynamicRef", "$defs", "definitions"] {
        if object.contains_key(key) {
            problem(format!("{key} (inline the subschema)"));
        }
    }
    if let Some(format) = object.get("format")
        && !format.as_str().is_some_and(|f| FORMATS.contains(&f))
    {
        problem(format!("format {format} is not a JSON Schema format"));
    }
    let constrains = object.keys().any(|k| CONSTRAINING.contains(&k.as_str()))
        || (object.contains_key("if")
            && (object.contains_key("then") || object.contains_key("else")));
    if !constrains && keyword != Some("not") {
        problem("constrains nothing (declare its type)".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(schema: Value) -> String {
        portability_problems(&schema).join("\n")
    }

    #[test]
    fn a_portable_schema_is_clean() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "maxLength": 3, "format": "date-time"},
                "b": {"type": "object", "additionalProperties": true},
                "c": {"type": "string", "enum": ["x", "y"]}
            },
            "required": ["a"],
            "additionalProperties": false,
            "oneOf": [{"required": ["a"], "not": {"required": ["b"]}}, {"required": ["b"]}]
        });
        assert_eq!(problems(schema), "");
    }

    #[test]
    fn every_problem_is_named_with_its_path() {
        let cases = [
            (json!({"type": ["string", "null"]}), "#: type array"),
            (
                json!({"type": "object", "properties": {"a": {"type": "null"}}}),
                "#/properties/a: null type",
            ),
            (
                json!({"type": "string", "enum": ["a", null]}),
                "null in enum",
            ),
            (json!({"type": "string", "const": null}), "const null"),
            (json!({"type": "string", "default": null}), "default null"),
            (json!({"type": "string", "nullable": true}), "nullable"),
            (
                json!({"anyOf": [{"$ref": "#/$defs/X"}, {"type": "string"}]}),
                "#/anyOf/0: $ref",
            ),
            (
                json!({"type": "integer", "format": "uint32"}),
                "format \"uint32\"",
            ),
            (
                json!({"type": "object", "properties": {"a": true}}),
                "#/properties/a: bare `true`",
            ),
            (
                json!({"type": "object", "properties": {"a": {"description": "?"}}}),
                "#/properties/a: constrains nothing",
            ),
        ];
        for (schema, wanted) in cases {
            let found = problems(schema.clone());
            assert!(
                found.contains(wanted),
                "{schema}: wanted {wanted:?}, found {found:?}"
            );
        }
    }
}

//! Portable JSON Schemas for what `tools/list` advertises: how an argument type becomes an input
//! schema that every MCP client accepts, and the check ([`portability_problems`]) every
//! advertised schema must pass.
//!
//! Portable means: an `Option<T>` field is not required and typed as `T` (absent, never `null`:
//! no `type` arrays, no `anyOf` with a null branch, no `nullable`, no `default: null`); every
//! subschema inlined (no `$ref`, no `$defs`); only the `format`s JSON Schema defines (ajv 8 with
//! its default options refuses a schema carrying schemars' `uint32` or `double`); no `$schema`
//! or `title` at the root (MCP defaults to 2020-12; the tool carries its own name).
//! `additionalProperties: false`, ranges, lengths and descriptions stay.

mod lint;

pub use lint::portability_problems;

use schemars::generate::SchemaSettings;
use schemars::transform::{RestrictFormats, Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// The portable input schema of `T`, as a JSON object.
pub fn input_schema_of<T: JsonSchema>() -> Map<String, Value> {
    // The 2020-12 meta-schema stays during generation so RestrictFormats knows which formats
    // that draft defines; `$schema` is removed afterwards.
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .with_transform(AbsentNotNull)
        .with_transform(RestrictFormats::default())
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    match Value::from(schema) {
        Value::Object(mut map) => {
            map.remove("$schema");
            map.remove("title");
            map
        }
        _ => Map::new(),
    }
}

/// Rewrites schemars' nullable `Option<T>` into plain `T`: the field is already optional (not
/// in `required`), and a client that sends nothing is what we mean. serde still accepts an
/// explicit `null` for it, so no caller that sends one breaks.
#[derive(Debug, Clone)]
struct AbsentNotNull;

impl Transform for AbsentNotNull {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        if let Some(Value::Array(types)) = object.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let only = types.remove(0);
                object.insert("type".into(), only);
            }
        }
        if let Some(Value::Array(values)) = object.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        if object.get("default") == Some(&Value::Null) {
            object.remove("default");
        }
        object.remove("nullable");
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = object.get_mut(key) else {
                continue;
            };
            branches.retain(|b| !is_null_only(b));
            if branches.len() == 1 {
                // `{description, anyOf: [T]}` is `T` with that description: the outer keys win.
                let only = branches.remove(0);
                object.remove(key);
                if let Value::Object(inner) = only {
                    for (k, v) in inner {
                        object.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
}

/// `{"type": "null"}` (or `{"const": null}`): the branch schemars adds for `None`.
fn is_null_only(branch: &Value) -> bool {
    branch.get("type") == Some(&Value::from("null"))
        || branch.get("const").is_some_and(Value::is_null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Colour {
        Red,
        Green,
    }

    /// A sample with every optional shape the tools use.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Every {
        /// Required text.
        #[schemars(length(min = 1, max = 64))]
        name: String,
        /// Optional text.
        #[schemars(length(min = 1, max = 16))]
        unit: Option<String>,
        /// Optional count.
        #[schemars(range(min = 1, max = 200))]
        limit: Option<u32>,
        /// Optional flag.
        flag: Option<bool>,
        /// Optional number.
        target: Option<f64>,
        /// Optional enum.
        colour: Option<Colour>,
        /// Required enum.
        shade: Colour,
        /// Free-form object.
        arguments: Map<String, Value>,
    }

    fn every() -> Value {
        Value::Object(input_schema_of::<Every>())
    }

    #[test]
    fn optional_fields_are_absent_never_null() {
        let schema = every();
        let props = &schema["properties"];
        assert_eq!(props["unit"]["type"], "string");
        assert_eq!(props["limit"]["type"], "integer");
        assert_eq!(props["flag"]["type"], "boolean");
        assert_eq!(props["target"]["type"], "number");
        assert_eq!(props["colour"]["type"], "string");
        assert_eq!(props["colour"]["enum"], json!(["red", "green"]));
        assert_eq!(
            schema["required"],
            json!(["name", "shade", "arguments"]),
            "{schema}"
        );
        assert_eq!(portability_problems(&schema), Vec::<String>::new());
    }

    #[test]
    fn constraints_and_descriptions_stay() {
        let schema = every();
        let props = &schema["properties"];
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(props["unit"]["maxLength"], 16);
        assert_eq!(props["unit"]["minLength"], 1);
        assert_eq!(props["unit"]["description"], "Optional text.");
        assert_eq!(props["limit"]["minimum"], 1);
        assert_eq!(props["limit"]["maximum"], 200);
        assert_eq!(props["colour"]["description"], "Optional enum.");
        assert_eq!(props["arguments"]["type"], "object");
    }

    #[test]
    fn no_root_noise_no_refs_no_invented_formats() {
        let schema = every();
        for key in ["$schema", "title", "$defs", "definitions"] {
            assert!(schema.get(key).is_none(), "{key} in {schema}");
        }
        let text = schema.to_string();
        assert!(!text.contains("$ref"), "{text}");
        assert!(!text.contains("uint32"), "{text}");
        assert!(!text.contains("double"), "{text}");
    }

    #[test]
    fn schemars_defaults_would_fail_the_check() {
        // What schemars produces untouched: the check must see every problem of it.
        let raw = Value::from(schemars::schema_for!(Every));
        let problems = portability_problems(&raw).join("\n");
        for wanted in [
            "type array",
            "$ref",
            "format \"uint32\"",
            "format \"double\"",
        ] {
            assert!(problems.contains(wanted), "{wanted} not in {problems}");
        }
    }
}

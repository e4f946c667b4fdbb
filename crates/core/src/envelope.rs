//! The result envelope: `{ok:true, data}` or `{ok:false, error:{code, message, field?, cause?}}`,
//! and its JSON Schema, which every tool declares as its `outputSchema`.

use serde_json::{Map, Value, json};

use crate::error::{ErrorCode, ToolError};

pub fn success(data: Value) -> Value {
    // Built by hand: `json!` would copy `data` through `to_value`, a second walk of the whole
    // answer on every call.
    let mut envelope = Map::new();
    envelope.insert("ok".into(), Value::Bool(true));
    envelope.insert("data".into(), data);
    Value::Object(envelope)
}

/// The failure body. `message` is the code's fixed sentence; `field` is one of our own field
/// names; `cause` names the code behind a WRITE_FAILED. Nothing else is ever added.
pub fn failure(error: &ToolError) -> Value {
    let mut body = Map::new();
    body.insert("code".into(), Value::String(error.code.as_str().into()));
    body.insert("message".into(), Value::String(error.code.message().into()));
    if let Some(field) = &error.field {
        body.insert("field".into(), Value::String(field.clone()));
    }
    if error.code == ErrorCode::WriteFailed
        && let Some(cause) = error.cause
    {
        body.insert("cause".into(), Value::String(cause.as_str().into()));
    }
    let mut envelope = Map::new();
    envelope.insert("ok".into(), Value::Bool(false));
    envelope.insert("error".into(), Value::Object(body));
    Value::Object(envelope)
}

/// The codes an envelope can carry: all but UNKNOWN_TOOL, which only the audit records (the
/// caller of an unknown tool gets a protocol error, not an envelope).
fn envelope_codes() -> Vec<Value> {
    ErrorCode::ALL
        .into_iter()
        .filter(|c| *c != ErrorCode::UnknownTool)
        .map(|c| Value::String(c.as_str().into()))
        .collect()
}

/// The `outputSchema` of every tool: exactly the two shapes [`success`] and [`failure`] build.
/// Portable as the input schemas are (see [`crate::schema`]): one `type` per schema, no null,
/// no `$ref`; the root is an object, as MCP requires.
pub fn output_schema() -> Map<String, Value> {
    let codes = envelope_codes();
    let error = json!({
        "type": "object",
        "description": "Why the call failed. `message` is the code's one fixed sentence.",
        "properties": {
            "code": { "type": "string", "enum": codes },
            "message": { "type": "string" },
            "field": {
                "type": "string",
                "pattern": "^[a-z][a-z0-9_.]*$",
                "description": "The offending argument's name (INVALID_INPUT), never its value."
            },
            "cause": {
                "type": "string",
                "enum": codes,
                "description": "The delivery failure behind WRITE_FAILED."
            }
        },
        "required": ["code", "message"],
        "additionalProperties": false
    });
    let schema = json!({
        "type": "object",
        "description": "{ok: true, data} on success; {ok: false, error} on failure (isError).",
        "properties": {
            "ok": { "type": "boolean" },
            "data": {
                "type": "object",
                "description": "The tool's answer, as its description says.",
                "additionalProperties": true
            },
            "error": error
        },
        "required": ["ok"],
        "additionalProperties": false,
        // `ok` decides which of `data` and `error` is present; never both.
        "oneOf": [
            {
                "properties": { "ok": { "type": "boolean", "const": true } },
                "required": ["data"],
                "not": { "required": ["error"] }
            },
            {
                "properties": { "ok": { "type": "boolean", "const": false } },
                "required": ["error"],
                "not": { "required": ["data"] }
            }
        ]
    });
    match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_carries_only_fixed_text() {
        let err = ToolError::invalid("body").with_detail("SELECT * FROM secrets; /etc/passwd");
        let v = failure(&err);
        assert_eq!(
            v,
            json!({"ok": false, "error": {"code": "INVALID_INPUT", "message": ErrorCode::InvalidInput.message(), "field": "body"}})
        );
    }

    #[test]
    fn output_schema_is_portable_with_an_object_root() {
        let schema = Value::Object(output_schema());
        assert_eq!(schema["type"], "object");
        assert_eq!(
            crate::schema::portability_problems(&schema),
            Vec::<String>::new()
        );
    }

    #[test]
    fn output_schema_lists_every_code_an_envelope_can_carry() {
        let schema = output_schema();
        let error = &schema["properties"]["error"]["properties"];
        let expected: Vec<&str> = ErrorCode::ALL
            .iter()
            .filter(|c| **c != ErrorCode::UnknownTool)
            .map(|c| c.as_str())
            .collect();
        for key in ["code", "cause"] {
            let listed: Vec<&str> = error[key]["enum"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(listed, expected, "{key}");
        }
    }

    #[test]
    fn output_schema_declares_every_key_the_envelope_uses() {
        let schema = Value::Object(output_schema());
        let declared = |v: &Value| -> Vec<String> {
            v["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default()
        };
        let mut full = ToolError::invalid("body");
        full.code = ErrorCode::WriteFailed;
        full.cause = Some(ErrorCode::UpstreamUnavailable);
        for envelope in [success(json!({})), failure(&full)] {
            for key in envelope.as_object().into_iter().flat_map(|o| o.keys()) {
                assert!(declared(&schema).contains(key), "{key}");
            }
        }
        let body = failure(&full);
        for key in body["error"].as_object().into_iter().flat_map(|o| o.keys()) {
            assert!(
                declared(&schema["properties"]["error"]).contains(key),
                "{key}"
            );
        }
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["error"]["additionalProperties"], false);
    }

    #[test]
    fn success_wraps_data() {
        assert_eq!(
            success(json!({"a": 1})),
            json!({"ok": true, "data": {"a": 1}})
        );
    }
}

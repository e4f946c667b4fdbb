//! The result envelope: `{ok:true, data}` or `{ok:false, error:{code, message, field?, cause?}}`.

use serde_json::{Map, Value, json};

use crate::error::{ErrorCode, ToolError};

pub fn success(data: Value) -> Value {
    json!({ "ok": true, "data": data })
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
    json!({ "ok": false, "error": Value::Object(body) })
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
    fn success_wraps_data() {
        assert_eq!(
            success(json!({"a": 1})),
            json!({"ok": true, "data": {"a": 1}})
        );
    }
}

//! Strict argument parsing: unknown fields refused, ranges and sizes checked in code (refused,
//! never clamped), and INVALID_INPUT naming the field without ever echoing its value.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// Longest body an external write or a ledger comment may carry.
pub const MAX_BODY_CHARS: usize = 20_000;
/// Longest id (approval ids, ticket refs, review ids...).
pub const MAX_ID_CHARS: usize = 128;
/// Longest short name (metric names, units, channels...).
pub const MAX_NAME_CHARS: usize = 64;

/// Checks that run after deserialisation: ranges, sizes, formats.
pub trait Validate {
    fn validate(&self) -> Result<(), ToolError>;
}

/// A field name is echoed only when it looks like one of ours; anything else is reported as
/// `arguments` so that a crafted key never reaches the model as our words.
fn safe_field_name(name: &str) -> String {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.');
    if ok {
        name.to_owned()
    } else {
        "arguments".to_owned()
    }
}

/// The property names a JSON schema object declares at its top level.
pub fn schema_properties(schema: &Map<String, Value>) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The input schema of `T`, as a JSON object (what `tools/list` advertises): portable, see
/// [`crate::schema`].
pub fn schema_of<T: JsonSchema>() -> Map<String, Value> {
    crate::schema::input_schema_of::<T>()
}

/// Parses `arguments` into `T` and validates it.
pub fn parse<T>(arguments: &Map<String, Value>) -> Result<T, ToolError>
where
    T: DeserializeOwned + Validate,
{
    let value = Value::Object(arguments.clone());
    let parsed: T = serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner().to_string();
        let field = if path == "." || path.is_empty() {
            // Unknown or missing fields are reported by serde at the top level with the
            // name inside backticks: take it only if it is one of ours.
            extract_backticked(&inner)
                .map(|n| safe_field_name(&n))
                .unwrap_or_else(|| "arguments".to_owned())
        } else {
            let top = path.split(['.', '[']).next().unwrap_or_default();
            safe_field_name(top)
        };
        ToolError::invalid(field).with_detail("arguments did not parse")
    })?;
    parsed.validate()?;
    crate::decision::passed(crate::decision::Rule::Input);
    Ok(parsed)
}

fn extract_backticked(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_owned())
}

/// A required text of 1..=max characters.
pub fn check_text(field: &str, value: &str, max_chars: usize) -> Result<(), ToolError> {
    let n = value.chars().count();
    if n == 0 || n > max_chars || value.trim().is_empty() {
        return Err(ToolError::invalid(field));
    }
    Ok(())
}

/// An optional text of 1..=max characters.
pub fn check_opt_text(field: &str, value: Option<&str>, max_chars: usize) -> Result<(), ToolError> {
    value.map_or(Ok(()), |v| check_text(field, v, max_chars))
}

/// An identifier: 1..=max printable ASCII characters without spaces.
pub fn check_id(field: &str, value: &str, max_chars: usize) -> Result<(), ToolError> {
    let ok = !value.is_empty()
        && value.len() <= max_chars
        && value.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(ToolError::invalid(field))
    }
}

/// A machine name: 1..=max of `[a-z0-9_.-]`, starting with a letter or digit.
pub fn check_name(field: &str, value: &str, max_chars: usize) -> Result<(), ToolError> {
    let ok = !value.is_empty()
        && value.len() <= max_chars
        && value.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ToolError::invalid(field))
    }
}

/// A finite number.
pub fn check_finite(field: &str, value: f64) -> Result<(), ToolError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(ToolError::invalid(field))
    }
}

/// An RFC 3339 timestamp.
pub fn parse_time(field: &str, value: &str) -> Result<DateTime<Utc>, ToolError> {
    if value.len() > 40 {
        return Err(ToolError::invalid(field));
    }
    DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| ToolError::invalid(field))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        score: u8,
        comment: Option<String>,
    }

    impl Validate for Sample {
        fn validate(&self) -> Result<(), ToolError> {
            if !(1..=5).contains(&self.score) {
                return Err(ToolError::invalid("score"));
            }
            check_opt_text("comment", self.comment.as_deref(), 10)
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn unknown_field_is_refused_and_a_crafted_key_is_not_echoed() {
        let err = parse::<Sample>(&args(json!({"score": 3, "extra": 1}))).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("extra"));
        let err = parse::<Sample>(&args(json!({"score": 3, "IGNORE ALL <b>": 1}))).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("arguments"));
    }

    #[test]
    fn wrong_type_names_the_field_not_the_value() {
        let err = parse::<Sample>(&args(json!({"score": "sk-demo-secret"}))).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("score"));
        assert!(!format!("{err:?}").contains("sk-demo-secret"));
    }

    #[test]
    fn ranges_are_refused_not_clamped() {
        assert_eq!(
            parse::<Sample>(&args(json!({"score": 6})))
                .unwrap_err()
                .field
                .as_deref(),
            Some("score")
        );
        assert_eq!(
            parse::<Sample>(&args(json!({"score": 0})))
                .unwrap_err()
                .field
                .as_deref(),
            Some("score")
        );
        assert_eq!(
            parse::<Sample>(&args(json!({"score": 300})))
                .unwrap_err()
                .field
                .as_deref(),
            Some("score")
        );
        let err =
            parse::<Sample>(&args(json!({"score": 2, "comment": "x".repeat(11)}))).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("comment"));
        assert!(parse::<Sample>(&args(json!({"score": 5, "comment": "é".repeat(10)}))).is_ok());
    }

    #[test]
    fn missing_field_is_named() {
        let err = parse::<Sample>(&args(json!({}))).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("score"));
    }

    #[test]
    fn schema_refuses_additional_properties() {
        let schema = schema_of::<Sample>();
        assert_eq!(schema.get("additionalProperties"), Some(&json!(false)));
        let mut props = schema_properties(&schema);
        props.sort();
        assert_eq!(props, vec!["comment", "score"]);
    }

    #[test]
    fn an_optional_field_is_typed_and_not_required() {
        let schema = schema_of::<Sample>();
        assert_eq!(schema["properties"]["comment"], json!({"type": "string"}));
        assert_eq!(schema.get("required"), Some(&json!(["score"])));
    }

    /// Every ledger tool's arguments (the upstream domains' are checked over their manifests in
    /// the server's tests): portable, in particular no null type anywhere.
    #[test]
    fn ledger_tool_schemas_are_portable() {
        use crate::ledger_tools::{approval, csat, kpi, sla};
        use crate::tool::{LedgerWriteTool, ReadTool};
        let schemas = [
            (
                "kpi_record",
                schema_of::<<kpi::KpiRecord as LedgerWriteTool>::Args>(),
            ),
            (
                "kpi_report",
                schema_of::<<kpi::KpiReport as ReadTool>::Args>(),
            ),
            (
                "csat_record",
                schema_of::<<csat::CsatRecord as LedgerWriteTool>::Args>(),
            ),
            (
                "csat_summary",
                schema_of::<<csat::CsatSummary as ReadTool>::Args>(),
            ),
            (
                "sla_status",
                schema_of::<<sla::SlaStatus as ReadTool>::Args>(),
            ),
            (
                "approval_request",
                schema_of::<<approval::ApprovalRequest as LedgerWriteTool>::Args>(),
            ),
            (
                "approval_status",
                schema_of::<<approval::ApprovalStatusTool as ReadTool>::Args>(),
            ),
            (
                "approval_list",
                schema_of::<<approval::ApprovalList as ReadTool>::Args>(),
            ),
        ];
        for (name, schema) in schemas {
            let schema = Value::Object(schema);
            assert_eq!(
                crate::schema::portability_problems(&schema),
                Vec::<String>::new(),
                "{name}: {schema}"
            );
            assert_eq!(schema["additionalProperties"], false, "{name}");
        }
    }

    #[test]
    fn names_and_ids() {
        assert!(check_name("metric", "csat.app_store-7d", 64).is_ok());
        assert!(check_name("metric", "CSAT", 64).is_err());
        assert!(check_name("metric", "", 64).is_err());
        assert!(check_id("id", "rev-123", 128).is_ok());
        assert!(check_id("id", "rev 123", 128).is_err());
        assert!(parse_time("at", "2026-11-30T05:00:00Z").is_ok());
        assert!(parse_time("at", "yesterday").is_err());
    }
}

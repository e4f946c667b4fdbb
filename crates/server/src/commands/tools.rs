//! `care-mcp tools --role R`: the role's manifest as JSON on stdout. Each tool is exactly what
//! `tools/list` serves (name, description, input and output schemas, annotations) plus its
//! catalog row (domain, kind, capability labels). The text is stable (keys sorted, two-space
//! indent, one trailing newline) so the committed snapshots make a schema change a visible diff.

use std::process::ExitCode;
use std::sync::Arc;

use care_core::catalog::Role;
use care_core::envelope;
use care_core::tool::ToolHandler;
use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use crate::handler::describe;
use crate::startup::{StartError, build_gate};

pub async fn run(role: Role) -> Result<ExitCode, StartError> {
    let gate = build_gate(role).await?;
    let output_schema = Arc::new(envelope::output_schema());
    let tools: Vec<Value> = gate
        .registry()
        .tools()
        .iter()
        .map(|h| manifest_entry(h.as_ref(), &output_schema))
        .collect();
    let manifest = sorted(json!({ "role": role, "tools": tools }));
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    #[allow(clippy::print_stdout)]
    {
        println!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The served tool with its catalog row beside it.
fn manifest_entry(handler: &dyn ToolHandler, output_schema: &Arc<JsonObject>) -> Value {
    let entry = handler.entry();
    let mut tool = match serde_json::to_value(describe(handler, output_schema)) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    tool.insert("domain".into(), json!(entry.domain));
    tool.insert("kind".into(), json!(entry.kind));
    tool.insert("labels".into(), json!(entry.labels()));
    Value::Object(tool)
}

/// Keys sorted at every level, whatever map serde_json was built with (a dependency turning on
/// its `preserve_order` feature must not reorder the snapshots).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

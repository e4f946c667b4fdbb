//! `care-mcp tools --role R`: the role's manifest as JSON on stdout.

use std::process::ExitCode;

use care_core::catalog::Role;
use serde_json::json;

use crate::handler::annotations;
use crate::startup::{StartError, build_gate};

pub async fn run(role: Role) -> Result<ExitCode, StartError> {
    let gate = build_gate(role).await?;
    let tools: Vec<_> = gate
        .registry()
        .tools()
        .iter()
        .map(|h| {
            let entry = h.entry();
            json!({
                "name": entry.name,
                "domain": entry.domain,
                "kind": entry.kind,
                "labels": entry.labels(),
                "annotations": annotations(h.as_ref()),
            })
        })
        .collect();
    let manifest = json!({ "role": role, "tools": tools });
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    #[allow(clippy::print_stdout)]
    {
        println!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

//! `care-mcp --role R`: MCP over stdio until the client closes the pipe.

use std::process::ExitCode;

use care_core::catalog::Role;
use rmcp::ServiceExt;

use crate::handler::CareServer;
use crate::startup::{StartError, build_gate};

pub async fn run(role: Role) -> Result<ExitCode, StartError> {
    let gate = build_gate(role).await?;
    tracing::info!(role = %role, tools = gate.registry().tools().len(), ledger = gate.services().ledger.backend(), "serving on stdio");
    let server = CareServer::new(gate);
    let running = match server.serve(rmcp::transport::stdio_pipes()).await {
        Ok(running) => running,
        Err(err) => {
            tracing::error!(error = %err, "MCP session did not start");
            return Ok(ExitCode::from(1));
        }
    };
    match running.waiting().await {
        Ok(reason) => {
            tracing::info!(reason = ?reason, "session ended");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            tracing::error!(error = %err, "session task failed");
            Ok(ExitCode::from(1))
        }
    }
}

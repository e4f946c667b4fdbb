//! `care-mcp --role R`: MCP over stdio until the client closes the pipe.

use std::process::ExitCode;

use care_core::catalog::Role;
use rmcp::ServiceExt;

use crate::handler::CareServer;
use crate::startup::{StartError, build_gate};
use crate::stdio;

pub async fn run(role: Role) -> Result<ExitCode, StartError> {
    let gate = build_gate(role).await?;
    tracing::info!(role = %role, tools = gate.registry().tools().len(), ledger = gate.services().ledger.backend(), "serving on stdio");
    let auditor = gate.services().auditor.clone();
    let ledger = std::sync::Arc::clone(&gate.services().ledger);
    let server = CareServer::new(gate);
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let pipes = stdio::filtered(stdin, stdout);
    let running = match server.serve((pipes.to_rmcp, pipes.from_rmcp)).await {
        Ok(running) => running,
        Err(err) => {
            tracing::error!(error = %err, "MCP session did not start");
            return Ok(ExitCode::from(1));
        }
    };
    let ended = running.waiting().await;
    // Everything rmcp wrote reaches stdout, and every audit row the ledger, before exit.
    let _ = pipes.writer.await;
    auditor.flush().await;
    ledger.close().await;
    match ended {
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

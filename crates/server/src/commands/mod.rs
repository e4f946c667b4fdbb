//! Dispatch of the command line: serving, the tool manifest, the operators' ledger and audit
//! views and HTTP clients.

mod approvals;
mod audit;
mod clients;
mod decide;
mod keys;
#[cfg(feature = "sandbox")]
mod sandbox;
pub(crate) mod serve;
mod tools;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::startup::{StartError, resolve_role, resolve_roles};

/// Exit code for a refused start (missing/unknown role, bad configuration).
const USAGE: u8 = 2;

pub async fn run(cli: Cli) -> ExitCode {
    let result = match cli.command.unwrap_or_default() {
        Command::Serve(args) if args.http.is_some() => match resolve_roles(&cli.role) {
            Ok(roles) => crate::http::run(roles, args).await,
            Err(e) => Err(e),
        },
        Command::Serve(_) => match resolve_role(&cli.role) {
            Ok(role) => serve::run(role).await,
            Err(e) => Err(e),
        },
        Command::Tools => match resolve_role(&cli.role) {
            Ok(role) => tools::run(role).await,
            Err(e) => Err(e),
        },
        Command::Clients { action } => clients::run(&cli.role, action).await,
        Command::Approvals { action } => approvals::run(action).await,
        Command::Audit { action } => audit::run(action).await,
        Command::Keys { action } => keys::run(action),
        #[cfg(feature = "sandbox")]
        Command::Sandbox { dir, demo, action } => match action {
            Some(crate::cli::SandboxCommand::ShowSent { dir: sent_dir }) => {
                sandbox::run_show_sent(sent_dir.or(dir))
            }
            None => sandbox::run(dir, demo).await,
        },
    };
    match result {
        Ok(code) => code,
        Err(StartError(reason)) => {
            tracing::error!(target: "care_mcp::start", "{reason}");
            ExitCode::from(USAGE)
        }
    }
}

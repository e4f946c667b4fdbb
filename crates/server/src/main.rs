//! The `care-mcp` binary: serves one role's tools over stdio, and the operator commands.
//!
//! stdout carries only JSON-RPC while serving; everything else goes to stderr as JSON lines.

mod approval_channel;
mod cli;
mod commands;
mod handler;
mod logging;
#[cfg(feature = "sandbox")]
mod sandbox;
mod startup;
mod stdio;

use std::process::ExitCode;

fn main() -> ExitCode {
    logging::init();
    let cli = match cli::parse() {
        Ok(cli) => cli,
        // --help and --version are not errors: clap prints them on stdout as asked.
        Err(err) if !err.use_stderr() => {
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            tracing::error!(target: "care_mcp::start", "{}", err.render().to_string().trim());
            return ExitCode::from(2);
        }
    };
    // One thread: a stdio session is one client whose requests arrive in sequence, and every
    // hand-off between worker threads costs a cross-CPU wake-up (measured in bench/).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("care-mcp: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(commands::run(cli))
}

//! The `care-mcp` binary: serves one role's tools over stdio, and the operator commands.
//!
//! stdout carries only JSON-RPC while serving; everything else goes to stderr as JSON lines.

mod cli;
mod commands;
mod handler;
mod logging;
mod startup;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::parse();
    logging::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
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

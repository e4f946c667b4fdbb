//! The `care-mcp` server behind the binary (`main.rs` only calls [`main`]): serves one role's
//! tools over stdio (or several roles over Streamable HTTP, `serve --http`), and the operator
//! commands. A library only so the `http_request` fuzz target can drive the real HTTP service
//! in process ([`http_router_for_fuzzing`]); nothing else is public.
//!
//! stdout carries only JSON-RPC while serving; everything else goes to stderr as JSON lines.

mod approval_channel;
mod cli;
mod commands;
mod handler;
mod http;
mod logging;
#[cfg(feature = "sandbox")]
mod sandbox;
mod startup;
mod stdio;
mod stdio_awake;
mod stdio_fds;

use std::process::ExitCode;

pub use http::router_for_fuzzing as http_router_for_fuzzing;

/// The binary's whole life: parse the command line, start the runtime, run the command.
pub fn main() -> ExitCode {
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
    // One thread for stdio: a stdio session is one client whose requests arrive in sequence,
    // and every hand-off between worker threads costs a cross-CPU wake-up (measured in
    // bench/). HTTP serves many clients at once: a worker per core.
    let http = matches!(&cli.command, Some(cli::Command::Serve(args)) if args.http.is_some());
    let mut builder = if http {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("care-mcp: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(commands::run(cli))
}

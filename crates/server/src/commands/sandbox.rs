//! `care-mcp sandbox [--dir D] [--demo]` and `care-mcp sandbox show-sent`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::sandbox::{SandboxWorld, default_dir, demo, record_sent, show_sent};
use crate::startup::StartError;

#[allow(clippy::print_stdout)]
fn say(text: &str) {
    print!("{text}");
}

pub async fn run(dir: Option<PathBuf>, demo_mode: bool) -> Result<ExitCode, StartError> {
    // The demo runs in a fresh directory unless told otherwise, so it is repeatable.
    let temp = if demo_mode && dir.is_none() {
        Some(
            tempfile::tempdir()
                .map_err(|e| StartError(format!("sandbox: no temporary directory: {e}")))?,
        )
    } else {
        None
    };
    let dir = match (&temp, dir) {
        (Some(t), _) => t.path().to_path_buf(),
        (None, Some(d)) => d,
        (None, None) => default_dir(),
    };
    let world = SandboxWorld::start(&dir).await?;
    let code = if demo_mode {
        if demo::run(&world, &mut std::io::stdout()).await? {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    } else {
        // Installed before the instructions are printed: Ctrl-C, or a supervisor's SIGTERM,
        // right after them still ends the sandbox in order (its relay shut down, exit 0).
        let mut signals = crate::commands::serve::StopSignals::install();
        say(&world.instructions());
        tokio::select! {
            () = signals.requested() => {}
            () = record_sent(&world.upstreams, &world.dir) => {}
        }
        say("\nsandbox stopped\n");
        ExitCode::SUCCESS
    };
    world.relay.shutdown();
    Ok(code)
}

pub fn run_show_sent(dir: Option<PathBuf>) -> Result<ExitCode, StartError> {
    say(&show_sent(&dir.unwrap_or_else(default_dir))?);
    Ok(ExitCode::SUCCESS)
}

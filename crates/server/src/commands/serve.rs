//! `care-mcp --role R`: MCP over stdio until the client closes the pipe or the process is
//! told to stop (SIGTERM, how Kubernetes stops a pod; SIGINT). Either way the stop is orderly:
//! new calls are refused, external writes in flight finish and record their outcome and audit
//! rows (bounded by [`STOP_GRACE`]), queued audit rows are written, then the process exits.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use care_core::catalog::Role;
use rmcp::ServiceExt;

use crate::handler::CareServer;
use crate::startup::{StartError, build_gate};
use crate::stdio_awake::Marked;
use crate::{stdio, stdio_fds};

/// How long a stop waits for external writes in flight: an upstream request's timeout (10 s),
/// one honoured Retry-After (5 s) and a retried request, within Kubernetes' default 30 s grace.
pub const STOP_GRACE: Duration = Duration::from_secs(25);

pub async fn run(role: Role) -> Result<ExitCode, StartError> {
    let gate = Arc::new(build_gate(role).await?);
    let mut signals = StopSignals::install();
    tracing::info!(role = %role, tools = gate.registry().tools().len(), ledger = gate.services().ledger.backend(), "serving on stdio");
    let server = CareServer::new(Arc::clone(&gate));
    let (stdin, stdout) = stdio_fds::stdin_stdout();
    // The process's activity: the ledger marks it too, for each statement's answer.
    let activity = care_core::awake::process();
    let pipes = stdio::filtered(Marked::new(stdin, activity), Marked::new(stdout, activity));
    let awake = tokio::spawn(care_core::awake::keep_awake(Arc::clone(activity)));
    // A stop before the client's `initialize` ends the process in order too: nothing is in
    // flight yet, but queued audit rows still reach the ledger.
    let started = tokio::select! {
        started = server.serve((pipes.to_rmcp, pipes.from_rmcp)) => Some(started),
        () = signals.requested() => None,
    };
    let running = match started {
        Some(Ok(running)) => running,
        Some(Err(err)) => {
            tracing::error!(error = %err, "MCP session did not start");
            return Ok(ExitCode::from(1));
        }
        None => {
            tracing::info!("stop requested before the session started");
            wind_down(awake, &gate).await;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let stop_session = running.cancellation_token();
    let mut session = std::pin::pin!(running.waiting());
    let ended = tokio::select! {
        ended = &mut session => Some(ended),
        () = signals.requested() => None,
    };
    let ended = match ended {
        Some(ended) => {
            // stdin closed: the session is over, writes in flight still finish.
            finish_writes(&gate).await;
            ended
        }
        None => {
            // Signalled: the session stays open while writes in flight finish, so their
            // answers still reach the client; new calls are refused meanwhile.
            tracing::info!("stop requested: refusing new calls, finishing writes in flight");
            finish_writes(&gate).await;
            stop_session.cancel();
            session.await
        }
    };
    // Everything rmcp wrote reaches stdout, and every audit row the ledger, before exit.
    let _ = pipes.writer.await;
    wind_down(awake, &gate).await;
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

/// The last steps of every stop: the stdio thread let go, queued audit rows written to the
/// ledger, its connections closed.
async fn wind_down(awake: tokio::task::JoinHandle<()>, gate: &care_core::gate::Gate) {
    awake.abort();
    gate.services().auditor.flush().await;
    gate.services().ledger.close().await;
}

pub(crate) async fn finish_writes(gate: &care_core::gate::Gate) {
    let in_flight = gate.writes_in_flight();
    if !gate.drain(STOP_GRACE).await {
        tracing::error!(
            in_flight = gate.writes_in_flight(),
            "external writes still running at the stop grace; their outcome may be missing"
        );
    } else if in_flight > 0 {
        tracing::info!(
            in_flight,
            "external writes in flight finished before the stop"
        );
    }
}

/// SIGTERM and SIGINT, caught from the moment this is built: a server installs them before it
/// announces that it serves, so a signal sent right after the announcement still stops it in
/// order instead of taking the default action (an exit without flushing anything).
pub(crate) struct StopSignals {
    handlers: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl StopSignals {
    pub(crate) fn install() -> StopSignals {
        use tokio::signal::unix::{SignalKind, signal};
        let handlers = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Some((term, int)),
            _ => {
                tracing::warn!("signal handlers unavailable: stopping only at end of input");
                None
            }
        };
        StopSignals { handlers }
    }

    /// Resolves at the next SIGTERM or SIGINT.
    pub(crate) async fn requested(&mut self) {
        let Some((term, int)) = self.handlers.as_mut() else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {},
            _ = int.recv() => {},
        }
    }
}

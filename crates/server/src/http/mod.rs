//! `care-mcp serve --http ADDR:PORT`: MCP over Streamable HTTP (rmcp's server transport) at
//! `/mcp` for the roles named, with `/healthz` and `/readyz` for probes.
//!
//! - Loopback by default; another address only with TLS (`--tls-cert/--tls-key`) or
//!   `--behind-tls-proxy`.
//! - Host and Origin are checked by rmcp (DNS rebinding): loopback names plus `--allowed-host`;
//!   browser Origins only from loopback and `--allowed-origin`.
//! - Every `/mcp` request passes the [`guard`]: bearer token, client role, ceiling.
//! - Sessions (`Mcp-Session-Id`, protocol versions before 2026-07-28) close after
//!   `--session-idle-secs` without a request; `--stateless` serves without sessions.
//! - SIGTERM/SIGINT: new calls are refused, writes in flight finish, sessions close, audit rows
//!   are flushed.

mod guard;
mod peek;
mod service;
mod tls;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::serve::ListenerExt;
use care_core::catalog::Role;
use care_core::clients::CallMeter;
use care_core::gate::Gate;
use care_core::ledger::Ledger;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::cli::ServeArgs;
use crate::commands::serve::{STOP_GRACE, StopSignals, finish_writes};
use crate::handler::CareServer;
use crate::startup::{StartError, build_gate};

/// Default idle time of a session: longer than the 10-minute span agent hosts and proxies
/// leave a connection quiet, so an agent that thinks for a while keeps its session.
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 30 * 60;

/// Names every deployment accepts in `Host`, whatever `--allowed-host` adds.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
/// Browser pages served from this machine, whatever `--allowed-origin` adds: a rebinding page
/// carries its own (foreign) Origin, never a loopback one.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

pub async fn run(roles: Vec<Role>, args: ServeArgs) -> Result<ExitCode, StartError> {
    let Some(addr) = args.http else {
        return Err(StartError("serve over HTTP needs --http ADDR:PORT".into()));
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::server_config(cert, key).map_err(StartError)?),
        _ => None,
    };
    if !addr.ip().is_loopback() && tls.is_none() && !args.behind_tls_proxy {
        return Err(StartError(
            "a non-loopback --http address needs --tls-cert and --tls-key, or \
             --behind-tls-proxy when a TLS-terminating proxy is in front"
                .into(),
        ));
    }
    if args.session_idle_secs == 0 {
        return Err(StartError("--session-idle-secs must be at least 1".into()));
    }

    let mut gates = Vec::new();
    for role in &roles {
        gates.push((*role, Arc::new(build_gate(*role).await?)));
    }
    let ledger = Arc::clone(&gates[0].1.services().ledger);
    if ledger.client_store().is_none() {
        return Err(StartError("this ledger does not store HTTP clients".into()));
    }
    let stop = CancellationToken::new();
    let (app, guard) = router(&gates, &ledger, &args, stop.child_token());
    tokio::spawn(sweep_sessions(guard, args.session_idle_secs, stop.clone()));

    let tcp = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| StartError(format!("cannot listen on {addr}: {e}")))?;
    let local = tcp
        .local_addr()
        .map_err(|e| StartError(format!("cannot listen on {addr}: {e}")))?;
    let mut signals = StopSignals::install();
    tracing::info!(
        addr = %local,
        roles = ?roles.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
        tls = tls.is_some(),
        stateless = args.stateless,
        session_idle_secs = args.session_idle_secs,
        ledger = ledger.backend(),
        "serving on http"
    );
    let shutdown = {
        let gates = gates.clone();
        let stop = stop.clone();
        async move {
            signals.requested().await;
            tracing::info!("stop requested: refusing new calls, finishing writes in flight");
            for (_, gate) in &gates {
                finish_writes(gate).await;
            }
            stop.cancel();
        }
    };
    let served = match tls {
        Some(config) => {
            let listener = tls::TlsListener::new(tcp, config)
                .map_err(|e| StartError(format!("cannot listen on {addr}: {e}")))?;
            bounded(
                axum::serve(listener, app).with_graceful_shutdown(shutdown),
                &stop,
            )
            .await
        }
        None => {
            // Without TCP_NODELAY a response written in two segments waits for the client's
            // delayed ACK: 40 ms per call on Linux.
            let tcp = tcp.tap_io(|stream| {
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(error = %e, "TCP_NODELAY not set");
                }
            });
            bounded(
                axum::serve(tcp, app).with_graceful_shutdown(shutdown),
                &stop,
            )
            .await
        }
    };
    for (_, gate) in &gates {
        gate.services().auditor.flush().await;
        gate.services().ledger.close().await;
    }
    match served {
        Ok(()) => {
            tracing::info!("http server stopped");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            tracing::error!(error = %e, "http server failed");
            Ok(ExitCode::from(1))
        }
    }
}

/// Runs the server; once the stop is under way, connections get [`STOP_GRACE`] to close.
async fn bounded(
    server: impl std::future::IntoFuture<Output = std::io::Result<()>>,
    stop: &CancellationToken,
) -> std::io::Result<()> {
    let server = server.into_future();
    tokio::pin!(server);
    tokio::select! {
        ended = &mut server => ended,
        () = async { stop.cancelled().await; tokio::time::sleep(STOP_GRACE).await } => {
            tracing::warn!("connections still open at the stop grace; closing them");
            Ok(())
        }
    }
}

/// Forgets the owners of sessions that ended without a last request (expired idle), about
/// once per idle span (at most a minute apart), until the stop.
async fn sweep_sessions(guard: Arc<guard::Guard>, idle_secs: u64, stop: CancellationToken) {
    let every = Duration::from_secs(idle_secs.clamp(1, 60));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => guard.sessions.sweep(&guard.session_manager).await,
        }
    }
}

fn router(
    gates: &[(Role, Arc<Gate>)],
    ledger: &Arc<dyn Ledger>,
    args: &ServeArgs,
    stop: CancellationToken,
) -> (Router, Arc<guard::Guard>) {
    let servers: BTreeMap<Role, CareServer> = gates
        .iter()
        .map(|(role, gate)| (*role, CareServer::new(Arc::clone(gate))))
        .collect();
    let server = service::HttpServer::new(servers);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(Duration::from_secs(args.session_idle_secs));
    let hosts: Vec<String> = LOOPBACK_HOSTS
        .iter()
        .map(|h| (*h).to_owned())
        .chain(args.allowed_hosts.iter().cloned())
        .collect();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(
            LOOPBACK_ORIGINS
                .iter()
                .map(|o| (*o).to_owned())
                .chain(args.allowed_origins.iter().cloned()),
        )
        .enforce_origin_validation()
        .with_legacy_session_mode(!args.stateless)
        .with_json_response(args.stateless)
        .with_cancellation_token(stop);
    let sessions = Arc::new(sessions);
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), Arc::clone(&sessions), config);
    let guard = Arc::new(guard::Guard {
        gates: gates.to_vec(),
        ledger: Arc::clone(ledger),
        sessions: guard::SessionOwners::default(),
        session_manager: sessions,
        meter: CallMeter::default(),
    });
    let mcp = Router::new()
        .route_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&guard),
            guard::guard,
        ));
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz).with_state(Arc::clone(ledger)))
        .merge(mcp);
    (app, guard)
}

/// The router `serve --http` serves (probes, guard, rmcp's Streamable HTTP service), for the
/// `http_request` fuzz target to call in process as a tower `Service`: the flags it takes are
/// the ones that shape request handling; no listener, TLS or stop signal. `gates` must not be
/// empty, and their ledger must store clients (as `serve --http` checks at start).
#[doc(hidden)]
pub fn router_for_fuzzing(
    gates: &[(Role, Arc<Gate>)],
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    session_idle_secs: u64,
    stateless: bool,
) -> Option<Router> {
    let ledger = Arc::clone(&gates.first()?.1.services().ledger);
    ledger.client_store()?;
    let args = ServeArgs {
        http: None,
        tls_cert: None,
        tls_key: None,
        behind_tls_proxy: false,
        allowed_hosts,
        allowed_origins,
        session_idle_secs: session_idle_secs.max(1),
        stateless,
    };
    Some(router(gates, &ledger, &args, CancellationToken::new()).0)
}

/// Ready when the ledger answers (and its migrations are applied).
async fn readyz(State(ledger): State<Arc<dyn Ledger>>) -> (StatusCode, &'static str) {
    match ledger.ping().await {
        Ok(()) => (StatusCode::OK, "ready"),
        Err(e) => {
            tracing::warn!(error = %e, "readiness: ledger unreachable");
            (StatusCode::SERVICE_UNAVAILABLE, "ledger unavailable")
        }
    }
}

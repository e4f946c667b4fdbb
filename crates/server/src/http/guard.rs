//! The guard in front of `/mcp`: every request authenticates with its bearer token (looked up
//! in the ledger on each request, so a revocation holds from the next request on every
//! replica), and every `tools/call` counts against the client's ceiling. Refusals are fixed
//! answers with an audit row naming the client (or `unauthenticated`).

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use care_core::catalog::{self, Role};
use care_core::clients::{self, CallMeter, ClientRow, RateVerdict};
use care_core::decision::{Rule, Why};
use care_core::envelope;
use care_core::error::{ErrorCode, ToolError};
use care_core::gate::Gate;
use care_core::ledger::{AuditRecord, Ledger};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use serde_json::{Map, Value, json};

use super::peek::Peek;
use super::service::Caller;

/// The one body of every 401: it says nothing about why.
pub const UNAUTHORIZED_BODY: &str = "{\"error\":\"unauthorized\"}";
/// A valid client whose role this process does not serve.
pub const FORBIDDEN_BODY: &str = "{\"error\":\"forbidden\"}";
const UNAVAILABLE_BODY: &str = "{\"error\":\"ledger unavailable\"}";
/// Larger bodies are refused before parsing (rmcp's own limit is the same 4 MiB).
const MAX_BODY: usize = 4 * 1024 * 1024;
/// What is read of an unauthenticated request's body: enough to name the tool in the audit
/// row of an ordinary call; a larger body is not read, and its row names no tool.
const UNAUTHENTICATED_READ: usize = 16 * 1024;

/// Audit codes of refusals that never reach a tool (the caller sees only the HTTP status).
const UNAUTHENTICATED: &str = "UNAUTHENTICATED";
const REVOKED: &str = "CLIENT_REVOKED";
const ROLE_NOT_SERVED: &str = "ROLE_NOT_SERVED";
const OTHERS_SESSION: &str = "SESSION_OF_ANOTHER_CLIENT";
/// The audit's client for a request that named no live client.
const NOBODY: &str = "unauthenticated";

/// What the guard needs: the served roles' gates (for their auditors) and the ledger.
#[derive(Debug)]
pub struct Guard {
    pub gates: Vec<(Role, Arc<Gate>)>,
    pub ledger: Arc<dyn Ledger>,
    /// Which client opened each session this process holds: a session is its opener's only,
    /// so another client holding its id (from a log, a proxy) can neither use nor end it.
    pub sessions: SessionOwners,
    /// rmcp's sessions: an owner is forgotten only once its session is gone from here.
    pub session_manager: Arc<LocalSessionManager>,
    /// Each client's lease of slots from its shared window: a call is counted here, and the
    /// ledger is written only when a lease runs out.
    pub meter: CallMeter,
}

/// Session id → the client that opened it, and the session's audit label (a salted digest,
/// computed once per session rather than on every call).
#[derive(Debug, Default)]
pub struct SessionOwners(std::sync::Mutex<std::collections::HashMap<String, Arc<Opened>>>);

/// A session this process holds.
#[derive(Debug)]
pub struct Opened {
    pub owner: String,
    pub label: Arc<str>,
}

impl SessionOwners {
    fn get(&self, session: &str) -> Option<Arc<Opened>> {
        self.0.lock().ok()?.get(session).cloned()
    }

    fn set(&self, session: &str, opened: Opened) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(session.to_owned(), Arc::new(opened));
        }
    }

    fn forget(&self, session: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(session);
        }
    }

    /// Forgets every session rmcp no longer holds (closed, or expired idle). A request on a
    /// gone session forgets its own entry; this catches the sessions nobody asked for again,
    /// which would otherwise stay here for the life of the process.
    pub async fn sweep(&self, manager: &LocalSessionManager) {
        let ids: Vec<String> = match self.0.lock() {
            Ok(map) => map.keys().cloned().collect(),
            Err(_) => return,
        };
        for id in ids {
            let alive = manager
                .has_session(&SessionId::from(id.as_str()))
                .await
                .unwrap_or(true);
            if !alive {
                self.forget(&id);
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().map_or(0, |map| map.len())
    }
}

pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
/// The session label of a request without a session (stateless mode, or before one opened).
pub(crate) const NO_SESSION: &str = "h-none";

impl Guard {
    fn gate(&self, role: Option<Role>) -> &Arc<Gate> {
        let found = role.and_then(|r| self.gates.iter().find(|(g, _)| *g == r));
        // `gates` is never empty: `http::run` serves at least one role.
        &found.unwrap_or(&self.gates[0]).1
    }
}

/// The audit's tool column: a catalog name, `unknown`, or `-` for a request that is not a tool
/// call (never a free-form name).
fn audit_tool(peek: &Peek<'_>) -> &'static str {
    match &peek.tool {
        Some(name) => catalog::lookup(name).map_or("unknown", |e| e.name),
        None => "-",
    }
}

pub async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let (mut parts, body) = request.into_parts();
    // The token before the body: a caller without a valid one makes the server read no more
    // than a small peek's worth (for the audit row's tool), never the 4 MiB a client may send.
    let authenticated = authenticate(&guard, &parts.headers).await;
    let bytes = if authenticated.is_ok() {
        match axum::body::to_bytes(body, MAX_BODY).await {
            Ok(bytes) => bytes,
            Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large").into_response(),
        }
    } else if announced_length(&parts.headers).is_some_and(|n| n > UNAUTHENTICATED_READ) {
        // Announced larger than a peek: not waited for at all.
        Bytes::new()
    } else {
        axum::body::to_bytes(body, UNAUTHENTICATED_READ)
            .await
            .unwrap_or_default()
    };
    let peek = Peek::of(&bytes);
    let client = match authenticated {
        Ok(client) => client,
        Err(refusal) => {
            let (role, name, code, status, body, rule) = match &refusal {
                Refusal::Unknown => (
                    None,
                    NOBODY,
                    UNAUTHENTICATED,
                    StatusCode::UNAUTHORIZED,
                    UNAUTHORIZED_BODY,
                    Some(Rule::ClientAuth),
                ),
                Refusal::Revoked(row) => (
                    Role::parse(&row.role),
                    row.name.as_str(),
                    REVOKED,
                    StatusCode::UNAUTHORIZED,
                    UNAUTHORIZED_BODY,
                    Some(Rule::ClientAuth),
                ),
                Refusal::Unavailable => (
                    None,
                    NOBODY,
                    ErrorCode::LedgerUnavailable.as_str(),
                    StatusCode::SERVICE_UNAVAILABLE,
                    UNAVAILABLE_BODY,
                    None,
                ),
            };
            let why = Why::before_the_gate(&[], rule);
            audit_refusal(
                &guard,
                role,
                name,
                code,
                peek.as_ref(),
                &parts.headers,
                why,
                started,
            )
            .await;
            return fixed(status, body);
        }
    };
    let Some(role) = Role::parse(&client.role).filter(|r| guard.gates.iter().any(|(g, _)| g == r))
    else {
        let why = Why::before_the_gate(&[Rule::ClientAuth], Some(Rule::RoleGate));
        audit_refusal(
            &guard,
            None,
            &client.name,
            ROLE_NOT_SERVED,
            peek.as_ref(),
            &parts.headers,
            why,
            started,
        )
        .await;
        return fixed(StatusCode::FORBIDDEN, FORBIDDEN_BODY);
    };
    // A JSON-RPC batch (removed from MCP in 2025-06-18) could hide calls from the ceiling.
    // Refused only after the token: a caller without one learns nothing but 401.
    if bytes.first() == Some(&b'[') {
        return (
            StatusCode::BAD_REQUEST,
            "JSON-RPC batches are not supported",
        )
            .into_response();
    }
    if let Some(call) = peek.as_ref().filter(|p| p.tool.is_some()) {
        let refused = match guard.ledger.client_store() {
            None => Some((ErrorCode::LedgerUnavailable, None)),
            Some(store) => match guard
                .meter
                .take(store, &client.name, client.rate_per_minute)
                .await
            {
                Ok(RateVerdict::Allowed) => None,
                Ok(RateVerdict::Limited { retry_after }) => {
                    Some((ErrorCode::RateLimited, Some(whole_seconds(retry_after))))
                }
                Ok(RateVerdict::Gone) => {
                    // Revoked between the lookup and the count.
                    audit_refusal(
                        &guard,
                        Some(role),
                        &client.name,
                        REVOKED,
                        Some(call),
                        &parts.headers,
                        Why::before_the_gate(&[Rule::RoleGate], Some(Rule::ClientAuth)),
                        started,
                    )
                    .await;
                    return fixed(StatusCode::UNAUTHORIZED, UNAUTHORIZED_BODY);
                }
                Err(e) => {
                    tracing::warn!(client = %client.name, error = %e, "call window not counted");
                    Some((ErrorCode::LedgerUnavailable, None))
                }
            },
        };
        if let Some((code, retry_after)) = refused {
            let why =
                Why::before_the_gate(&[Rule::ClientAuth, Rule::RoleGate], Rule::refusing(code));
            audit_refusal(
                &guard,
                Some(role),
                &client.name,
                code.as_str(),
                Some(call),
                &parts.headers,
                why,
                started,
            )
            .await;
            return tool_refusal(&call.id, code, retry_after);
        }
    }
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let opened = session.as_deref().and_then(|id| guard.sessions.get(id));
    if opened.as_ref().is_some_and(|o| o.owner != client.name) {
        // Someone else's session: answered as an unknown session is (rmcp's 404), audited.
        let why = Why::before_the_gate(
            &[Rule::ClientAuth, Rule::RoleGate],
            Some(Rule::SessionOwner),
        );
        audit_refusal(
            &guard,
            Some(role),
            &client.name,
            OTHERS_SESSION,
            peek.as_ref(),
            &parts.headers,
            why,
            started,
        )
        .await;
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let name = client.name.clone();
    parts.extensions.insert(Caller {
        name: client.name,
        role,
        session_label: opened.map(|o| Arc::clone(&o.label)),
    });
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    match (&session, response.headers().get(SESSION_HEADER)) {
        // A session opened by this request belongs to its client.
        (None, Some(opened)) => {
            if let Ok(opened) = opened.to_str() {
                let label = guard
                    .gate(Some(role))
                    .services()
                    .auditor
                    .session_label(opened);
                guard.sessions.set(
                    opened,
                    Opened {
                        owner: name,
                        label: label.into(),
                    },
                );
            }
        }
        // Forgotten once the session is gone (ended, expired), never on an answer alone: rmcp
        // answers 404 to an unknown JSON-RPC method and 403 to a bad Host, within a session
        // that goes on, and a forgotten owner would let any client holding the id use it.
        (Some(id), _) if !session_alive(&guard, id).await => guard.sessions.forget(id),
        _ => {}
    }
    response
}

/// Whether rmcp still holds the session (true when it cannot say: the owner is kept).
async fn session_alive(guard: &Guard, id: &str) -> bool {
    guard
        .session_manager
        .has_session(&SessionId::from(id))
        .await
        .unwrap_or(true)
}

enum Refusal {
    /// No token, a malformed one, or none the ledger knows (or a wrong secret).
    Unknown,
    Revoked(ClientRow),
    Unavailable,
}

/// The request's `Content-Length`, when it has a readable one.
fn announced_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

async fn authenticate(guard: &Guard, headers: &HeaderMap) -> Result<ClientRow, Refusal> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .ok_or(Refusal::Unknown)?;
    let (key_id, secret) = clients::parse_token(token).ok_or(Refusal::Unknown)?;
    let store = guard.ledger.client_store().ok_or(Refusal::Unavailable)?;
    let row = match store.client_by_key(key_id).await {
        Ok(Some(row)) => row,
        Ok(None) => return Err(Refusal::Unknown),
        Err(e) => {
            tracing::warn!(error = %e, "client lookup failed");
            return Err(Refusal::Unavailable);
        }
    };
    if !clients::secret_matches(&row, secret) {
        return Err(Refusal::Unknown);
    }
    if row.revoked_at.is_some() {
        return Err(Refusal::Revoked(row));
    }
    Ok(row)
}

#[allow(clippy::too_many_arguments)]
async fn audit_refusal(
    guard: &Guard,
    role: Option<Role>,
    client: &str,
    code: &str,
    peek: Option<&Peek<'_>>,
    headers: &HeaderMap,
    why: Why,
    started: Instant,
) {
    let services = guard.gate(role).services();
    let tool = peek.map_or("-", audit_tool);
    let arguments = peek.map_or_else(|| Value::Object(Map::new()), Peek::arguments);
    let digest = services.auditor.digest(tool, &arguments);
    let session = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map_or_else(
            || NO_SESSION.to_owned(),
            |id| services.auditor.session_label(id),
        );
    let record = AuditRecord {
        at: (services.clock)(),
        role: role.map_or("-", Role::as_str).to_owned(),
        client: client.to_owned(),
        tool: tool.to_owned(),
        outcome: "error".to_owned(),
        error_code: Some(code.to_owned()),
        duration_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        args_digest: digest,
        capability: catalog::capability(tool),
        session,
        decision: why.decision.to_owned(),
        rules: why.rules,
        denied_by: why.denied_by,
        ..AuditRecord::default()
    };
    services.auditor.record(&record).await;
}

fn fixed(status: StatusCode, body: &'static str) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == StatusCode::UNAUTHORIZED {
        headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// A `tools/call` refused before the tool: the tool result every client reads (the envelope
/// with the code), with `Retry-After` when waiting helps. HTTP 200, so the session goes on.
fn tool_refusal(id: &Value, code: ErrorCode, retry_after_secs: Option<u64>) -> Response {
    let envelope = envelope::failure(&ToolError::new(code));
    let message = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "content": [{"type": "text", "text": envelope.to_string()}],
            "structuredContent": envelope,
            "isError": true,
        }
    });
    let mut response = (StatusCode::OK, Bytes::from(message.to_string())).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = retry_after_secs {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

/// A Retry-After in whole seconds, rounded up: retrying earlier would be refused again.
fn whole_seconds(wait: std::time::Duration) -> u64 {
    u64::try_from(wait.as_millis().div_ceil(1000))
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened(owner: &str) -> Opened {
        Opened {
            owner: owner.to_owned(),
            label: Arc::from("h-0"),
        }
    }

    #[tokio::test]
    async fn a_sweep_forgets_the_owners_of_gone_sessions_only() {
        let manager = LocalSessionManager::default();
        let (live, _transport) = manager
            .create_session()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let owners = SessionOwners::default();
        owners.set(&live, opened("alpha"));
        owners.set("expired-long-ago", opened("beta"));
        owners.sweep(&manager).await;
        assert_eq!(owners.len(), 1);
        assert_eq!(
            owners.get(&live).map(|o| o.owner.clone()),
            Some("alpha".to_owned())
        );
        manager
            .close_session(&live)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        owners.sweep(&manager).await;
        assert_eq!(owners.len(), 0);
    }
}

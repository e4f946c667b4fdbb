//! The HTTP transport's request handling: the router `serve --http` serves (probes, the guard,
//! rmcp's Streamable HTTP service, the roles' real gates against the demo fakes and a SQLite
//! ledger), called in process as a tower `Service` with a method, path, headers and body of the
//! fuzzer's making. Whatever the request: no panic; without a live token the answer is `401`
//! with the one fixed body (so the guard refused it before anything behind it ran); a client of
//! a role not served gets `403`; a Host or Origin outside the allowlists is never served; another
//! client's session is answered as an unknown one; probes answer without a token; and no error
//! body (4xx, 5xx) carries a byte of the request: every free-form piece starts with a marker
//! that must never come back.
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arbitrary::Arbitrary;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode, header};
use care_core::catalog::Role;
use care_core::clients::{self, NewClient};
use care_core::ledger::Ledger;
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt;

/// Starts every free-form piece of a request; an error body containing it echoed the request.
const MARKER: &str = "mk7q";
const UNAUTHORIZED_BODY: &str = "{\"error\":\"unauthorized\"}";
const FORBIDDEN_BODY: &str = "{\"error\":\"forbidden\"}";
/// Served besides the loopback names: any port, and one name on one port only.
const ALLOWED_HOSTS: [&str; 2] = ["care.example.org", "api.example.org:8443"];
const ALLOWED_ORIGIN: &str = "https://app.example.org:8443";
const SERVED: [Role; 2] = [Role::Reviews, Role::Lead];

/// The clients in the ledger: two served, one of a role not served, one revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Alpha,
    Beta,
    Gamma,
    Revoked,
}
const WHO: [Who; 4] = [Who::Alpha, Who::Beta, Who::Gamma, Who::Revoked];

struct World {
    runtime: tokio::runtime::Runtime,
    /// Sessions (`Mcp-Session-Id`) and stateless (`--stateless`).
    routers: [Router; 2],
    tokens: HashMap<&'static str, String>,
    /// A session `alpha` opened on the session router at start.
    alpha_session: String,
    _upstreams: Vec<Box<dyn care_fakes::Upstream>>,
}

impl World {
    fn token(&self, who: Who) -> &str {
        &self.tokens[name(who)]
    }
}

fn name(who: Who) -> &'static str {
    match who {
        Who::Alpha => "alpha",
        Who::Beta => "beta",
        Who::Gamma => "gamma",
        Who::Revoked => "revoked",
    }
}

async fn add_clients(ledger: &Arc<dyn Ledger>) -> HashMap<&'static str, String> {
    let store = ledger
        .client_store()
        .expect("the SQLite ledger stores clients");
    let mut tokens = HashMap::new();
    for who in WHO {
        let minted = clients::mint();
        let role = match who {
            Who::Alpha | Who::Revoked => Role::Reviews,
            Who::Beta => Role::Lead,
            Who::Gamma => Role::Ops,
        };
        store
            .add_client(&NewClient {
                name: name(who).to_owned(),
                role,
                // Never the ceiling: the fuzzer's calls should reach the tools.
                rate_per_minute: u32::MAX,
                key_id: minted.key_id.clone(),
                secret_digest: minted.secret_digest.clone(),
            })
            .await
            .expect("client added");
        tokens.insert(name(who), minted.token);
    }
    store
        .revoke_client(name(Who::Revoked))
        .await
        .expect("client revoked");
    tokens
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let demo = care_fuzz::demo::start("http");
        let (routers, tokens, alpha_session) = demo.runtime.block_on(async {
            let ledger = demo.ledger().await;
            let tokens = add_clients(&ledger).await;
            let mut gates = Vec::new();
            for role in SERVED {
                gates.push((role, Arc::new(demo.gate(role, &ledger).await)));
            }
            let hosts: Vec<String> = ALLOWED_HOSTS.iter().map(|h| (*h).to_owned()).collect();
            let router = |stateless| {
                care_mcp::http_router_for_fuzzing(
                    &gates,
                    hosts.clone(),
                    vec![ALLOWED_ORIGIN.to_owned()],
                    1800,
                    stateless,
                )
                .expect("router")
            };
            let routers = [router(false), router(true)];
            let session = open_session(&routers[0], &tokens["alpha"]).await;
            (routers, tokens, session)
        });
        World {
            runtime: demo.runtime,
            routers,
            tokens,
            alpha_session,
            _upstreams: demo.upstreams,
        }
    })
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#;

fn post(token: &str, session: Option<&str>, body: &str) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header(header::HOST, "localhost")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(id) = session {
        request = request
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18");
    }
    request.body(Body::from(body.to_owned())).expect("request")
}

async fn open_session(router: &Router, token: &str) -> String {
    let response = router
        .clone()
        .oneshot(post(token, None, INITIALIZE))
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::OK, "initialize");
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let _ = read_body(response, Duration::from_secs(10)).await;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let response = router
        .clone()
        .oneshot(post(token, Some(&id), initialized))
        .await
        .expect("infallible");
    assert!(response.status().is_success(), "initialized");
    id
}

/// The body, or what arrived of it within `limit` (an SSE stream may stay open).
async fn read_body(response: Response<Body>, limit: Duration) -> Vec<u8> {
    use http_body_util::BodyExt;
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    let _ = tokio::time::timeout(limit, async {
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                bytes.extend_from_slice(&data);
            }
        }
    })
    .await;
    bytes
}

#[derive(Debug, Arbitrary)]
enum Auth<'a> {
    Missing,
    /// `<scheme> <token>`: a scheme of [`SCHEMES`], the token of a client, a wrong secret for a
    /// known key id, a well-shaped unknown token.
    Token {
        scheme: u8,
        who: u8,
        space_after: bool,
    },
    Raw(&'a str),
}
const SCHEMES: [&str; 5] = ["Bearer", "bearer", "BEARER", "Basic", "Token"];

#[derive(Debug, Arbitrary)]
enum Host<'a> {
    Missing,
    Listed(u8),
    Raw(&'a str),
}
/// Host values and whether they are allowed.
const HOSTS: [(&str, bool); 10] = [
    ("localhost", true),
    ("localhost:8700", true),
    ("127.0.0.1:8700", true),
    ("[::1]:8700", true),
    ("care.example.org", true),
    ("care.example.org:443", true),
    ("api.example.org:8443", true),
    ("api.example.org:9000", false),
    ("evil.example", false),
    ("localhost.evil.example", false),
];

#[derive(Debug, Arbitrary)]
enum Origin<'a> {
    Missing,
    Listed(u8),
    Raw(&'a str),
}
const ORIGINS: [(&str, bool); 8] = [
    ("http://localhost:3000", true),
    ("https://127.0.0.1", true),
    ("http://[::1]:8080", true),
    ("https://app.example.org:8443", true),
    ("https://app.example.org", false),
    ("null", false),
    ("https://evil.example", false),
    ("http://localhost.evil.example", false),
];

#[derive(Debug, Arbitrary)]
enum Session<'a> {
    Missing,
    Alpha,
    Raw(&'a str),
}

#[derive(Debug, Arbitrary)]
enum Payload<'a> {
    Initialize,
    Initialized,
    ToolsList,
    Call { tool: u8, arguments: &'a str },
    Batch,
    Raw(&'a [u8]),
}
const TOOLS: [&str; 6] = [
    "kpi_record",
    "asc_reviews_list",
    "approval_request",
    "cluster_pods",
    "no_such_tool",
    "asc_review_reply",
];

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    stateless: bool,
    method: u8,
    path: Result<u8, &'a str>,
    auth: Auth<'a>,
    host: Host<'a>,
    origin: Origin<'a>,
    session: Session<'a>,
    protocol: Option<u8>,
    content_type: Result<u8, &'a str>,
    accept: Result<u8, &'a str>,
    payload: Payload<'a>,
}

const METHODS: [&str; 7] = ["POST", "GET", "DELETE", "PUT", "OPTIONS", "HEAD", "PATCH"];
const PATHS: [&str; 7] = [
    "/mcp",
    "/mcp?mk7q=1",
    "/healthz",
    "/readyz",
    "/",
    "/mcp/",
    "/MCP",
];
const PROTOCOLS: [&str; 4] = ["2025-06-18", "2025-11-25", "2026-07-28", "2024-11-05"];
const CONTENT_TYPES: [&str; 3] = [
    "application/json",
    "text/plain",
    "application/json; charset=utf-8",
];
const ACCEPTS: [&str; 4] = [
    "application/json, text/event-stream",
    "application/json",
    "text/event-stream",
    "*/*",
];

fn pick<T: Copy>(list: &[T], i: u8) -> T {
    list[usize::from(i) % list.len()]
}

/// How the guard must treat the request's credentials.
#[derive(Debug, PartialEq, Eq)]
enum Expect {
    Caller(Who),
    Unauthorized,
    Forbidden,
}

/// Sets a header; false when no HTTP peer could send the value (controls, newlines): it is
/// left out, and the request is judged as one without it.
fn set(request: &mut Request<Body>, name: HeaderName, value: &str) -> bool {
    match HeaderValue::from_str(value) {
        Ok(value) => {
            request.headers_mut().insert(name, value);
            true
        }
        Err(_) => false,
    }
}

fn payload(payload: &Payload<'_>) -> Vec<u8> {
    match payload {
        Payload::Initialize => INITIALIZE.as_bytes().to_vec(),
        Payload::Initialized => {
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec()
        }
        Payload::ToolsList => br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.to_vec(),
        Payload::Call { tool, arguments } => {
            let arguments = serde_json::from_str::<serde_json::Value>(arguments)
                .unwrap_or_else(|_| serde_json::Value::String(format!("{MARKER}{arguments}")));
            serde_json::json!({
                "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": pick(&TOOLS, *tool), "arguments": arguments},
            })
            .to_string()
            .into_bytes()
        }
        Payload::Batch => format!("[{INITIALIZE}]").into_bytes(),
        Payload::Raw(bytes) => [MARKER.as_bytes(), *bytes].concat(),
    }
}

fuzz_target!(|input: Input<'_>| {
    let w = world();
    let router = &w.routers[usize::from(input.stateless)];

    let method = pick(&METHODS, input.method);
    let path = match input.path {
        Ok(i) => pick(&PATHS, i).to_owned(),
        Err(raw) => format!("/{MARKER}{raw}"),
    };
    let Ok(mut request) = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).expect("method"))
        .uri(&path)
        .body(Body::from(payload(&input.payload)))
    else {
        return; // not a request target a client could send
    };
    let mut expect = Expect::Unauthorized;
    match input.auth {
        Auth::Missing => {}
        Auth::Token {
            scheme,
            who,
            space_after,
        } => {
            let scheme = pick(&SCHEMES, scheme);
            let token = match usize::from(who) % 6 {
                i @ 0..4 => {
                    let who = WHO[i];
                    if scheme.eq_ignore_ascii_case("bearer") {
                        expect = match who {
                            Who::Alpha | Who::Beta => Expect::Caller(who),
                            Who::Gamma => Expect::Forbidden,
                            Who::Revoked => Expect::Unauthorized,
                        };
                    }
                    w.token(who).to_owned()
                }
                // A known key id with another secret.
                4 => format!("{}{}", &w.token(Who::Alpha)[..22], "0".repeat(64)),
                _ => format!("care_{}_{}", "ab".repeat(8), "cd".repeat(32)),
            };
            let space = if space_after { " " } else { "" };
            set(
                &mut request,
                header::AUTHORIZATION,
                &format!("{scheme} {token}{space}"),
            );
        }
        Auth::Raw(raw) => {
            set(
                &mut request,
                header::AUTHORIZATION,
                &format!("Bearer {MARKER}{raw}"),
            );
        }
    }
    let host_ok = match input.host {
        Host::Missing => false,
        Host::Listed(i) => {
            let (host, ok) = pick(&HOSTS, i);
            set(&mut request, header::HOST, host);
            ok
        }
        Host::Raw(raw) => {
            set(&mut request, header::HOST, &format!("{MARKER}{raw}"));
            false
        }
    };
    let origin_ok = match input.origin {
        Origin::Missing => true,
        Origin::Listed(i) => {
            let (origin, ok) = pick(&ORIGINS, i);
            set(&mut request, header::ORIGIN, origin);
            ok
        }
        // Without the header (a value no peer could send) there is no Origin to refuse.
        Origin::Raw(raw) => !set(&mut request, header::ORIGIN, &format!("{MARKER}{raw}")),
    };
    let others_session = match input.session {
        Session::Missing => false,
        Session::Alpha => {
            set(
                &mut request,
                HeaderName::from_static("mcp-session-id"),
                &w.alpha_session,
            );
            // alpha's session stays open for the inputs after this one.
            if expect == Expect::Caller(Who::Alpha) && method == "DELETE" {
                *request.method_mut() = Method::POST;
            }
            expect == Expect::Caller(Who::Beta) && !input.stateless
        }
        Session::Raw(raw) => {
            set(
                &mut request,
                HeaderName::from_static("mcp-session-id"),
                &format!("{MARKER}{raw}"),
            );
            false
        }
    };
    if let Some(i) = input.protocol {
        set(
            &mut request,
            HeaderName::from_static("mcp-protocol-version"),
            pick(&PROTOCOLS, i),
        );
    }
    let content_type = match input.content_type {
        Ok(i) => pick(&CONTENT_TYPES, i).to_owned(),
        Err(raw) => format!("{MARKER}{raw}"),
    };
    set(&mut request, header::CONTENT_TYPE, &content_type);
    let accept = match input.accept {
        Ok(i) => pick(&ACCEPTS, i).to_owned(),
        Err(raw) => format!("{MARKER}{raw}"),
    };
    set(&mut request, header::ACCEPT, &accept);
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let batch = matches!(input.payload, Payload::Batch);

    w.runtime.block_on(async {
        let response = router.clone().oneshot(request).await.expect("infallible");
        let status = response.status();
        let opened = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let www_authenticate = response.headers().get(header::WWW_AUTHENTICATE).cloned();
        // A GET's event stream stays open: a glance at it is enough. A POST's stream ends with
        // its answer (a tool call's may take a round trip to a fake).
        let limit = match (status.is_success(), &method) {
            (true, &Method::GET) => Duration::from_millis(20),
            (true, _) => Duration::from_secs(5),
            (false, _) => Duration::from_secs(1),
        };
        let body = read_body(response, limit).await;
        let text = String::from_utf8_lossy(&body);

        if status.is_client_error() || status.is_server_error() {
            assert!(
                !text.to_ascii_lowercase().contains(MARKER),
                "a {status} body echoes the request: {text}"
            );
        }
        if path == "/mcp" {
            match expect {
                Expect::Unauthorized => {
                    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
                    assert_eq!(text, UNAUTHORIZED_BODY);
                    assert_eq!(
                        www_authenticate.as_ref().and_then(|v| v.to_str().ok()),
                        Some("Bearer")
                    );
                }
                Expect::Forbidden => {
                    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
                    assert_eq!(text, FORBIDDEN_BODY);
                }
                Expect::Caller(_) => {
                    if !(host_ok && origin_ok) {
                        assert!(
                            [
                                StatusCode::BAD_REQUEST,
                                StatusCode::FORBIDDEN,
                                StatusCode::NOT_FOUND
                            ]
                            .contains(&status),
                            "a bad Host or Origin got {status}: {text}"
                        );
                    }
                    if others_session && !batch {
                        assert_eq!(
                            status,
                            StatusCode::NOT_FOUND,
                            "another client's session: {text}"
                        );
                    }
                }
            }
        } else if method == Method::GET && path == "/healthz" {
            assert_eq!((status, text.as_ref()), (StatusCode::OK, "ok"));
        } else if method == Method::GET && path == "/readyz" {
            assert_eq!((status, text.as_ref()), (StatusCode::OK, "ready"));
        } else if path != "/healthz" && path != "/readyz" {
            assert!(!status.is_success(), "{path} served: {status}");
        }

        // A session the input opened is closed again, so a long run holds a bounded number.
        if let (Some(id), Expect::Caller(who)) = (opened, &expect)
            && id != w.alpha_session
        {
            let close = Request::delete("/mcp")
                .header(header::HOST, "localhost")
                .header(header::AUTHORIZATION, format!("Bearer {}", w.token(*who)))
                .header("mcp-session-id", id)
                .body(Body::empty())
                .expect("request");
            let response = router.clone().oneshot(close).await.expect("infallible");
            let _ = read_body(response, Duration::from_secs(1)).await;
        }
    });
});

//! The scaffold under a tiny fake: every request passes the front (credentials checked and
//! recorded, injected failures in order and worn out, delays after processing) before the
//! fake's routes, from sync tests and async runtimes alike, and a dropped fake stops.
//! A raw HTTP client pokes the fake directly: these tests check the fake, not an upstream client.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use care_fakes::http::{Dialect, Failure, FakeServer, Plain};

/// An upstream that wants an `Api-Key` header, answers refusals with 403 and words its
/// errors as JSON, like Discourse does.
struct KeyedDialect;

impl Dialect for KeyedDialect {
    fn authorize(&self, request: &Parts) -> Result<(), String> {
        match request.headers.get("api-key").map(|v| v.to_str()) {
            Some(Ok("good")) => Ok(()),
            Some(_) => Err("wrong api key".into()),
            None => Err("no api key".into()),
        }
    }

    fn refusal(&self, reason: &str) -> Response {
        (
            StatusCode::FORBIDDEN,
            format!("{{\"errors\":[\"{reason}\"]}}"),
        )
            .into_response()
    }

    fn failure(&self, status: StatusCode) -> Response {
        (status, "{\"errors\":[\"injected\"]}").into_response()
    }

    fn recorded_headers(&self) -> &'static [&'static str] {
        &["api-username"]
    }
}

/// A fake with one read, one write that counts what reached it, and its base URL echoed.
fn start(dialect: impl Dialect) -> (FakeServer, Arc<AtomicUsize>) {
    let writes = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&writes);
    let server = FakeServer::start("tiny", dialect, move |base_url| {
        let base_url = base_url.to_owned();
        Router::new()
            .route("/hello", get(move || async move { base_url }))
            .route(
                "/posts",
                post(move |body: String| async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    (StatusCode::CREATED, body)
                }),
            )
    })
    .unwrap();
    (server, writes)
}

/// One HTTP/1.1 exchange over a plain socket: (status, raw head, body).
fn send(base_url: &str, request_line: &str, headers: &[&str], body: &str) -> (u16, String, String) {
    let addr = base_url.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut text = format!("{request_line} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for h in headers {
        text.push_str(h);
        text.push_str("\r\n");
    }
    text.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(text.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_owned())
}

#[test]
fn every_request_is_recorded_with_what_it_was_answered() {
    let (server, _) = start(KeyedDialect);
    let url = server.base_url().to_owned();
    let (status, _, body) = send(
        &url,
        "GET /hello?a=1&b=%20",
        &["Api-Key: good", "Api-Username: system"],
        "",
    );
    assert_eq!((status, body.as_str()), (200, url.as_str()));
    let (status, _, body) = send(&url, "POST /posts", &["Api-Key: good"], "{\"raw\":\"hi\"}");
    assert_eq!((status, body.as_str()), (201, "{\"raw\":\"hi\"}"));
    let (status, _, _) = send(&url, "DELETE /nowhere", &["Api-Key: good"], "");
    assert_eq!(status, 404, "the fake's own 404 passes the front too");

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let hello = &requests[0];
    assert_eq!(
        (hello.method.as_str(), hello.path.as_str()),
        ("GET", "/hello")
    );
    assert_eq!(hello.query.as_deref(), Some("a=1&b=%20"));
    assert_eq!(hello.header("api-username"), Some("system"));
    assert_eq!(
        hello.header("api-key"),
        None,
        "only the headers the dialect keeps"
    );
    assert!(hello.authorized && hello.auth_error.is_none() && !hello.injected);
    assert_eq!((hello.status, hello.body.as_deref()), (200, None));
    assert_eq!(requests[1].body.as_deref(), Some("{\"raw\":\"hi\"}"));
    assert_eq!(requests[1].status, 201);
    assert_eq!(
        (requests[2].method.as_str(), requests[2].status),
        ("DELETE", 404)
    );

    server.clear_requests();
    assert!(server.requests().is_empty());
}

#[test]
fn refused_credentials_never_reach_the_routes() {
    let (server, writes) = start(KeyedDialect);
    let url = server.base_url();
    let (status, _, body) = send(url, "POST /posts", &["Api-Key: stolen"], "x");
    assert_eq!(
        (status, body.as_str()),
        (403, "{\"errors\":[\"wrong api key\"]}")
    );
    let (status, _, _) = send(url, "POST /posts", &[], "x");
    assert_eq!(status, 403);
    assert_eq!(writes.load(Ordering::SeqCst), 0);
    let requests = server.requests();
    assert!(requests.iter().all(|r| !r.authorized && r.status == 403));
    assert_eq!(requests[0].auth_error.as_deref(), Some("wrong api key"));
    assert_eq!(requests[1].auth_error.as_deref(), Some("no api key"));
}

#[test]
fn injected_failures_apply_in_order_wear_out_and_come_before_credentials() {
    let (server, writes) = start(KeyedDialect);
    let url = server.base_url();
    server.inject(
        Failure::status("/posts", 429)
            .method("POST")
            .retry_after("7")
            .times(2),
    );
    server.inject(Failure::status("/", 503).times(1));

    let (status, head, body) = send(url, "GET /hello", &["Api-Key: good"], "");
    assert_eq!(status, 503, "the POST-only failure does not match a GET");
    assert_eq!(body, "{\"errors\":[\"injected\"]}", "worded by the dialect");
    assert!(!head.contains("retry-after"));
    for _ in 0..2 {
        let (status, head, _) = send(url, "POST /posts", &["Api-Key: good"], "x");
        assert_eq!(status, 429, "injected first, matched first");
        assert!(head.contains("retry-after: 7"), "{head}");
    }
    let (status, _, _) = send(url, "POST /posts", &["Api-Key: good"], "x");
    assert_eq!(status, 201, "both failures are used up");
    assert_eq!(
        writes.load(Ordering::SeqCst),
        1,
        "failed requests never reach the routes"
    );

    server.inject(Failure::status("/hello", 500));
    let (status, _, _) = send(url, "GET /hello", &[], "");
    assert_eq!(status, 500, "a failure answers before the credential check");
    let last = server.requests().pop().unwrap();
    assert!(
        last.injected && !last.authorized,
        "the verdict is still recorded"
    );
    assert_eq!(last.auth_error.as_deref(), Some("no api key"));
    for _ in 0..3 {
        assert_eq!(
            send(url, "GET /hello", &["Api-Key: good"], "").0,
            500,
            "no count: every time"
        );
    }
    server.clear_failures();
    assert_eq!(send(url, "GET /hello", &["Api-Key: good"], "").0, 200);
    let injected = server.requests().iter().filter(|r| r.injected).count();
    assert_eq!(injected, 7);
}

#[test]
fn a_delay_holds_the_answer_after_the_request_is_processed() {
    let (server, writes) = start(Plain);
    let by = Duration::from_millis(600);
    server.delay("POST", "/posts", by);
    let url = server.base_url().to_owned();
    let started = Instant::now();
    let answer = std::thread::spawn(move || send(&url, "POST /posts", &[], "x").0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.requests().is_empty() {
        assert!(Instant::now() < deadline, "the request never arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        writes.load(Ordering::SeqCst),
        1,
        "processed before the answer"
    );
    assert_eq!(
        server.requests()[0].status,
        201,
        "recorded while the answer waits"
    );
    assert_eq!(answer.join().unwrap(), 201);
    assert!(started.elapsed() >= by);

    let started = Instant::now();
    assert_eq!(send(server.base_url(), "GET /hello", &[], "").0, 200);
    assert!(
        started.elapsed() < by,
        "other methods and paths are not held"
    );
    server.reset();
    let started = Instant::now();
    assert_eq!(send(server.base_url(), "POST /posts", &[], "x").0, 201);
    assert!(started.elapsed() < by, "reset drops the delay");
    assert_eq!(server.requests().len(), 1, "reset forgets the requests");
}

#[test]
fn a_dropped_fake_stops_even_with_an_answer_held_back() {
    let (server, _) = start(Plain);
    server.delay("GET", "/hello", Duration::from_secs(600));
    let url = server.base_url().to_owned();
    let addr = url.strip_prefix("http://").unwrap().to_owned();
    let held = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
    });
    while server.requests().is_empty() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let started = Instant::now();
    drop(server);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stop waits a bounded grace"
    );
    held.join().unwrap();
    let addr = url.strip_prefix("http://").unwrap();
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens after the drop"
    );
}

#[test]
fn it_outlives_the_runtime_it_was_started_in() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (server, _) = runtime.block_on(async { start(Plain) });
    drop(runtime);
    assert_eq!(send(server.base_url(), "GET /hello", &[], "").0, 200);
}

#[tokio::test]
async fn it_serves_a_client_on_the_test_runtime() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (server, _) = start(Plain);
    let response = reqwest::Client::new()
        .post(format!("{}/posts", server.base_url()))
        .body("from reqwest")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    assert_eq!(response.text().await.unwrap(), "from reqwest");
    assert_eq!(server.requests()[0].body.as_deref(), Some("from reqwest"));
}

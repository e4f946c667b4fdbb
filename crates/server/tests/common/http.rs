//! `care-mcp serve --http` as a child process on a free loopback port, clients made with the
//! real `care-mcp clients` CLI, and raw HTTP (reqwest) for what MCP clients hide: statuses,
//! headers, fixed bodies.
// A test client, not an upstream client: the domain kit's HttpClient rule does not apply.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Sandbox, TIMEOUT, run_once};

/// A running `serve --http`.
#[derive(Debug)]
pub struct HttpServer {
    child: Child,
    pub addr: SocketAddr,
    /// Every stderr line so far (the reader thread keeps appending).
    stderr: Arc<Mutex<Vec<String>>>,
    _lines: Receiver<String>,
}

impl HttpServer {
    /// `care-mcp serve --http 127.0.0.1:0 --role R ... EXTRA` in the sandbox's environment.
    pub fn start(sandbox: &Sandbox, roles: &[&str], extra: &[&str]) -> HttpServer {
        let mut cmd = sandbox.command();
        HttpServer::start_with(&mut cmd, roles, extra)
    }

    pub fn start_with(cmd: &mut Command, roles: &[&str], extra: &[&str]) -> HttpServer {
        HttpServer::start_on(cmd, "127.0.0.1:0", roles, extra)
    }

    /// `serve --http ADDR` with `cmd`'s environment.
    pub fn start_on(cmd: &mut Command, addr: &str, roles: &[&str], extra: &[&str]) -> HttpServer {
        cmd.args(["serve", "--http", addr]);
        for role in roles {
            cmd.args(["--role", role]);
        }
        cmd.args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn care-mcp serve --http");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    lines.lock().expect("lines").push(line.clone());
                    let _ = tx.send(line);
                }
            });
        }
        let deadline = Instant::now() + TIMEOUT;
        let addr = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match rx.recv_timeout(left) {
                Ok(line) => line,
                Err(_) => {
                    let _ = child.kill();
                    panic!(
                        "no 'serving on http' line; stderr:\n{}",
                        lines.lock().expect("lines").join("\n")
                    );
                }
            };
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["fields"]["message"] == "serving on http" {
                break v["fields"]["addr"]
                    .as_str()
                    .expect("addr")
                    .parse()
                    .expect("a socket address");
            }
        };
        HttpServer {
            child,
            addr,
            stderr: lines,
            _lines: rx,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stderr(&self) -> Vec<String> {
        self.stderr.lock().expect("lines").clone()
    }

    /// The audit lines on stderr so far, as their `fields` objects.
    pub fn audit_lines(&self) -> Vec<Value> {
        self.stderr()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["target"] == "care_mcp::audit")
            .map(|v| v["fields"].clone())
            .collect()
    }

    /// Waits until an audit line matches (the line is written before the answer, but the
    /// reader thread may lag behind).
    pub fn wait_for_audit(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(found) = self.audit_lines().into_iter().find(&wanted) {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no matching audit line; stderr:\n{}",
                self.stderr().join("\n")
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then the exit status (within the deadline).
    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("care-mcp serve --http did not stop within {TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `care-mcp clients add NAME --role ROLE [--rate N]`: the token it printed.
pub fn add_client(sandbox: &Sandbox, name: &str, role: &str, rate: Option<u32>) -> String {
    let mut cmd = sandbox.command();
    cmd.args(["clients", "add", name, "--role", role]);
    if let Some(rate) = rate {
        cmd.args(["--rate", &rate.to_string()]);
    }
    let finished = run_once(&mut cmd, None);
    assert_eq!(finished.code(), Some(0), "clients add: {}", finished.stderr);
    let token = finished.stdout().trim().to_owned();
    assert!(token.starts_with("care_"), "{token:?}");
    token
}

/// `care-mcp clients ARGS...`, expecting success; its stdout.
pub fn clients(sandbox: &Sandbox, args: &[&str]) -> String {
    let mut cmd = sandbox.command();
    cmd.arg("clients").args(args);
    let finished = run_once(&mut cmd, None);
    assert_eq!(
        finished.code(),
        Some(0),
        "clients {args:?}: {}",
        finished.stderr
    );
    finished.stdout()
}

/// The answer of one raw POST.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Answer {
    /// The JSON-RPC message in the body (a JSON body, or the last `data:` of an SSE body).
    pub fn message(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .next_back()
            .unwrap_or_else(|| panic!("no JSON-RPC message in {:?}", self.body))
    }
}

/// Raw MCP over HTTP: a stateless-protocol client (2026-07-28 needs no session) that sets the
/// headers itself, so refusals can be read exactly.
#[derive(Debug, Clone)]
pub struct Raw {
    pub http: reqwest::Client,
    pub url: String,
}

/// reqwest is built without a default TLS provider in this tree: the process installs ring
/// (the one provider the tree uses) once, before any client is built.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Raw {
    pub fn new(server: &HttpServer) -> Raw {
        install_crypto();
        Raw {
            http: reqwest::Client::new(),
            url: server.url(),
        }
    }

    pub async fn post(
        &self,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Answer {
        let mut request = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(body.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().await.expect("the server answers");
        Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.text().await.expect("a body"),
        }
    }
}

/// A POST /mcp over raw TCP whose body the server may refuse unread: the head goes out first
/// and the body is written from its own task while the answer is read, so a server that answers
/// early and closes (as it should) is seen answering, not as a client's broken pipe (reqwest
/// reports the failed body write instead of the response; seen in CI). `headers` are the head's
/// lines after `Host`, each ending in CRLF. The answer is its head and as much of its body as
/// its `Content-Length` announces.
pub async fn post_unread(server: &HttpServer, headers: &str, body: String) -> RawAnswer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let stream = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\n{headers}Connection: close\r\n\r\n",
        server.addr
    );
    writer.write_all(head.as_bytes()).await.expect("the head");
    let sending = tokio::spawn(async move {
        // The server may close before it has all of it: that failure is the point.
        let _ = writer.write_all(body.as_bytes()).await;
    });
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    // Whole once the head and the body its Content-Length announces are in; without one, at
    // the close that `Connection: close` asks for.
    let complete = |answer: &[u8], closed: bool| {
        let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
            return false;
        };
        let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
        match head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|length| length.trim().parse::<usize>().ok())
        {
            Some(announced) => answer.len() >= end + 4 + announced,
            None => closed,
        }
    };
    let mut closed = false;
    while !complete(&answer, closed) {
        assert!(!closed, "closed before a whole answer: {answer:?}");
        let read = tokio::time::timeout(TIMEOUT, reader.read(&mut chunk))
            .await
            .expect("an answer while the body is unsent")
            .expect("a readable answer");
        closed = read == 0;
        answer.extend_from_slice(&chunk[..read]);
    }
    sending.abort();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head}"));
    RawAnswer {
        status,
        body: body.to_owned(),
    }
}

/// What [`post_unread`] read: the status and the body.
pub struct RawAnswer {
    pub status: u16,
    pub body: String,
}

/// The status of an authenticated JSON POST larger than the server reads (see [`post_unread`]).
pub async fn post_unread_body(server: &HttpServer, token: &str, body: &Value) -> u16 {
    let body = body.to_string();
    let headers = format!(
        "Authorization: Bearer {token}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    post_unread(server, &headers, body).await.status
}

/// A `tools/call` request body.
pub fn call_body(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// A legacy (2025-11-25) session held by `Mcp-Session-Id`, over raw HTTP.
#[derive(Debug, Clone)]
pub struct RawSession {
    pub raw: Raw,
    pub token: String,
    pub id: String,
}

impl Raw {
    /// `initialize` + `notifications/initialized` with 2025-11-25 (the last version with
    /// sessions); panics unless the server opened a session.
    pub async fn session(&self, token: &str) -> RawSession {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": super::PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "care-tests", "version": "0"}}});
        let answer = self.post(Some(token), &[], &init).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let id = answer
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no session id: {answer:?}"))
            .to_owned();
        let session = RawSession {
            raw: self.clone(),
            token: token.to_owned(),
            id,
        };
        let done = session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(done.status, 202, "{done:?}");
        session
    }
}

impl RawSession {
    pub async fn post(&self, body: &Value) -> Answer {
        self.raw
            .post(
                Some(&self.token),
                &[
                    ("Mcp-Session-Id", &self.id),
                    ("MCP-Protocol-Version", super::PROTOCOL_VERSION),
                ],
                body,
            )
            .await
    }

    /// `tools/call`: the answer (status and headers kept for the ceiling checks).
    pub async fn call(&self, id: u64, tool: &str, arguments: Value) -> Answer {
        self.post(&call_body(id, tool, arguments)).await
    }

    pub async fn tool_names(&self) -> Vec<String> {
        let answer = self
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
            .await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let message = answer.message();
        message["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools in {message}"))
            .iter()
            .map(|t| t["name"].as_str().expect("a name").to_owned())
            .collect()
    }
}

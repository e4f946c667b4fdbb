//! Benchmark load generator only (see `bench/http`): N concurrent MCP clients over Streamable
//! HTTP, each with its own connection, its own session (protocol 2025-11-25) and its own
//! token, calling one tool in a closed loop for a fixed time. Prints one JSON line: calls,
//! calls per second, p50/p99 latency in µs, and failures (any call whose answer is not an
//! `ok: true` envelope).
//!
//! Usage: `http_load URL TOOL SECONDS TOKEN...` (one client per token; `-` means no token).
// A load generator, not an upstream client: the domain kit's HttpClient rule does not apply.
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

const PROTOCOL: &str = "2025-11-25";

struct Client {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
    session: Option<String>,
}

impl Client {
    async fn post(&self, body: &Value) -> Result<(reqwest::header::HeaderMap, String), String> {
        let mut request = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", PROTOCOL)
            .body(body.to_string());
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let headers = response.headers().clone();
        let text = response.text().await.map_err(|e| e.to_string())?;
        Ok((headers, text))
    }

    async fn open(&mut self) -> Result<(), String> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "http_load", "version": "0"}}});
        let (headers, _) = self.post(&init).await?;
        self.session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(())
    }
}

/// Whether a body (JSON or SSE) carries an `ok: true` envelope.
fn succeeded(body: &str) -> bool {
    body.contains("\"ok\":true")
}

#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, tool, seconds, tokens @ ..] = args.as_slice() else {
        return Err("usage: http_load URL TOOL SECONDS TOKEN...".into());
    };
    let seconds: f64 = seconds.parse().map_err(|_| "SECONDS is a number")?;
    // reqwest has no default TLS provider in this tree; plain HTTP still needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut clients = Vec::new();
    for token in tokens {
        let mut client = Client {
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .map_err(|e| e.to_string())?,
            url: url.clone(),
            token: (token != "-").then(|| token.clone()),
            session: None,
        };
        client.open().await?;
        clients.push(client);
    }
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in clients {
        let tool = tool.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut failures = 0u64;
            let mut id = 1u64;
            while Instant::now() < deadline {
                let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                  "params": {"name": tool, "arguments": {}}});
                id += 1;
                let t = Instant::now();
                match client.post(&body).await {
                    Ok((_, text)) if succeeded(&text) => latencies.push(t.elapsed()),
                    _ => failures += 1,
                }
            }
            (latencies, failures)
        }));
    }
    let mut latencies = Vec::new();
    let mut failures = 0;
    for task in tasks {
        let (l, f) = task.await.map_err(|e| e.to_string())?;
        latencies.extend(l);
        failures += f;
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let pct = |p: f64| -> u128 {
        if latencies.is_empty() {
            return 0;
        }
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies[i.min(latencies.len() - 1)].as_micros()
    };
    println!(
        "{}",
        json!({
            "clients": tokens.len(),
            "calls": latencies.len(),
            "failures": failures,
            "seconds": elapsed,
            "calls_per_second": latencies.len() as f64 / elapsed,
            "p50_us": pct(0.50),
            "p99_us": pct(0.99),
        })
    );
    Ok(())
}

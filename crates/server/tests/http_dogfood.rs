//! Two MCP clients nobody here wrote, on one port at once, with different roles: the official
//! Python SDK's Streamable HTTP client (`tests/clients/http_client.py`, interpreter
//! `CARE_TEST_PYTHON`) and rmcp's own client. Each keeps its session across many calls and
//! sees only its role's toolset; the Python one runs past its ceiling while rmcp's is not
//! limited; the Python one is revoked mid-session and loses access on its next request while
//! rmcp's goes on.
// Test clients, not upstream clients: the domain kit's HttpClient rule does not apply.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};

use care_core::catalog::{Role, tools_of};
use common::http::{HttpServer, add_client, clients};
use common::{Sandbox, TIMEOUT, implemented};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/http_client.py");

/// The Python client's ceiling: it runs into it; rmcp's client has the default (600).
const PY_RATE: u32 = 25;

fn expected_names(role: Role) -> BTreeSet<String> {
    tools_of(role)
        .map(|e| e.name.to_owned())
        .filter(|n| implemented().contains(n))
        .collect()
}

/// The Python client as a child process, one JSON command per line.
struct PyClient {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl PyClient {
    fn start(sandbox: &Sandbox, url: &str, token: &str) -> PyClient {
        let python = std::env::var("CARE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
        let mut cmd = sandbox.command_for(std::path::Path::new(&python));
        cmd.arg(SCRIPT)
            .arg(url)
            .env("CARE_TEST_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn the Python client");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = PyClient {
            child,
            stdin,
            lines,
        };
        let ready = client.read();
        assert_eq!(
            ready["ready"], true,
            "the Python client did not start: {ready}"
        );
        client
    }

    fn read(&mut self) -> Value {
        match self.lines.recv_timeout(TIMEOUT * 2) {
            Ok(line) => serde_json::from_str(&line).expect("a JSON line"),
            Err(_) => {
                let status = self.child.try_wait().ok().flatten();
                assert_ne!(
                    status.and_then(|s| s.code()),
                    Some(3),
                    "the MCP Python SDK is not importable: run scripts/test or set CARE_TEST_PYTHON"
                );
                panic!("the Python client did not answer (exit: {status:?})")
            }
        }
    }

    fn send(&mut self, command: Value) -> Value {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        self.read()
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.send(json!({"op": "call", "tool": tool, "arguments": arguments}))
    }
}

impl Drop for PyClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ok(structured: &Value) -> bool {
    structured["ok"] == true
}

#[test]
fn python_sdk_and_rmcp_clients_share_one_port_with_their_own_roles_ceilings_and_revocation() {
    let sandbox = Sandbox::new();
    let py_token = add_client(&sandbox, "py-reviews", "reviews", Some(PY_RATE));
    let rs_token = add_client(&sandbox, "rmcp-lead", "lead", None);
    let server = HttpServer::start(&sandbox, &["lead", "reviews"], &[]);
    let mut py = PyClient::start(&sandbox, &server.url(), &py_token);

    common::http::install_crypto();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let rs = runtime.block_on(async {
        let config =
            StreamableHttpClientTransportConfig::with_uri(server.url()).auth_header(rs_token);
        let transport = StreamableHttpClientTransport::from_config(config);
        ().serve(transport).await.expect("rmcp client connects")
    });
    let rs_call = |tool: &str| {
        runtime.block_on(rs.call_tool(
            CallToolRequestParams::new(tool.to_owned()).with_arguments(serde_json::Map::new()),
        ))
    };

    // Each sees exactly its role's toolset.
    let py_tools: BTreeSet<String> = py.send(json!({"op": "list"}))["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(py_tools, expected_names(Role::Reviews));
    let rs_tools: BTreeSet<String> = runtime
        .block_on(rs.list_all_tools())
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(rs_tools, expected_names(Role::Lead));
    assert_ne!(py_tools, rs_tools);

    // A tool of the other's role is unknown to each.
    let foreign = py.call("approval_list", json!({}));
    assert!(
        foreign["detail"]
            .as_str()
            .unwrap_or("")
            .contains("Unknown tool"),
        "{foreign}"
    );
    let foreign = rs_call("approval_request").expect_err("not a lead tool");
    assert!(foreign.to_string().contains("Unknown tool"), "{foreign}");

    // Interleaved calls on both sessions; the Python client runs into its ceiling, rmcp's
    // client is never limited.
    let mut py_ok = 0;
    let mut py_limited = None;
    for i in 0..PY_RATE + 5 {
        let answer = py.call("kpi_report", json!({}));
        let structured = &answer["structured"];
        if ok(structured) {
            py_ok += 1;
        } else {
            assert_eq!(structured["error"]["code"], "RATE_LIMITED", "{answer}");
            py_limited.get_or_insert(i);
        }
        let rs_answer = rs_call("kpi_report").unwrap();
        assert!(
            ok(rs_answer.structured_content.as_ref().unwrap()),
            "{rs_answer:?}"
        );
    }
    // Every tools/call counts, the refused unknown one above included.
    assert_eq!(py_ok, PY_RATE - 1, "exactly the ceiling passed");
    assert!(py_limited.is_some());

    // Revoked mid-session: the Python client's next request is refused; rmcp's goes on.
    clients(&sandbox, &["revoke", "py-reviews"]);
    let refused = py.send(json!({"op": "list"}));
    assert!(
        refused.get("tools").is_none(),
        "a revoked client was served: {refused}"
    );
    for _ in 0..3 {
        let rs_answer = rs_call("kpi_report").unwrap();
        assert!(ok(rs_answer.structured_content.as_ref().unwrap()));
    }
    server.wait_for_audit(|a| a["client"] == "py-reviews" && a["error_code"] == "CLIENT_REVOKED");
    server.wait_for_audit(|a| a["client"] == "py-reviews" && a["error_code"] == "RATE_LIMITED");
    server.wait_for_audit(|a| a["client"] == "rmcp-lead" && a["outcome"] == "ok");
    runtime.block_on(async {
        let _ = rs.cancel().await;
    });
}

//! The stdio session over every kind of stdin/stdout a client may hand us: pipes (Python,
//! Rust clients), a Unix socket pair (Node's child processes), a regular file, and stdout
//! sharing its pipe with stderr (`2>&1`). Each answers every request and ends at EOF.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Sandbox;
use serde_json::{Value, json};

const REQUESTS: usize = 40;

/// initialize, initialized, then `REQUESTS` of `method` (no params), one message per line.
fn script_of(method: &str) -> String {
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "stdio-kinds", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for id in 1..=REQUESTS {
        lines.push(json!({"jsonrpc": "2.0", "id": id, "method": method}));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn script() -> String {
    script_of("tools/list")
}

/// The ids answered on `out`, in order; lines that are not JSON-RPC answers (log lines when
/// stderr shares the stream) are skipped.
fn answered_ids(out: &str) -> Vec<u64> {
    out.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v.get("jsonrpc").is_some() && v.get("result").is_some())
        .filter_map(|v| v["id"].as_u64())
        .collect()
}

fn assert_all_answered(out: &str) {
    let ids = answered_ids(out);
    assert_eq!(
        ids,
        (0..=REQUESTS as u64).collect::<Vec<_>>(),
        "answers: {out}"
    );
}

fn command(sandbox: &Sandbox) -> Command {
    sandbox.serve_command("lead")
}

#[test]
fn a_unix_socket_pair_carries_the_session() {
    let sandbox = Sandbox::new();
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let stdin = OwnedFd::from(theirs.try_clone().unwrap());
    let stdout = OwnedFd::from(theirs);
    let mut child = command(&sandbox)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ours.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    // One request at a time: the answer of each comes back before the next goes out.
    let mut lines = BufReader::new(ours.try_clone().unwrap());
    let mut out = String::new();
    for (n, request) in script().lines().enumerate() {
        ours.write_all(format!("{request}\n").as_bytes()).unwrap();
        if n == 1 {
            continue; // the notification has no answer
        }
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        out.push_str(&line);
    }
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(child.wait().unwrap().success());
    assert_all_answered(&out);
}

#[test]
fn a_regular_file_as_stdin_is_read_to_its_end() {
    let sandbox = Sandbox::new();
    let requests = sandbox.path().join("requests.jsonl");
    std::fs::write(&requests, script()).unwrap();
    let output = command(&sandbox)
        .stdin(Stdio::from(std::fs::File::open(&requests).unwrap()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_all_answered(&String::from_utf8(output.stdout).unwrap());
}

#[test]
fn stdout_sharing_its_pipe_with_stderr_loses_nothing() {
    let sandbox = Sandbox::new();
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = command(&sandbox)
        .stdin(Stdio::piped())
        .stdout(Stdio::from(writer.try_clone().unwrap()))
        .stderr(Stdio::from(writer))
        .spawn()
        .unwrap();
    // Every request at once, and nobody reading for a while: the shared pipe fills with
    // answers and audit lines, and neither may be lost for it (a non-blocking stdout would
    // make the log's writes fail with EAGAIN instead of waiting). Small answers only (ping,
    // kpi_report): a pipe keeps only writes up to 4 KiB whole, so a large answer could be cut
    // by a log line whatever the server does.
    let mut stdin = child.stdin.take().unwrap();
    let mut requests = script_of("ping");
    for id in 1..=REQUESTS {
        requests.push_str(&format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": 1000 + id, "method": "tools/call",
                   "params": {"name": "kpi_report", "arguments": {}}})
        ));
    }
    let writer = std::thread::spawn(move || {
        stdin.write_all(requests.as_bytes()).unwrap();
    });
    std::thread::sleep(Duration::from_millis(1500));
    let mut out = String::new();
    BufReader::new(reader).read_to_string(&mut out).unwrap();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    let ids = answered_ids(&out);
    let mut expected: Vec<u64> = (0..=REQUESTS as u64).collect();
    expected.extend((1..=REQUESTS as u64).map(|id| 1000 + id));
    assert_eq!(ids, expected);
    let audited = out
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v["target"] == "care_mcp::audit" && v["fields"]["tool"] == "kpi_report")
        .count();
    assert_eq!(audited, REQUESTS, "one audit line per call: {out}");
}

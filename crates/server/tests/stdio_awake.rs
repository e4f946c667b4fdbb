//! A stdio session keeps its thread awake (polling without blocking) only for a moment after
//! its traffic: the calls of a tight loop are all answered, and once the client goes quiet the
//! process stops spending CPU. A spinner that never went back to sleep would spend a whole
//! core while idle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use common::Sandbox;
use serde_json::{Value, json};

const CALLS: u64 = 300;

/// User plus system CPU time of `pid`, in clock ticks (`/proc/<pid>/stat` fields 14 and 15).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn an_idle_session_stops_spending_cpu_after_a_burst_of_calls() {
    let sandbox = Sandbox::new();
    let mut child = sandbox
        .serve_command("lead")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        stdin.write_all(format!("{message}\n").as_bytes()).unwrap();
    };
    let mut answer = || {
        let mut line = String::new();
        answers.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "stdio-awake", "version": "0"}}}),
    );
    assert_eq!(answer()["id"], 0);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // A tight loop, one call at a time: the case the thread stays awake for.
    for id in 1..=CALLS {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "kpi_report", "arguments": {}}}));
        let got = answer();
        assert_eq!(got["id"], id);
        assert!(got.get("result").is_some(), "{got}");
    }
    // Quiet from here on. Let the audit writer's last batch and the deferred approval
    // channel settle, then watch the process for a while.
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_millis(2000));
    let spent = cpu_ticks(child.id()) - before;
    // A clock tick is 10 ms: a spinning thread would spend about 200 ticks here.
    assert!(
        spent <= 20,
        "an idle session spent {spent} ticks of CPU in 2 s"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

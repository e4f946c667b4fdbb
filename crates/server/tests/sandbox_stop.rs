//! `care-mcp sandbox` left running for an operator's own MCP client stops in order on SIGTERM
//! (a supervisor) and SIGINT (Ctrl-C): exit 0 with its closing line, even when the signal
//! arrives the moment it has announced itself. Without the handler the process would die by the
//! signal (no exit code) and leave no closing line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Sandbox;

/// A stop has nothing in flight to finish: it takes milliseconds.
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// Starts the sandbox in `sandbox`'s directory, reads its announcement up to the relay's
/// address, signals it with `signal` at once, and checks the stop.
fn stops_in_order_on(signal: &str) {
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("world");
    let mut child = sandbox
        .command()
        .args(["sandbox", "--dir", dir.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut announced = String::new();
    let relay = loop {
        let mut line = String::new();
        assert_ne!(
            out.read_line(&mut line).unwrap(),
            0,
            "ended early: {announced}"
        );
        announced.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("approval relay:") {
            break url.split_whitespace().next().unwrap().to_owned();
        }
    };
    let relay_addr = relay
        .trim_start_matches("ws://")
        .trim_end_matches('/')
        .to_owned();
    assert!(
        common::catches_sigterm(child.id()),
        "no handler once announced"
    );
    assert!(
        TcpStream::connect(&relay_addr).is_ok(),
        "relay {relay_addr} not serving"
    );
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    // Bounded: a signal caught but never acted on would otherwise hang the test.
    let deadline = Instant::now() + STOP_WITHIN;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{signal}: still running {STOP_WITHIN:?} after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(0), "{signal}: {status:?}");
    assert!(rest.ends_with("\nsandbox stopped\n"), "{signal}: {rest:?}");
}

#[test]
fn a_running_sandbox_stops_in_order_on_sigterm() {
    stops_in_order_on("TERM");
}

#[test]
fn a_running_sandbox_stops_in_order_on_ctrl_c() {
    stops_in_order_on("INT");
}

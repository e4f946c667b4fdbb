//! Shared helpers of the `care-mcp` integration tests: a sandbox per test (own temp dir and
//! SQLite ledger, every upstream fake, no inherited `CARE_*` / `DATABASE_URL`), the binary as a
//! child process, a line-based JSON-RPC client over its stdio that keeps every stdout line for
//! later checks, and the implemented tools as the binary's registry reports them.
//!
//! Every read has a deadline ([`TIMEOUT`]) so a hung server fails the test instead of CI.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::LazyLock;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub mod http;

use care_fakes::Upstream;
use serde_json::{Map, Value, json};

/// How long any single read (or the exit of the process) may take.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// The protocol version the tests negotiate.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The tools implemented so far (the catalog holds 31, the others come with their domains):
/// the union of what `care-mcp tools --role R` prints for every role, asked once per test
/// binary, so the list is the registry's and never a copy kept here.
pub fn implemented() -> &'static BTreeSet<String> {
    static IMPLEMENTED: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
        let sandbox = Sandbox::new();
        let mut names = BTreeSet::new();
        for role in care_core::catalog::Role::ALL {
            let mut cmd = sandbox.command();
            cmd.args(["tools", "--role", role.as_str()]);
            let finished = run_once(&mut cmd, None);
            assert_eq!(
                finished.code(),
                Some(0),
                "care-mcp tools --role {role}: {}",
                finished.stderr
            );
            let manifest: Value =
                serde_json::from_str(&finished.stdout()).expect("the manifest is JSON");
            assert_eq!(manifest["role"], role.as_str(), "{manifest}");
            let tools = manifest["tools"].as_array().expect("a tools array");
            names.extend(
                tools
                    .iter()
                    .map(|t| t["name"].as_str().expect("a tool name").to_owned()),
            );
        }
        names
    });
    &IMPLEMENTED
}

/// A valid x-only public key (throwaway, no secret known to anyone here).
pub const APPROVER_HEX: &str = "4646ae5047316b4230d0086c8acec687f00b1cd9d1dc634f6cb358ac0a9a8fff";

/// The binary under test, built with this test's features.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_care-mcp"))
}

/// The repository's `wrappers/` directory.
pub fn wrappers_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../wrappers"))
}

/// A minimal PATH for children (the wrappers need `sh`, `dirname`).
pub const CHILD_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// One test's private world: a temp dir used as HOME, holding the SQLite ledger and the
/// fakes' key files, and every upstream fake.
#[derive(Debug)]
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    /// Every upstream fake (`care_fakes::start_demo_upstreams`); commands carry their env.
    pub upstreams: Vec<Box<dyn Upstream>>,
    /// The `CARE_*` variables of all upstreams, pointing at [`Sandbox::upstreams`].
    upstream_env: Vec<(String, String)>,
    /// The server's Nostr secret key (hex), generated for this sandbox.
    pub nostr_secret: String,
}

/// A relay URL nothing answers on (the discard port).
pub const UNREACHABLE_RELAY: &str = "ws://127.0.0.1:9";

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox::with_dir(tempfile::tempdir().expect("temp dir"))
    }

    /// A sandbox inside the cargo target dir (same filesystem as the binary: hard links work).
    pub fn in_target() -> Self {
        Sandbox::with_dir(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir"))
    }

    /// Starts every upstream fake and writes their files (throwaway keys) here.
    fn with_dir(dir: tempfile::TempDir) -> Self {
        let upstreams = care_fakes::start_demo_upstreams().expect("the upstream fakes");
        let upstream_env = upstreams
            .iter()
            .flat_map(|u| u.role_env(dir.path()).expect("the fakes' files"))
            .collect();
        // 32 random bytes are a valid secp256k1 secret but with negligible probability.
        let nostr_secret = hex::encode(rand::random::<[u8; 32]>());
        Sandbox {
            dir,
            upstreams,
            upstream_env,
            nostr_secret,
        }
    }

    /// The running fake of type `T`, e.g. `sandbox.fake::<FakeAsc>()`.
    pub fn fake<T: Upstream>(&self) -> &T {
        care_fakes::upstream::find(&self.upstreams).expect("no fake of that type is running")
    }

    /// The `CARE_*` variables pointing at every upstream fake.
    pub fn upstream_env(&self) -> Vec<(String, String)> {
        self.upstream_env.clone()
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn db_path(&self) -> PathBuf {
        self.path().join("ledger.db")
    }

    pub fn database_url(&self) -> String {
        format!("sqlite://{}", self.db_path().display())
    }

    /// `program` with a clean environment: PATH, HOME=<tmp>, DATABASE_URL=<tmp>/ledger.db, and
    /// the `CARE_*` of every upstream fake.
    pub fn command_for(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", CHILD_PATH)
            .env("HOME", self.path())
            .env("DATABASE_URL", self.database_url())
            .envs(self.upstream_env.iter().map(|(k, v)| (k, v)))
            .envs(self.nostr_env())
            .current_dir(self.path());
        cmd
    }

    /// The Nostr variables roles holding `approval_request` need to start: a server key made
    /// for this sandbox, a relay nobody listens on (cards cannot be shown: UPSTREAM_UNAVAILABLE;
    /// tests that need a relay override `CARE_NOSTR_RELAYS`), and a group id.
    pub fn nostr_env(&self) -> Vec<(String, String)> {
        vec![
            ("CARE_NOSTR_SECRET_KEY".into(), self.nostr_secret.clone()),
            ("CARE_NOSTR_RELAYS".into(), UNREACHABLE_RELAY.into()),
            ("CARE_APPROVAL_CHANNEL".into(), "care-tests".into()),
        ]
    }

    /// The binary under test with a clean environment.
    pub fn command(&self) -> Command {
        self.command_for(&binary())
    }

    /// The binary serving `role` (passed as `--role`).
    pub fn serve_command(&self, role: &str) -> Command {
        let mut cmd = self.command();
        cmd.arg("--role").arg(role);
        cmd
    }
}

/// Spawns `cmd` with piped stdio, retrying briefly on ETXTBSY (a freshly copied executable
/// can be held open for writing by a fork of a parallel test for a moment).
fn spawn_piped(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match cmd.spawn() {
            Ok(child) => return child,
            Err(e) if e.raw_os_error() == Some(26) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("cannot spawn {cmd:?}: {e}"),
        }
    }
}

/// Waits for the child to exit, at most [`TIMEOUT`]; kills it and fails the test otherwise.
fn wait_with_deadline(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("care-mcp did not exit within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn collect_text(stderr: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let mut reader = BufReader::new(stderr);
        let _ = reader.read_to_string(&mut text);
        text
    })
}

/// What a finished process left behind.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    /// Every stdout line, in arrival order (JSON-RPC messages while serving).
    pub stdout_lines: Vec<String>,
    pub stderr: String,
}

impl Finished {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn stdout(&self) -> String {
        self.stdout_lines.iter().map(|l| format!("{l}\n")).collect()
    }

    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// Every stdout line is a JSON-RPC 2.0 message.
    pub fn assert_stdout_is_protocol(&self) {
        for line in &self.stdout_lines {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            assert!(v.is_object(), "stdout line is not a JSON object: {line:?}");
            assert_eq!(
                v["jsonrpc"], "2.0",
                "stdout line is not JSON-RPC 2.0: {line:?}"
            );
        }
    }

    /// Every stderr line is a JSON object.
    pub fn assert_stderr_is_json_lines(&self) {
        for line in self.stderr.lines() {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stderr line is not JSON ({e}): {line:?}"));
            assert!(v.is_object(), "stderr line is not a JSON object: {line:?}");
        }
    }
}

/// Runs `cmd` to completion with stdin closed (or fed `input`), with a deadline.
pub fn run_once(cmd: &mut Command, input: Option<&str>) -> Finished {
    let mut child = spawn_piped(cmd);
    let mut stdin = child.stdin.take().expect("stdin");
    if let Some(text) = input {
        // The process may exit before reading: a broken pipe is not the test's concern.
        let _ = stdin.write_all(text.as_bytes());
    }
    drop(stdin);
    let stdout = collect_text(child.stdout.take().expect("stdout"));
    let stderr = collect_text(child.stderr.take().expect("stderr"));
    let status = wait_with_deadline(&mut child);
    let stdout = stdout.join().expect("stdout reader");
    Finished {
        status,
        stdout_lines: stdout.lines().map(str::to_owned).collect(),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// A live MCP session with one `care-mcp` process.
#[derive(Debug)]
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stdout_reader: Option<JoinHandle<()>>,
    stderr_reader: Option<JoinHandle<String>>,
    /// Every stdout line received so far, in arrival order.
    pub stdout_lines: Vec<String>,
    next_id: u64,
}

impl Session {
    /// Starts the process; no handshake yet.
    pub fn spawn(mut cmd: Command) -> Session {
        let mut child = spawn_piped(&mut cmd);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        let stdout_reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr_reader = collect_text(child.stderr.take().expect("stderr"));
        Session {
            child,
            stdin,
            lines: rx,
            stdout_reader: Some(stdout_reader),
            stderr_reader: Some(stderr_reader),
            stdout_lines: Vec::new(),
            next_id: 1,
        }
    }

    /// Starts the process and performs the `initialize` handshake.
    pub fn start(cmd: Command) -> Session {
        let mut session = Session::spawn(cmd);
        session.initialize();
        session
    }

    /// `initialize` with [`PROTOCOL_VERSION`], then `notifications/initialized`.
    pub fn initialize(&mut self) -> Value {
        let response = self.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": { "name": "care-mcp-tests", "version": "0" }
            }),
        );
        assert!(
            response.get("result").is_some(),
            "initialize failed: {response}"
        );
        self.notify("notifications/initialized", None);
        response
    }

    /// Writes one raw line (a newline is appended).
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin.write_all(line.as_bytes()).expect("write to stdin");
        stdin.write_all(b"\n").expect("write to stdin");
        stdin.flush().expect("flush stdin");
    }

    pub fn notify(&mut self, method: &str, params: Option<Value>) {
        let mut message = json!({ "jsonrpc": "2.0", "method": method });
        if let Some(params) = params {
            message["params"] = params;
        }
        self.send_line(&message.to_string());
    }

    /// Sends a request with a fresh id and returns its full response message.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send_line(&message.to_string());
        self.response(id)
    }

    /// Sends a request without waiting for its answer; returns its id (see [`Session::response`]).
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send_line(&message.to_string());
        id
    }

    /// The server process's id (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM, as Kubernetes does to stop a pod.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Closes stdin (end of input) without waiting for the exit.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Sends a request without params.
    pub fn request_without_params(&mut self, method: &str) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method });
        self.send_line(&message.to_string());
        self.response(id)
    }

    fn find_response(&self, id: u64) -> Option<Value> {
        self.stdout_lines.iter().find_map(|line| {
            let v: Value = serde_json::from_str(line).ok()?;
            let is_response = v.get("result").is_some() || v.get("error").is_some();
            (is_response && v.get("id") == Some(&json!(id))).then_some(v)
        })
    }

    /// Reads stdout lines (keeping all of them) until the response with `id` is among them.
    pub fn response(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(v) = self.find_response(id) {
                return v;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.stdout_lines.push(line),
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no response to request {id} within {TIMEOUT:?}; stdout so far: {:#?}",
                    self.stdout_lines
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "stdout closed before the response to request {id}; stdout: {:#?}",
                    self.stdout_lines
                ),
            }
        }
    }

    /// Reads stdout lines (keeping all of them) until one satisfies `wanted`.
    pub fn wait_for_line(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        let mut seen = 0;
        loop {
            for line in &self.stdout_lines[seen..] {
                if let Ok(v) = serde_json::from_str::<Value>(line)
                    && wanted(&v)
                {
                    return v;
                }
            }
            seen = self.stdout_lines.len();
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.stdout_lines.push(line),
                Err(_) => panic!(
                    "wanted line not seen within {TIMEOUT:?}; stdout: {:#?}",
                    self.stdout_lines
                ),
            }
        }
    }

    /// The `tools/list` result's tools.
    pub fn list_tools(&mut self) -> Vec<Value> {
        let response = self.request("tools/list", json!({}));
        let tools = response["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list answered no tools array: {response}"));
        assert!(
            response["result"]
                .get("nextCursor")
                .is_none_or(Value::is_null),
            "tools/list is paginated: {response}"
        );
        tools.clone()
    }

    /// The names `tools/list` answers.
    pub fn tool_names(&mut self) -> BTreeSet<String> {
        self.list_tools()
            .iter()
            .map(|t| t["name"].as_str().expect("tool name").to_owned())
            .collect()
    }

    /// `tools/call`; returns the whole response message (`result` or `error`).
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
    }

    /// `tools/call` that must answer a tool result; returns its `structuredContent` after
    /// checking the result shape (only protocol keys; the text equals the structured content).
    pub fn call_envelope(&mut self, name: &str, arguments: Value) -> Value {
        let response = self.call(name, arguments);
        let result = response
            .get("result")
            .unwrap_or_else(|| panic!("{name} answered no result: {response}"));
        check_result_shape(result)
    }

    /// A call that must succeed: returns `data`.
    pub fn call_ok(&mut self, name: &str, arguments: Value) -> Value {
        let envelope = self.call_envelope(name, arguments);
        assert_eq!(envelope["ok"], true, "{name} failed: {envelope}");
        envelope["data"].clone()
    }

    /// A call that must fail with a tool error: returns `error`.
    pub fn call_err(&mut self, name: &str, arguments: Value) -> Map<String, Value> {
        let envelope = self.call_envelope(name, arguments);
        assert_eq!(envelope["ok"], false, "{name} did not fail: {envelope}");
        envelope["error"]
            .as_object()
            .unwrap_or_else(|| panic!("{name}: error is not an object: {envelope}"))
            .clone()
    }

    /// Closes stdin, waits for the exit (with a deadline), drains stdout and stderr.
    pub fn finish(mut self) -> Finished {
        drop(self.stdin.take());
        self.exited()
    }

    /// Waits for an exit the process reaches on its own (a signal), stdin still open.
    pub fn exited(mut self) -> Finished {
        let status = wait_with_deadline(&mut self.child);
        if let Some(reader) = self.stdout_reader.take() {
            reader.join().expect("stdout reader");
        }
        while let Ok(line) = self.lines.try_recv() {
            self.stdout_lines.push(line);
        }
        let stderr = self
            .stderr_reader
            .take()
            .map(|h| h.join().expect("stderr reader"))
            .unwrap_or_default();
        Finished {
            status,
            stdout_lines: std::mem::take(&mut self.stdout_lines),
            stderr,
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // A test that failed half-way must not leave a server behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Whether process `pid` has a handler installed for SIGTERM (`SigCgt` in its
/// `/proc/PID/status`): until then a SIGTERM takes the default action, an exit that flushes
/// nothing.
pub fn catches_sigterm(pid: u32) -> bool {
    const SIGTERM_BIT: u64 = 1 << (15 - 1);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & SIGTERM_BIT != 0)
}

/// Checks a `tools/call` result: only `content`, `structuredContent`, `isError`; one text
/// block whose JSON equals `structuredContent`; `isError` agrees with `ok`. Returns the
/// structured content.
pub fn check_result_shape(result: &Value) -> Value {
    let object = result
        .as_object()
        .unwrap_or_else(|| panic!("result is not an object: {result}"));
    for key in object.keys() {
        assert!(
            ["content", "structuredContent", "isError"].contains(&key.as_str()),
            "result carries a non-protocol key {key:?}: {result}"
        );
    }
    let content = object["content"]
        .as_array()
        .unwrap_or_else(|| panic!("content is not an array: {result}"));
    assert_eq!(content.len(), 1, "expected one content block: {result}");
    assert_eq!(content[0]["type"], "text", "{result}");
    let text = content[0]["text"].as_str().expect("text block");
    let parsed: Value = serde_json::from_str(text).expect("content text is JSON");
    let structured = object
        .get("structuredContent")
        .unwrap_or_else(|| panic!("no structuredContent: {result}"))
        .clone();
    assert_eq!(parsed, structured, "text and structuredContent differ");
    let ok = structured["ok"]
        .as_bool()
        .unwrap_or_else(|| panic!("envelope has no boolean ok: {structured}"));
    let is_error = object
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    assert_eq!(is_error, !ok, "isError disagrees with ok: {result}");
    let keys: BTreeSet<&str> = structured
        .as_object()
        .expect("envelope object")
        .keys()
        .map(String::as_str)
        .collect();
    if ok {
        assert_eq!(keys, BTreeSet::from(["ok", "data"]), "{structured}");
        // The declared outputSchema says `data` is an object.
        assert!(
            structured["data"].is_object(),
            "data is not an object: {structured}"
        );
    } else {
        assert_eq!(keys, BTreeSet::from(["ok", "error"]), "{structured}");
        let error = structured["error"].as_object().expect("error object");
        for key in error.keys() {
            assert!(
                ["code", "message", "field"].contains(&key.as_str()),
                "error carries an unexpected key {key:?}: {structured}"
            );
        }
        assert!(
            error["code"].is_string() && error["message"].is_string(),
            "{structured}"
        );
    }
    structured
}

/// The fixed sentence of an error code, as `care_core` defines it.
pub fn fixed_message(code: &str) -> &'static str {
    care_core::error::ErrorCode::ALL
        .into_iter()
        .find(|c| c.as_str() == code)
        .unwrap_or_else(|| panic!("unknown error code {code}"))
        .message()
}

/// Asserts an INVALID_INPUT error naming `field`, with the fixed message.
pub fn assert_invalid(error: &Map<String, Value>, field: &str) {
    assert_eq!(error["code"], "INVALID_INPUT", "{error:?}");
    assert_eq!(error["field"], field, "{error:?}");
    assert_eq!(
        error["message"],
        fixed_message("INVALID_INPUT"),
        "{error:?}"
    );
}

/// Asserts an error of `code` with its fixed message.
pub fn assert_code(error: &Map<String, Value>, code: &str) {
    assert_eq!(error["code"], code, "{error:?}");
    assert_eq!(error["message"], fixed_message(code), "{error:?}");
}

/// Runs a future to completion on a fresh current-thread runtime (for direct ledger access).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(future)
}

/// The sandbox's ledger, opened the way the binary opens it.
pub async fn open_ledger(sandbox: &Sandbox) -> std::sync::Arc<dyn care_core::ledger::Ledger> {
    let url = sandbox.database_url();
    care_ledger::connect(Some(&url), &sandbox.db_path())
        .await
        .expect("open the ledger")
}

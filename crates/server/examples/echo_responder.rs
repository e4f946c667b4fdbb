//! Benchmark baseline only (see `bench/README.md`): the floor a stdio JSON-RPC server cannot
//! beat. Reads one JSON-RPC message per line on stdin and answers each request at once with a
//! fixed minimal valid result: `initialize` gets a minimal initialize result, `tools/list` an
//! empty list, `tools/call` a one-text-block result, anything else `{}`. Notifications (no
//! `id`) get no answer. std only: buffered line reads, one write + flush per response.
//!
//! It does not parse JSON fully: it scans the top-level object for the `id` and `method` keys
//! (string-aware, depth-tracking), which is all a fixed responder needs.

use std::io::{self, BufRead, Write};

/// The raw text of the top-level values of `id` and `method` in one JSON object line.
fn top_level_fields(line: &str) -> (Option<&str>, Option<&str>) {
    let bytes = line.as_bytes();
    let (mut id, mut method) = (None, None);
    let mut depth = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i + 1;
                let end = string_end(bytes, start);
                i = end;
                if depth == 1 {
                    let key = &line[start..end];
                    let mut j = end + 1;
                    while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                        j += 1;
                    }
                    if j < bytes.len() && bytes[j] == b':' && (key == "id" || key == "method") {
                        j += 1;
                        while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                            j += 1;
                        }
                        let vstart = j;
                        let vend = if j < bytes.len() && bytes[j] == b'"' {
                            string_end(bytes, j + 1) + 1
                        } else {
                            let mut k = j;
                            while k < bytes.len() && !matches!(bytes[k], b',' | b'}' | b' ') {
                                k += 1;
                            }
                            k
                        };
                        let value = &line[vstart..vend.min(bytes.len())];
                        if key == "id" {
                            id = Some(value);
                        } else {
                            method = Some(value.trim_matches('"'));
                        }
                        i = vend.saturating_sub(1);
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    (id, method)
}

/// Index of the closing quote of a string whose content starts at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    bytes.len()
}

fn result_for(method: &str) -> &'static str {
    match method {
        "initialize" => {
            r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"echo-responder","version":"0.0.0"}}"#
        }
        "tools/list" => r#"{"tools":[]}"#,
        "tools/call" => {
            r#"{"content":[{"type":"text","text":"{\"ok\":true,\"data\":{}}"}],"isError":false}"#
        }
        _ => "{}",
    }
}

fn main() -> io::Result<()> {
    let stdin = io::stdin();
    let mut input = io::BufReader::new(stdin.lock());
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut line = String::new();
    let mut response = String::with_capacity(512);
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let (id, method) = top_level_fields(line.trim_end());
        let (Some(id), Some(method)) = (id, method) else {
            continue; // a notification, or not a request
        };
        response.clear();
        response.push_str(r#"{"jsonrpc":"2.0","id":"#);
        response.push_str(id);
        response.push_str(r#","result":"#);
        response.push_str(result_for(method));
        response.push_str("}\n");
        out.write_all(response.as_bytes())?;
        out.flush()?;
    }
}

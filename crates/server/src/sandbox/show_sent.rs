//! What the sandbox's App Store Connect fake received: appended to `asc-sent.jsonl` in the
//! sandbox directory while the sandbox runs, listed by `care-mcp sandbox show-sent`.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use care_core::display::escape_line;
use care_fakes::asc::FakeAsc;
use serde_json::{Value, json};

use crate::startup::StartError;

pub const SENT_FILE: &str = "asc-sent.jsonl";

/// Appends replies the fake received to the sent file, every 200 ms, until the task is dropped.
pub async fn record_sent(asc: &FakeAsc, dir: &Path) {
    let path = dir.join(SENT_FILE);
    let mut written = 0;
    loop {
        let sent = asc.sent_replies();
        if sent.len() > written
            && let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
        {
            {
                for reply in &sent[written..] {
                    let line = json!({
                        "review_id": reply.review_id,
                        "response_id": reply.response_id,
                        "body": reply.body,
                        "replaced": reply.replaced,
                    });
                    let _ = writeln!(file, "{line}");
                }
                written = sent.len();
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `care-mcp sandbox show-sent`: one line per reply, agent-written text shown escaped.
pub fn show_sent(dir: &Path) -> Result<String, StartError> {
    let path = dir.join(SENT_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(StartError(format!("cannot read {}: {e}", path.display()))),
    };
    let mut out = String::new();
    let mut count = 0;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        count += 1;
        out.push_str(&format!(
            "{} -> {}{}: {}\n",
            v["review_id"].as_str().unwrap_or("?"),
            v["response_id"].as_str().unwrap_or("?"),
            if v["replaced"].as_bool() == Some(true) {
                " (replaced the earlier response)"
            } else {
                ""
            },
            escape_line(v["body"].as_str().unwrap_or_default()).text,
        ));
    }
    Ok(format!(
        "{count} repl{} received by the App Store Connect fake\n{out}",
        if count == 1 { "y" } else { "ies" }
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lists_what_the_fake_received_with_agent_text_escaped() {
        let dir = tempfile::tempdir().unwrap();
        assert!(show_sent(dir.path()).unwrap().starts_with("0 replies"));
        let lines = [
            json!({"review_id": "rev-en-001", "response_id": "resp-1", "body": "Thanks!", "replaced": false}),
            json!({"review_id": "rev-ko-002", "response_id": "resp-2", "body": "a\u{1b}[2Jb\u{202e}c", "replaced": true}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.path().join(SENT_FILE), text).unwrap();
        let shown = show_sent(dir.path()).unwrap();
        assert!(shown.starts_with("2 replies"));
        assert!(shown.contains("rev-en-001 -> resp-1: Thanks!"));
        assert!(shown.contains(
            "rev-ko-002 -> resp-2 (replaced the earlier response): a\\u{1b}[2Jb\\u{202e}c"
        ));
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{202e}'));
    }
}

//! What the sandbox's upstream fakes received: every write they accepted is appended to
//! `sent.jsonl` in the sandbox directory while the sandbox runs, and listed by
//! `care-mcp sandbox show-sent` (another process, so the file is the hand-over).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use care_core::display::escape_line;
use care_fakes::Upstream;
use serde_json::{Value, json};

use crate::startup::StartError;

pub const SENT_FILE: &str = "sent.jsonl";

/// Appends the writes each fake accepted to the sent file, every 200 ms, until the task is
/// dropped.
pub async fn record_sent(upstreams: &[Box<dyn Upstream>], dir: &Path) {
    let path = dir.join(SENT_FILE);
    let mut written = vec![0; upstreams.len()];
    loop {
        for (upstream, written) in upstreams.iter().zip(written.iter_mut()) {
            let received = upstream.received_writes();
            if received.len() <= *written {
                continue;
            }
            let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
            else {
                continue;
            };
            for write in &received[*written..] {
                let line = json!({
                    "upstream": upstream.name(),
                    "title": upstream.title(),
                    "target": write.target,
                    "text": write.text,
                });
                let _ = writeln!(file, "{line}");
            }
            *written = received.len();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `care-mcp sandbox show-sent`: one line per write, grouped by fake in the order they first
/// wrote. Every field is shown escaped: the text is agent-written, the rest came from a file.
pub fn show_sent(dir: &Path) -> Result<String, StartError> {
    let path = dir.join(SENT_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(StartError(format!("cannot read {}: {e}", path.display()))),
    };
    let field = |v: &Value, key: &str| escape_line(v[key].as_str().unwrap_or("?")).text;
    // (title, lines) per fake, in order of first appearance.
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let title = field(&v, "title");
        let shown = format!("  {}: {}", field(&v, "target"), field(&v, "text"));
        match groups.iter_mut().find(|(t, _)| *t == title) {
            Some((_, lines)) => lines.push(shown),
            None => groups.push((title, vec![shown])),
        }
    }
    let count: usize = groups.iter().map(|(_, lines)| lines.len()).sum();
    let mut out = format!(
        "{count} write{} received by the sandbox's fakes\n",
        if count == 1 { "" } else { "s" }
    );
    for (title, lines) in &groups {
        out.push_str(&format!("{title}:\n"));
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lists_what_the_fakes_received_with_agent_text_escaped() {
        let dir = tempfile::tempdir().unwrap();
        assert!(show_sent(dir.path()).unwrap().starts_with("0 writes"));
        let lines = [
            json!({"upstream": "asc", "title": "App Store Connect", "target": "rev-en-001 -> resp-1", "text": "Thanks!"}),
            json!({"upstream": "other", "title": "Other\u{1b}[2J", "target": "t-1", "text": "hello"}),
            json!({"upstream": "asc", "title": "App Store Connect", "target": "rev-ko-002 -> resp-2 (replaced the earlier response)", "text": "a\u{1b}[2Jb\u{202e}c"}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.path().join(SENT_FILE), text).unwrap();
        let shown = show_sent(dir.path()).unwrap();
        assert!(shown.starts_with("3 writes received"), "{shown}");
        assert!(
            shown.contains(
                "App Store Connect:\n  rev-en-001 -> resp-1: Thanks!\n  \
                 rev-ko-002 -> resp-2 (replaced the earlier response): a\\u{1b}[2Jb\\u{202e}c\n"
            ),
            "{shown}"
        );
        assert!(
            shown.contains("Other\\u{1b}[2J:\n  t-1: hello\n"),
            "{shown}"
        );
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{202e}'));
    }

    /// A fake whose accepted writes the test scripts.
    #[derive(Debug)]
    struct Scripted {
        server: care_fakes::http::FakeServer,
        writes: std::sync::Arc<std::sync::Mutex<Vec<care_fakes::ReceivedWrite>>>,
    }

    impl Upstream for Scripted {
        fn name(&self) -> &'static str {
            "scripted"
        }
        fn title(&self) -> &'static str {
            "Scripted"
        }
        fn server(&self) -> Option<&care_fakes::http::FakeServer> {
            Some(&self.server)
        }
        fn role_env(&self, _dir: &Path) -> std::io::Result<Vec<(String, String)>> {
            Ok(Vec::new())
        }
        fn received_writes(&self) -> Vec<care_fakes::ReceivedWrite> {
            self.writes.lock().unwrap().clone()
        }
    }

    #[tokio::test]
    async fn records_each_write_once_as_it_arrives() {
        let dir = tempfile::tempdir().unwrap();
        let writes = std::sync::Arc::default();
        let write = |target: &str| care_fakes::ReceivedWrite {
            target: target.to_owned(),
            text: "text".to_owned(),
        };
        let scripted = Scripted {
            server: care_fakes::http::FakeServer::start(
                "scripted",
                care_fakes::http::Plain,
                |_| Default::default(),
            )
            .unwrap(),
            writes: std::sync::Arc::clone(&writes),
        };
        writes.lock().unwrap().push(write("first"));
        let upstreams: Vec<Box<dyn Upstream>> = vec![Box::new(scripted)];
        let recording = tokio::time::timeout(
            Duration::from_millis(900),
            record_sent(&upstreams, dir.path()),
        );
        let later = async {
            tokio::time::sleep(Duration::from_millis(450)).await;
            writes.lock().unwrap().push(write("second"));
        };
        let (recorded, ()) = tokio::join!(recording, later);
        assert!(recorded.is_err(), "it records until dropped");
        let shown = show_sent(dir.path()).unwrap();
        assert_eq!(
            shown,
            "2 writes received by the sandbox's fakes\nScripted:\n  first: text\n  second: text\n"
        );
    }
}

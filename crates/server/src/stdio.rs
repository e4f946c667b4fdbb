//! The stdio transport in front of rmcp: every stdin line that is not JSON gets the JSON-RPC
//! parse error (-32700, id null) instead of silence, so a client never waits forever on a
//! line rmcp would drop. Valid lines pass through untouched; stdout keeps one writer.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What rmcp reads and writes instead of the real stdin/stdout.
pub struct Pipes {
    pub to_rmcp: DuplexStream,
    pub from_rmcp: DuplexStream,
    /// Finishes once stdout has everything rmcp and the filter wrote.
    pub writer: JoinHandle<()>,
}

const PARSE_ERROR: &str =
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#;

/// Wires `input`/`output` (the process's stdin/stdout) to a pair of in-memory pipes for rmcp.
pub fn filtered<R, W>(input: R, output: W) -> Pipes
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_in, mut feed) = tokio::io::duplex(1 << 16);
    let (rmcp_out, drain) = tokio::io::duplex(1 << 16);
    let (errors_tx, mut errors_rx) = mpsc::unbounded_channel::<&'static str>();

    tokio::spawn(async move {
        let mut lines = BufReader::new(input).lines();
        loop {
            let line = match lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(err) => {
                    // Not UTF-8, or a read error: answer once and keep reading.
                    tracing::warn!(error = %err, "unreadable stdin line");
                    if err.kind() == std::io::ErrorKind::InvalidData {
                        let _ = errors_tx.send(PARSE_ERROR);
                        continue;
                    }
                    break;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            if serde_json::from_str::<serde::de::IgnoredAny>(&line).is_err() {
                tracing::warn!("stdin line is not JSON; answered with a parse error");
                let _ = errors_tx.send(PARSE_ERROR);
                continue;
            }
            let mut framed = line.into_bytes();
            framed.push(b'\n');
            if feed.write_all(&framed).await.is_err() {
                break;
            }
        }
        // EOF on stdin: rmcp sees EOF and ends the session.
        drop(feed);
    });

    let writer = tokio::spawn(async move {
        let mut output = output;
        let mut replies = BufReader::new(drain).lines();
        let mut errors_open = true;
        loop {
            let line = tokio::select! {
                reply = replies.next_line() => match reply {
                    Ok(Some(line)) => line,
                    _ => break,
                },
                error = errors_rx.recv(), if errors_open => match error {
                    Some(line) => line.to_owned(),
                    None => { errors_open = false; continue; }
                },
            };
            let mut framed = line.into_bytes();
            framed.push(b'\n');
            if output.write_all(&framed).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });

    Pipes {
        to_rmcp: rmcp_in,
        from_rmcp: rmcp_out,
        writer,
    }
}

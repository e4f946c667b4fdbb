//! The byte stream under an IMAP session: plain TCP (loopback only) or TLS over TCP, with the
//! platform's trust roots and the ring provider the HTTP client uses. One type, so a session
//! does not care how it was protected. Writes are held until a flush and the socket sends
//! without Nagle's delay: async-imap writes each command in four pieces (tag, space, command,
//! CRLF) and flushes after it, and a piece sent alone waited for the server's delayed ACK,
//! about 40 ms per command (a `mail_read` took 0.26-0.44 s against the sandbox's fake).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, BufWriter, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;

/// A connection to a mail server: what a session reads and writes, buffered until a flush.
#[derive(Debug)]
pub struct MailStream {
    io: BufWriter<Transport>,
    closed_by_peer: bool,
}

/// Plain TCP on the left, TLS on the right.
type Transport = Either<TcpStream, Box<TlsStream<TcpStream>>>;

/// A TCP connection to `host:port` for a mail protocol: every message waits for an answer,
/// so nothing is gained by holding small segments back (TCP_NODELAY).
pub async fn connect(host: &str, port: u16) -> io::Result<TcpStream> {
    let tcp = TcpStream::connect((host, port)).await?;
    tcp.set_nodelay(true)?;
    Ok(tcp)
}

impl MailStream {
    /// Plain TCP (the caller allows it to loopback hosts only).
    pub fn plain(tcp: TcpStream) -> Self {
        Self::over(Either::Left(tcp))
    }

    fn over(transport: Transport) -> Self {
        Self {
            io: BufWriter::new(transport),
            closed_by_peer: false,
        }
    }

    /// Whether a read met the end of the stream: the server closed the connection.
    pub fn closed_by_peer(&self) -> bool {
        self.closed_by_peer
    }

    /// The plain TCP connection back, for STARTTLS; `None` over TLS or with bytes not yet
    /// flushed (which would be lost).
    pub fn into_plain(self) -> Option<TcpStream> {
        if !self.io.buffer().is_empty() {
            return None;
        }
        match self.io.into_inner() {
            Either::Left(tcp) => Some(tcp),
            Either::Right(_) => None,
        }
    }
}

/// A TLS connector with the platform's roots (built once per client).
pub fn connector() -> io::Result<TlsConnector> {
    // reqwest and lettre are built without a default provider: use ring, unless the process
    // already chose one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    use rustls_platform_verifier::ConfigVerifierExt;
    let config = rustls::ClientConfig::with_platform_verifier().map_err(io::Error::other)?;
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Wraps `tcp` in TLS for `host` (certificate checked against the host name).
pub async fn upgrade(
    connector: &TlsConnector,
    host: &str,
    tcp: TcpStream,
) -> io::Result<MailStream> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "not a server name"))?;
    let tls = connector.connect(name, tcp).await?;
    Ok(MailStream::over(Either::Right(Box::new(tls))))
}

impl AsyncRead for MailStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let (room, filled) = (buf.remaining(), buf.filled().len());
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && room > 0 && buf.filled().len() == filled {
            this.closed_by_peer = true;
        }
        polled
    }
}

impl AsyncWrite for MailStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    async fn pair() -> (MailStream, TcpStream) {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (client, accepted) = tokio::join!(connect("127.0.0.1", port), listener.accept());
        let client = client.unwrap();
        assert!(
            client.nodelay().unwrap(),
            "mail connections send without Nagle's delay"
        );
        (MailStream::plain(client), accepted.unwrap().0)
    }

    #[tokio::test]
    async fn a_command_written_in_pieces_leaves_at_its_flush_in_one_piece() {
        let (mut client, mut server) = pair().await;
        // As async-imap encodes a command: tag, space, command, CRLF, then a flush.
        for piece in [&b"A1"[..], b" ", b"EXAMINE INBOX", b"\r\n"] {
            client.write_all(piece).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut buf = [0u8; 64];
        assert!(
            matches!(server.try_read(&mut buf), Err(e) if e.kind() == io::ErrorKind::WouldBlock),
            "nothing is sent before the flush"
        );
        client.flush().await.unwrap();
        let mut line = Vec::new();
        while !line.ends_with(b"\r\n") {
            let n = server.read(&mut buf).await.unwrap();
            assert!(n > 0, "the connection closed early");
            line.extend_from_slice(&buf[..n]);
        }
        assert_eq!(line, b"A1 EXAMINE INBOX\r\n");
    }

    #[tokio::test]
    async fn a_server_that_closes_is_seen_closed() {
        let (mut client, server) = pair().await;
        let mut buf = [0u8; 16];
        drop(server);
        assert_eq!(client.read(&mut buf).await.unwrap(), 0);
        assert!(client.closed_by_peer());
        let (mut client, mut server) = pair().await;
        server.write_all(b"* OK hi\r\n").await.unwrap();
        assert!(client.read(&mut buf).await.unwrap() > 0);
        assert!(!client.closed_by_peer());
    }

    #[tokio::test]
    async fn starttls_gets_the_plain_connection_back_only_with_nothing_pending() {
        let (mut client, _server) = pair().await;
        client.write_all(b"A2 NOOP").await.unwrap();
        assert!(
            client.into_plain().is_none(),
            "unsent bytes are never dropped"
        );
        let (mut client, _server) = pair().await;
        client.write_all(b"A3 STARTTLS\r\n").await.unwrap();
        client.flush().await.unwrap();
        assert!(client.into_plain().is_some());
    }
}

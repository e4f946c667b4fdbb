//! A TCP forwarder between the server and the relay that a test can cut and restore: a
//! reliable relay outage (connections closed, new ones refused) while the relay itself, and
//! the approvers' path to it, stay up. It can also stall: connections stay open but nothing
//! gets through in either direction (a relay that stopped answering).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Debug, Clone)]
pub struct Proxy {
    pub port: u16,
    target_port: u16,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    stalled: Arc<AtomicBool>,
}

/// Copies `from` to `to` until either closes; while `stalled`, reads and drops.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    stalled: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if stalled.load(Ordering::SeqCst) {
            continue;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Proxy {
    pub async fn start(target_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Proxy {
            port: listener.local_addr().unwrap().port(),
            target_port,
            tasks: Arc::default(),
            stalled: Arc::default(),
        };
        proxy.serve(listener);
        proxy
    }

    pub fn url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    fn serve(&self, listener: TcpListener) {
        let tasks = Arc::clone(&self.tasks);
        let target = self.target_port;
        let stalled = Arc::clone(&self.stalled);
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let stalled = Arc::clone(&stalled);
                let pipe = tokio::spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)).await {
                        let (in_read, in_write) = inbound.into_split();
                        let (out_read, out_write) = outbound.into_split();
                        tokio::select! {
                            () = pump(in_read, out_write, Arc::clone(&stalled)) => {}
                            () = pump(out_read, in_write, stalled) => {}
                        }
                    }
                });
                tasks.lock().unwrap().push(pipe);
            }
        });
        self.tasks.lock().unwrap().push(accept);
    }

    /// Closes every connection and stops accepting new ones.
    pub fn cut(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    /// Keeps connections open but lets nothing through, either way, until [`Proxy::resume`].
    pub fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }

    pub fn resume(&self) {
        self.stalled.store(false, Ordering::SeqCst);
    }

    /// Accepts connections again, on the same port.
    pub async fn restore(&self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.serve(listener);
    }
}

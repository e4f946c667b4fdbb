//! A TCP forwarder between the server and the relay that a test can cut and restore: a
//! reliable relay outage (connections closed, new ones refused) while the relay itself, and
//! the approvers' path to it, stay up.

use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Debug, Clone)]
pub struct Proxy {
    pub port: u16,
    target_port: u16,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    pub async fn start(target_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Proxy {
            port: listener.local_addr().unwrap().port(),
            target_port,
            tasks: Arc::default(),
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
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let pipe = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", target)).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
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

    /// Accepts connections again, on the same port.
    pub async fn restore(&self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.serve(listener);
    }
}

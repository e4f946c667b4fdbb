//! A running HTTP fake: an axum router behind the shared front, served on a loopback port by
//! its own thread and runtime (so it outlives any test's runtime and serves sync tests alike),
//! stopped gracefully when the handle is dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use super::Dialect;
use super::control::{Control, Failure, RecordedRequest};
use super::front::{Front, front};

/// How long a stopping fake lets answers in flight finish (a held-back answer included)
/// before it drops them.
const GRACE: Duration = Duration::from_secs(2);

/// Why a fake could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on loopback: {0}")]
    Listen(std::io::Error),
    #[error("cannot start the fake's runtime: {0}")]
    Runtime(std::io::Error),
}

/// A fake upstream served over HTTP on `127.0.0.1`; stops when dropped.
#[derive(Debug)]
pub struct FakeServer {
    base_url: String,
    control: Arc<Control>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// Serves `routes(base_url)` behind the front (credentials by `dialect`, recording,
    /// injected failures, delays) on a fresh loopback port. `name` labels the thread and logs.
    pub fn start(
        name: &str,
        dialect: impl Dialect,
        routes: impl FnOnce(&str) -> Router,
    ) -> Result<FakeServer, ServeError> {
        let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .map_err(ServeError::Listen)?;
        listener.set_nonblocking(true).map_err(ServeError::Listen)?;
        let addr = listener.local_addr().map_err(ServeError::Listen)?;
        let base_url = format!("http://{addr}");
        let control = Arc::new(Control::default());
        let front_state = Arc::new(Front {
            control: Arc::clone(&control),
            dialect: Box::new(dialect),
        });
        // The fake's router is the fallback of an outer one, so every request (its 404s too)
        // passes the front.
        let router = Router::new()
            .fallback_service(routes(&base_url))
            .layer(axum::middleware::from_fn_with_state(front_state, front));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ServeError::Runtime)?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let label = name.to_owned();
        let thread = std::thread::Builder::new()
            .name(format!("fake-{name}"))
            .spawn(move || runtime.block_on(serve(label, listener, router, stopped)))
            .map_err(ServeError::Runtime)?;
        Ok(FakeServer {
            base_url,
            control,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.control.requests()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.control.clear_requests();
    }

    /// Answers matching requests with `failure` instead of the fake's routes (and before its
    /// credential check), in injection order.
    pub fn inject(&self, failure: Failure) {
        self.control.inject(failure);
    }

    pub fn clear_failures(&self) {
        self.control.clear_failures();
    }

    /// Answers `method` requests under `path_prefix` `by` later than it would (the request is
    /// processed at once; only the answer waits).
    pub fn delay(&self, method: &str, path_prefix: &str, by: Duration) {
        self.control.delay(method, path_prefix, by);
    }

    pub fn clear_delays(&self) {
        self.control.clear_delays();
    }

    /// Forgets requests, failures and delays: the fake answers as it did at start (its own
    /// data, such as accepted writes, stays).
    pub fn reset(&self) {
        self.control.clear_requests();
        self.control.clear_failures();
        self.control.clear_delays();
    }
}

async fn serve(
    name: String,
    listener: std::net::TcpListener,
    router: Router,
    stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        tracing::error!(fake = %name, "the fake cannot adopt its listener");
        return;
    };
    let (stopping, grace_started) = tokio::sync::oneshot::channel::<()>();
    let served = axum::serve(listener, router).with_graceful_shutdown(async move {
        // A dropped handle stops the fake as surely as an explicit stop.
        let _ = stopped.await;
        let _ = stopping.send(());
    });
    tokio::select! {
        served = served => {
            if let Err(err) = served {
                tracing::error!(fake = %name, error = %err, "the fake stopped");
            }
        }
        () = async {
            if grace_started.await.is_ok() {
                tokio::time::sleep(GRACE).await;
            } else {
                std::future::pending::<()>().await;
            }
        } => {
            tracing::debug!(fake = %name, "answers still in flight were dropped at stop");
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

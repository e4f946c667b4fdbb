//! A verifying App Store Connect fake over real HTTP on `127.0.0.1`.
//!
//! Every request must carry an ES256 bearer token that verifies with the public half of the
//! fake's key (`kid`, `iss`, `aud=appstoreconnect-v1`, `exp` at most 20 minutes ahead, raw
//! `r||s` signature); otherwise it answers 401 like Apple. It serves the JSON:API shapes of
//! `GET /v1/apps`, `GET /v1/apps/{id}`, `GET /v1/apps/{id}/customerReviews` (`filter[territory]`,
//! `filter[rating]`, `exists[publishedResponse]`, `sort`, `limit` ≤ 200, `include=response`,
//! paging through `links.next` with an opaque `cursor`), `GET /v1/customerReviews/{id}`,
//! `GET /v1/customerReviews/{id}/response` (404 when there is none),
//! `POST /v1/customerReviewResponses` (create or replace) and
//! `DELETE /v1/customerReviewResponses/{id}`. It records every request and every accepted
//! reply, and answers injected failures ([`Failure`]) before anything else.
//!
//! The server runs on its own thread with its own runtime, so sync tests, async tests and the
//! sandbox use it alike; dropping the handle stops it.

mod jwt;
mod key;
mod routes;
mod seed;
mod state;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

pub use jwt::{AUDIENCE, Claims, JwtError, MAX_LIFETIME_SECS, TokenVerifier};
pub use key::{KeyError, TestKey};
pub use seed::{
    DEMO_APP_ID, DEMO_PRO_APP_ID, HOSTILE_BODY, OTHER_APP_ID, Seed, SeedApp, SeedResponse,
    SeedReview, demo_seed,
};
pub use state::{Failure, RecordedRequest, SentReply};

use state::Shared;

/// Why the fake could not start.
#[derive(Debug, thiserror::Error)]
pub enum FakeError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("the public key is unusable")]
    PublicKey,
    #[error("cannot listen on loopback: {0}")]
    Listen(std::io::Error),
    #[error("cannot start the fake's runtime: {0}")]
    Runtime(std::io::Error),
}

/// A running fake; stops when dropped.
#[derive(Debug)]
pub struct FakeAsc {
    base_url: String,
    key: TestKey,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeAsc {
    /// Starts a fake with `seed` and a freshly generated key.
    pub fn start(seed: Seed) -> Result<FakeAsc, FakeError> {
        FakeAsc::start_with_key(seed, TestKey::generate()?)
    }

    /// Starts a fake that accepts tokens signed with `key` (e.g. a `.p8` the sandbox wrote).
    pub fn start_with_key(seed: Seed, key: TestKey) -> Result<FakeAsc, FakeError> {
        let verifier = TokenVerifier::new(&key.public_key_pem, &key.key_id, &key.issuer_id)
            .map_err(|_| FakeError::PublicKey)?;
        let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .map_err(FakeError::Listen)?;
        listener.set_nonblocking(true).map_err(FakeError::Listen)?;
        let addr = listener.local_addr().map_err(FakeError::Listen)?;
        let base_url = format!("http://{addr}");
        let shared = Arc::new(Shared::new(seed));
        let app = Arc::new(routes::App {
            shared: Arc::clone(&shared),
            verifier,
            base_url: base_url.clone(),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(FakeError::Runtime)?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("fake-asc".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        tracing::error!("fake App Store Connect cannot adopt its listener");
                        return;
                    };
                    let router = axum::Router::new().fallback(routes::handle).with_state(app);
                    let served = axum::serve(listener, router)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                    if let Err(err) = served {
                        tracing::error!(error = %err, "fake App Store Connect stopped");
                    }
                });
            })
            .map_err(FakeError::Runtime)?;
        Ok(FakeAsc {
            base_url,
            key,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The key the fake accepts tokens of (private half included, for the client under test).
    pub fn key(&self) -> &TestKey {
        &self.key
    }

    /// The environment a care-mcp role needs to use this fake: `CARE_ASC_ISSUER_ID`,
    /// `CARE_ASC_KEY_ID`, `CARE_ASC_PRIVATE_KEY_FILE` (= `key_file`, see
    /// [`TestKey::write_p8`]), `CARE_ASC_APP_IDS` (= `app_ids`) and `CARE_ASC_BASE_URL`.
    pub fn env(&self, key_file: &Path, app_ids: &[&str]) -> Vec<(String, String)> {
        vec![
            ("CARE_ASC_ISSUER_ID".into(), self.key.issuer_id.clone()),
            ("CARE_ASC_KEY_ID".into(), self.key.key_id.clone()),
            (
                "CARE_ASC_PRIVATE_KEY_FILE".into(),
                key_file.display().to_string(),
            ),
            ("CARE_ASC_APP_IDS".into(), app_ids.join(",")),
            ("CARE_ASC_BASE_URL".into(), self.base_url.clone()),
        ]
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Every reply accepted so far, in order.
    pub fn sent_replies(&self) -> Vec<SentReply> {
        self.shared.lock().sent.clone()
    }

    /// The current response of a review, if it has one.
    pub fn response_of(&self, review_id: &str) -> Option<SeedResponse> {
        self.shared.lock().review(review_id)?.response.clone()
    }

    /// Answers matching requests with `failure` (before token checks), in injection order.
    pub fn inject(&self, failure: Failure) {
        self.shared.lock().failures.push(failure);
    }

    pub fn clear_failures(&self) {
        self.shared.lock().failures.clear();
    }

    /// Forgets the recorded requests (not the replies).
    pub fn clear_requests(&self) {
        self.shared.lock().requests.clear();
    }

    /// Answers matching requests `by` later than it would (the request is processed at once).
    pub fn delay(&self, method: &str, path_prefix: &str, by: std::time::Duration) {
        self.shared
            .lock()
            .delays
            .push((method.to_owned(), path_prefix.to_owned(), by));
    }

    /// Someone answers a review outside care-mcp (in App Store Connect itself): the review
    /// gets a response that no care-mcp write sent.
    pub fn answer_elsewhere(&self, review_id: &str, body: &str) -> bool {
        let mut data = self.shared.lock();
        let sent_before = data.sent.len();
        let answered = data.respond(review_id, body, chrono::Utc::now()).is_some();
        data.sent.truncate(sent_before);
        answered
    }

    /// Adds a review after start (e.g. one that arrives during a demo).
    pub fn add_review(&self, review: SeedReview) {
        self.shared.lock().seed.reviews.push(review);
    }
}

impl Drop for FakeAsc {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

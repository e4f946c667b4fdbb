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
//! `DELETE /v1/customerReviewResponses/{id}`. It keeps every accepted reply; recording,
//! injected failures ([`Failure`]) and delays are the shared scaffold's ([`crate::http`]), which
//! also runs it on its own thread and runtime and stops it when the handle is dropped.

mod dialect;
mod documents;
mod jwt;
mod key;
mod routes;
mod seed;
mod state;
mod upstream;

use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

pub use jwt::{AUDIENCE, Claims, JwtError, MAX_LIFETIME_SECS, TokenVerifier};
pub use key::{KeyError, TestKey};
pub use seed::{
    DEMO_APP_ID, DEMO_PRO_APP_ID, DEMO_SCOPE, HOSTILE_BODY, OTHER_APP_ID, Seed, SeedApp,
    SeedResponse, SeedReview, demo_seed,
};
pub use state::SentReply;

pub use crate::http::{Failure, RecordedRequest};
use crate::http::{FakeServer, ServeError};
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

impl From<ServeError> for FakeError {
    fn from(err: ServeError) -> FakeError {
        match err {
            ServeError::Listen(e) => FakeError::Listen(e),
            ServeError::Runtime(e) => FakeError::Runtime(e),
        }
    }
}

fn verifier_of(key: &TestKey) -> Result<TokenVerifier, FakeError> {
    TokenVerifier::new(&key.public_key_pem, &key.key_id, &key.issuer_id)
        .map_err(|_| FakeError::PublicKey)
}

/// A running fake; stops when dropped.
#[derive(Debug)]
pub struct FakeAsc {
    server: FakeServer,
    key: TestKey,
    verifier: Arc<RwLock<TokenVerifier>>,
    shared: Arc<Shared>,
    /// The apps a role is given (`CARE_ASC_APP_IDS`) through [`crate::Upstream::role_env`].
    scope: Vec<String>,
}

impl FakeAsc {
    /// Starts a fake with `seed` and a freshly generated key.
    pub fn start(seed: Seed) -> Result<FakeAsc, FakeError> {
        FakeAsc::start_with_key(seed, TestKey::generate()?)
    }

    /// Starts a fake that accepts tokens signed with `key` (e.g. a `.p8` the sandbox wrote).
    pub fn start_with_key(seed: Seed, key: TestKey) -> Result<FakeAsc, FakeError> {
        let verifier = Arc::new(RwLock::new(verifier_of(&key)?));
        let dialect_verifier = Arc::clone(&verifier);
        let scope = seed.apps.iter().map(|a| a.id.clone()).collect();
        let shared = Arc::new(Shared::new(seed));
        let app_state = Arc::clone(&shared);
        let server = FakeServer::start(
            "asc",
            dialect::AscDialect {
                verifier: dialect_verifier,
            },
            |base_url| {
                let app = Arc::new(routes::App {
                    shared: app_state,
                    base_url: base_url.to_owned(),
                });
                axum::Router::new().fallback(routes::handle).with_state(app)
            },
        )?;
        Ok(FakeAsc {
            server,
            key,
            verifier,
            shared,
            scope,
        })
    }

    /// Gives roles only these apps through [`crate::Upstream::role_env`] (every app of the seed
    /// otherwise), so an app of the team can stay out of scope.
    pub fn in_scope(mut self, app_ids: &[&str]) -> FakeAsc {
        self.scope = app_ids.iter().map(|id| (*id).to_owned()).collect();
        self
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.server.base_url()
    }

    /// The key the fake was started with (private half included, for the client under test).
    pub fn key(&self) -> &TestKey {
        &self.key
    }

    /// The team rotates its API key: from now on only tokens of `next` (its key id and public
    /// key) are accepted, and tokens of the previous key get 401.
    pub fn rotate_key(&self, next: &TestKey) -> Result<(), FakeError> {
        *self
            .verifier
            .write()
            .unwrap_or_else(PoisonError::into_inner) = verifier_of(next)?;
        Ok(())
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
            ("CARE_ASC_BASE_URL".into(), self.base_url().to_owned()),
        ]
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
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
        self.server.inject(failure);
    }

    pub fn clear_failures(&self) {
        self.server.clear_failures();
    }

    /// Forgets the recorded requests (not the replies).
    pub fn clear_requests(&self) {
        self.server.clear_requests();
    }

    /// Answers matching requests `by` later than it would (the request is processed at once).
    pub fn delay(&self, method: &str, path_prefix: &str, by: Duration) {
        self.server.delay(method, path_prefix, by);
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

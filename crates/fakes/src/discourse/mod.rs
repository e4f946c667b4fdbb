//! A verifying Discourse fake over real HTTP on `127.0.0.1`, shaped after Discourse's public
//! OpenAPI description.
//!
//! Every request must carry the fake's `Api-Key` and its user's `Api-Username`; otherwise it
//! answers 403 `invalid_access`, as Discourse does. It serves `GET /latest.json` (`page`,
//! `per_page`, `more_topics_url`), `GET /c/{slug path}/{id}.json` (a wrong slug path is
//! redirected to the canonical one), `GET /t/{id}.json` (the first 20 posts and the whole post
//! stream), `GET /t/{id}/posts.json?post_ids[]=…`, `GET /posts/{id}.json`, `GET /search.json`
//! (50 posts a page, private messages included: the client must drop them),
//! `GET /categories.json` (`include_subcategories`) and `POST /posts.json`, which refuses
//! with 422 a post too short, a duplicate, or one in a closed or archived topic, and records
//! every reply it accepts. Recording, injected failures and delays are the shared scaffold's
//! ([`crate::http`]); rate limits answered with `extras.wait_seconds` are the fake's own.

mod dialect;
mod documents;
mod routes;
mod seed;
mod state;
mod upstream;

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use chrono::Utc;

pub use routes::{MIN_POST_LENGTH, POSTS_PER_CHUNK, SEARCH_PER_PAGE, TOPICS_PER_PAGE};
pub use seed::{
    ANNOUNCEMENTS_CATEGORY, DEMO_API_USERNAME, DEMO_CATEGORY_SCOPE, FEATURES_CATEGORY,
    HOSTILE_COOKED, HOSTILE_TITLE, IOS_CATEGORY, LONG_TOPIC_POSTS, STAFF_CATEGORY,
    SUPPORT_CATEGORY, Seed, SeedCategory, SeedPost, SeedTopic, SeedUser, TOPIC_ANNOUNCEMENT,
    TOPIC_ANSWERED, TOPIC_ARCHIVED, TOPIC_CLOSED, TOPIC_FEATURE, TOPIC_HOSTILE, TOPIC_IOS,
    TOPIC_LONG, TOPIC_PRIVATE, TOPIC_STAFF, TOPIC_UNANSWERED, cook, demo_seed,
};
pub use state::SentPost;

use crate::http::FakeServer;
pub use crate::http::{Failure, RecordedRequest, ServeError};
use state::{RateLimit, Shared};

fn new_api_key() -> String {
    format!("sk-demo-discourse-{}", uuid::Uuid::new_v4().simple())
}

/// A running fake; stops when dropped.
#[derive(Debug)]
pub struct FakeDiscourse {
    server: FakeServer,
    shared: Arc<Shared>,
    /// Shared with the dialect, so [`FakeDiscourse::rotate_api_key`] takes effect at once.
    api_key: Arc<RwLock<String>>,
    api_username: String,
    /// The categories a role is given (`CARE_DISCOURSE_CATEGORY_IDS`) through
    /// [`crate::Upstream::role_env`]; every category when `None`.
    scope: Option<Vec<u64>>,
}

impl FakeDiscourse {
    /// Starts a fake with `seed` and a freshly generated API key for `seed.api_username`.
    pub fn start(seed: Seed) -> Result<FakeDiscourse, ServeError> {
        let api_key = Arc::new(RwLock::new(new_api_key()));
        let api_username = seed.api_username.clone();
        let shared = Arc::new(Shared::new(seed));
        let app_state = Arc::clone(&shared);
        let dialect = dialect::DiscourseDialect {
            api_key: Arc::clone(&api_key),
            api_username: api_username.clone(),
        };
        let server = FakeServer::start("discourse", dialect, |_base_url| {
            let app = Arc::new(routes::App { shared: app_state });
            axum::Router::new().fallback(routes::handle).with_state(app)
        })?;
        Ok(FakeDiscourse {
            server,
            shared,
            api_key,
            api_username,
            scope: None,
        })
    }

    /// Gives roles only these categories through [`crate::Upstream::role_env`].
    pub fn in_scope(mut self, category_ids: &[u64]) -> FakeDiscourse {
        self.scope = Some(category_ids.to_vec());
        self
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.server.base_url()
    }

    /// The API key the fake accepts now (throwaway, `sk-demo-…`).
    pub fn api_key(&self) -> String {
        self.api_key
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// An admin rotates the key: a new one is accepted from now on, the old one is refused
    /// (403 `invalid_access`). Returns the new key.
    pub fn rotate_api_key(&self) -> String {
        let fresh = new_api_key();
        *self.api_key.write().unwrap_or_else(PoisonError::into_inner) = fresh.clone();
        fresh
    }

    pub fn api_username(&self) -> &str {
        &self.api_username
    }

    /// Writes the API key to `dir/discourse-api-key` (mode 0600) and returns its path.
    pub fn write_key_file(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join("discourse-api-key");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        writeln!(file, "{}", self.api_key())?;
        Ok(path)
    }

    /// The environment a care-mcp role needs to use this fake: `CARE_DISCOURSE_URL`,
    /// `CARE_DISCOURSE_API_KEY_FILE` (= `key_file`), `CARE_DISCOURSE_API_USERNAME` and, when
    /// `category_ids` is given, `CARE_DISCOURSE_CATEGORY_IDS`.
    pub fn env(&self, key_file: &Path, category_ids: Option<&[u64]>) -> Vec<(String, String)> {
        let mut env = vec![
            ("CARE_DISCOURSE_URL".into(), self.base_url().to_owned()),
            (
                "CARE_DISCOURSE_API_KEY_FILE".into(),
                key_file.display().to_string(),
            ),
            (
                "CARE_DISCOURSE_API_USERNAME".into(),
                self.api_username.clone(),
            ),
        ];
        if let Some(ids) = category_ids {
            let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
            env.push(("CARE_DISCOURSE_CATEGORY_IDS".into(), ids.join(",")));
        }
        env
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// Forgets the recorded requests (not the posts).
    pub fn clear_requests(&self) {
        self.server.clear_requests();
    }

    /// Answers matching requests with `failure` (before the key check), in injection order.
    pub fn inject(&self, failure: Failure) {
        self.server.inject(failure);
    }

    pub fn clear_failures(&self) {
        self.server.clear_failures();
    }

    /// Answers matching requests `by` later than it would (the request is processed at once).
    pub fn delay(&self, method: &str, path_prefix: &str, by: Duration) {
        self.server.delay(method, path_prefix, by);
    }

    /// The next `times` requests under `path_prefix` get 429 with `extras.wait_seconds` in the
    /// body and no `Retry-After` header, as Discourse's rate limiter answers.
    pub fn rate_limit(&self, path_prefix: &str, times: u32, wait_seconds: u64) {
        self.shared.lock().rate_limits.push(RateLimit {
            path_prefix: path_prefix.to_owned(),
            remaining: times,
            wait_seconds,
        });
    }

    /// Every reply accepted through `POST /posts.json`, in order.
    pub fn sent_posts(&self) -> Vec<SentPost> {
        self.shared.lock().sent.clone()
    }

    /// The posts of a topic as the forum holds them now.
    pub fn posts_of(&self, topic_id: u64) -> Vec<SeedPost> {
        self.shared
            .lock()
            .topic(topic_id)
            .map(|t| t.posts.clone())
            .unwrap_or_default()
    }

    /// Someone posts in a topic outside care-mcp (in Discourse itself); returns the post number.
    pub fn post_elsewhere(&self, topic_id: u64, username: &str, raw: &str) -> Option<u64> {
        let mut data = self.shared.lock();
        let user = data.user_named(username)?.id;
        data.add_post(topic_id, user, raw, None, Utc::now(), false)
            .map(|p| p.post_number)
    }

    /// Closes (or reopens) a topic, as a moderator would.
    pub fn set_closed(&self, topic_id: u64, closed: bool) -> bool {
        self.shared
            .lock()
            .topic_mut(topic_id)
            .map(|t| t.closed = closed)
            .is_some()
    }

    /// The poster edits a post: new HTML, its version goes up.
    pub fn edit_post(&self, topic_id: u64, post_number: u64, cooked: &str) -> bool {
        let mut data = self.shared.lock();
        let Some(post) = data
            .topic_mut(topic_id)
            .and_then(|t| t.posts.iter_mut().find(|p| p.post_number == post_number))
        else {
            return false;
        };
        post.cooked = cooked.to_owned();
        post.raw = cooked.to_owned();
        post.version += 1;
        true
    }

    /// Adds a topic after start.
    pub fn add_topic(&self, topic: SeedTopic) {
        self.shared.lock().seed.topics.push(topic);
    }
}

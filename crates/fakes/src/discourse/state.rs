//! What the fake remembers of the forum: its users, categories and topics (replies arrive as
//! posts), every reply it accepted, and rate limits a test asked for. Requests, failures and
//! delays are the scaffold's ([`crate::http`]).

use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};

use super::seed::{Seed, SeedPost, SeedTopic, SeedUser, cook};

/// A reply the fake accepted (`POST /posts.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentPost {
    pub post_id: u64,
    pub topic_id: u64,
    pub post_number: u64,
    pub reply_to_post_number: Option<u64>,
    /// The `raw` text exactly as received.
    pub raw: String,
}

/// A 429 the next matching requests get, with `extras.wait_seconds` in the body and no
/// `Retry-After` header (how Discourse's rate limiter answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RateLimit {
    pub path_prefix: String,
    pub remaining: u32,
    pub wait_seconds: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Data {
    pub seed: Seed,
    pub sent: Vec<SentPost>,
    pub next_post_id: u64,
    pub rate_limits: Vec<RateLimit>,
}

/// Shared between the HTTP task and the handle.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    data: Mutex<Data>,
}

impl Shared {
    pub fn new(seed: Seed) -> Shared {
        Shared {
            data: Mutex::new(Data {
                seed,
                next_post_id: 900_001,
                ..Data::default()
            }),
        }
    }

    /// The data; a panic elsewhere while holding the lock leaves it usable (it is a fake).
    pub fn lock(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Data {
    pub fn topic(&self, id: u64) -> Option<&SeedTopic> {
        self.seed.topics.iter().find(|t| t.id == id)
    }

    pub fn topic_mut(&mut self, id: u64) -> Option<&mut SeedTopic> {
        self.seed.topics.iter_mut().find(|t| t.id == id)
    }

    pub fn user(&self, id: u64) -> Option<&SeedUser> {
        self.seed.users.iter().find(|u| u.id == id)
    }

    pub fn user_named(&self, username: &str) -> Option<&SeedUser> {
        self.seed
            .users
            .iter()
            .find(|u| u.username.eq_ignore_ascii_case(username))
    }

    /// The post with this id and its topic.
    pub fn post(&self, id: u64) -> Option<(&SeedTopic, &SeedPost)> {
        self.seed
            .topics
            .iter()
            .find_map(|t| t.posts.iter().find(|p| p.id == id).map(|p| (t, p)))
    }

    /// Takes one use of the first rate limit matching `path`, if any.
    pub fn rate_limited(&mut self, path: &str) -> Option<u64> {
        let index = self
            .rate_limits
            .iter()
            .position(|r| path.starts_with(&r.path_prefix))?;
        let limit = &mut self.rate_limits[index];
        let wait = limit.wait_seconds;
        limit.remaining = limit.remaining.saturating_sub(1);
        if limit.remaining == 0 {
            self.rate_limits.remove(index);
        }
        Some(wait)
    }

    /// Appends a post by `user_id` to a topic; `record` keeps it among the sent replies.
    pub fn add_post(
        &mut self,
        topic_id: u64,
        user_id: u64,
        raw: &str,
        reply_to_post_number: Option<u64>,
        now: DateTime<Utc>,
        record: bool,
    ) -> Option<SeedPost> {
        let id = self.next_post_id;
        let topic = self.topic_mut(topic_id)?;
        let post_number = topic.posts.iter().map(|p| p.post_number).max().unwrap_or(0) + 1;
        let post = SeedPost {
            id,
            post_number,
            user_id,
            raw: raw.to_owned(),
            cooked: cook(raw),
            created: now,
            reply_to_post_number,
            post_type: 1,
            version: 1,
        };
        topic.posts.push(post.clone());
        self.next_post_id += 1;
        if record {
            self.sent.push(SentPost {
                post_id: id,
                topic_id,
                post_number,
                reply_to_post_number,
                raw: raw.to_owned(),
            });
        }
        Some(post)
    }
}

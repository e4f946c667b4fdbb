//! What the fake remembers: its apps and reviews (responses change as replies arrive), every
//! request it received, every reply it accepted, and the failures a test asked it to inject.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::seed::{Seed, SeedResponse, SeedReview};

/// One request as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// The token verified (kid, iss, aud, exp, signature).
    pub authorized: bool,
    /// Why the token was refused, when it was.
    pub auth_error: Option<String>,
    /// The status the fake answered.
    pub status: u16,
    pub body: Option<String>,
}

/// A review response the fake accepted (`POST /v1/customerReviewResponses`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentReply {
    pub response_id: String,
    pub review_id: String,
    pub body: String,
    /// True when the review already had a response, which this one replaced.
    pub replaced: bool,
}

/// A failure to answer instead of the real behaviour, for requests matching it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Only this method (`GET`, `POST`...); any method when `None`.
    pub method: Option<String>,
    /// Requests whose path starts with this.
    pub path_prefix: String,
    pub status: u16,
    /// The `Retry-After` header to send, verbatim.
    pub retry_after: Option<String>,
    /// How many requests it applies to; every matching request when `None`.
    pub times: Option<u32>,
}

impl Failure {
    /// `status` for every request under `path_prefix`.
    pub fn status(path_prefix: &str, status: u16) -> Failure {
        Failure {
            method: None,
            path_prefix: path_prefix.to_owned(),
            status,
            retry_after: None,
            times: None,
        }
    }

    /// Only the next `n` matching requests.
    pub fn times(mut self, n: u32) -> Failure {
        self.times = Some(n);
        self
    }

    pub fn retry_after(mut self, value: &str) -> Failure {
        self.retry_after = Some(value.to_owned());
        self
    }

    pub fn method(mut self, method: &str) -> Failure {
        self.method = Some(method.to_owned());
        self
    }
}

#[derive(Debug, Default)]
pub(crate) struct Data {
    pub seed: Seed,
    pub requests: Vec<RecordedRequest>,
    pub sent: Vec<SentReply>,
    pub failures: Vec<Failure>,
    /// (method, path prefix, delay): matching requests are answered this much later.
    pub delays: Vec<(String, String, std::time::Duration)>,
    pub next_response: u64,
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
    /// Takes one use of the first failure matching the request, if any.
    pub fn take_failure(&mut self, method: &str, path: &str) -> Option<Failure> {
        let index = self.failures.iter().position(|f| {
            f.method.as_deref().is_none_or(|m| m == method) && path.starts_with(&f.path_prefix)
        })?;
        let failure = self.failures[index].clone();
        if let Some(times) = &mut self.failures[index].times {
            *times = times.saturating_sub(1);
            if *times == 0 {
                self.failures.remove(index);
            }
        }
        Some(failure)
    }

    pub fn review(&self, id: &str) -> Option<&SeedReview> {
        self.seed.reviews.iter().find(|r| r.id == id)
    }

    /// How long to hold the answer to a request, if a delay matches it.
    pub fn delay_for(&self, method: &str, path: &str) -> Option<std::time::Duration> {
        self.delays
            .iter()
            .find(|(m, prefix, _)| m == method && path.starts_with(prefix.as_str()))
            .map(|(_, _, d)| *d)
    }

    /// Creates or replaces the response of a review, as App Store Connect does.
    pub fn respond(
        &mut self,
        review_id: &str,
        body: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Option<SeedResponse> {
        self.next_response += 1;
        let id = format!("resp-fake-{:04}", self.next_response);
        let review = self.seed.reviews.iter_mut().find(|r| r.id == review_id)?;
        let replaced = review.response.is_some();
        let response = SeedResponse {
            id: id.clone(),
            body: body.to_owned(),
            last_modified: now,
            state: "PENDING_PUBLISH".to_owned(),
        };
        review.response = Some(response.clone());
        self.sent.push(SentReply {
            response_id: id,
            review_id: review_id.to_owned(),
            body: body.to_owned(),
            replaced,
        });
        Some(response)
    }
}

//! What the fake remembers of App Store Connect: its apps and reviews (responses change as
//! replies arrive) and every reply it accepted. Requests, failures and delays are the
//! scaffold's ([`crate::http`]).

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::seed::{Seed, SeedResponse, SeedReview};

/// A review response the fake accepted (`POST /v1/customerReviewResponses`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentReply {
    pub response_id: String,
    pub review_id: String,
    pub body: String,
    /// True when the review already had a response, which this one replaced.
    pub replaced: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Data {
    pub seed: Seed,
    pub sent: Vec<SentReply>,
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
    pub fn review(&self, id: &str) -> Option<&SeedReview> {
        self.seed.reviews.iter().find(|r| r.id == id)
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

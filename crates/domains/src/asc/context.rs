//! What every App Store Connect tool shares: the config, the client, the process's services,
//! and the scope rules — the app allowlist, and which app a review belongs to.
//!
//! App Store Connect has no "app of this review" relationship, so a review fetched by id is
//! placed by (1) the reviews this process has already listed for allowlisted apps, then (2) a
//! bounded search of each allowlisted app's reviews narrowed by the review's territory and
//! rating, newest first, stopping once past its creation date. A review found under no
//! allowlisted app is SCOPE_DENIED, and the answer never names the allowed apps.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};

use care_core::decision::{self, Rule};
use care_core::error::{ErrorCode, ToolError};
use care_core::ledger::SupportChannel;
use care_core::registrar::TicketPort;

use super::api::{MAX_PAGE, ReviewQuery};
use super::client::AscClient;
use super::config::AscConfig;
use super::model::{Review, ReviewResponse};

/// Pages searched per allowlisted app when placing a review by id.
const MAX_SCOPE_PAGES: usize = 5;
/// Remembered review → app pairs; beyond this the map is cleared (it is only a cache).
const MAX_INDEXED_REVIEWS: usize = 100_000;

/// Shared by the seven tools of one process.
#[derive(Debug)]
pub struct AscContext {
    pub config: AscConfig,
    pub client: AscClient,
    /// The only part of the ledger this domain uses: App Store tickets for `sla_status`.
    pub tickets: TicketPort,
    review_apps: Mutex<HashMap<String, String>>,
    app_names: Mutex<HashMap<String, String>>,
}

impl AscContext {
    pub fn new(config: AscConfig, client: AscClient, tickets: TicketPort) -> Self {
        AscContext {
            config,
            client,
            tickets,
            review_apps: Mutex::new(HashMap::new()),
            app_names: Mutex::new(HashMap::new()),
        }
    }

    /// SCOPE_DENIED unless `app_id` is allowlisted.
    pub fn require_app(&self, app_id: &str) -> Result<(), ToolError> {
        if self.config.allows(app_id) {
            decision::passed(Rule::Scope);
            Ok(())
        } else {
            Err(ToolError::new(ErrorCode::ScopeDenied).with_detail("app not in CARE_ASC_APP_IDS"))
        }
    }

    /// Notes that `reviews` were listed under the allowlisted `app_id`.
    pub fn remember(&self, app_id: &str, reviews: &[Review]) {
        let mut map = self
            .review_apps
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if map.len() + reviews.len() > MAX_INDEXED_REVIEWS {
            map.clear();
        }
        for r in reviews {
            map.insert(r.id.clone(), app_id.to_owned());
        }
    }

    fn indexed_app(&self, review_id: &str) -> Option<String> {
        let map = self
            .review_apps
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.get(review_id)
            .filter(|app| self.config.allows(app))
            .cloned()
    }

    /// The review `review_id` and its (allowlisted) app; NOT_FOUND or SCOPE_DENIED otherwise.
    pub async fn review_in_scope(&self, review_id: &str) -> Result<(Review, String), ToolError> {
        let review = self.client.review(review_id).await?;
        if let Some(app) = self.indexed_app(review_id) {
            decision::passed(Rule::Scope);
            return Ok((review, app));
        }
        for app_id in &self.config.app_ids {
            if self.search(app_id, &review).await? {
                decision::passed(Rule::Scope);
                return Ok((review, app_id.clone()));
            }
        }
        Err(ToolError::new(ErrorCode::ScopeDenied)
            .with_detail("review of an app not in CARE_ASC_APP_IDS"))
    }

    /// True when `review` is among `app_id`'s reviews (bounded search, newest first).
    async fn search(&self, app_id: &str, review: &Review) -> Result<bool, ToolError> {
        let mut query = ReviewQuery {
            territory: review.territory.clone(),
            rating: Some(review.rating),
            limit: MAX_PAGE,
            ..ReviewQuery::default()
        };
        for _ in 0..MAX_SCOPE_PAGES {
            let page = match self.client.reviews_page(app_id, &query).await {
                Ok(p) => p,
                // An allowlisted app the key cannot see holds no review of ours.
                Err(e) if e.code == ErrorCode::NotFound => return Ok(false),
                Err(e) => return Err(e),
            };
            self.remember(app_id, &page.reviews);
            if page.reviews.iter().any(|r| r.id == review.id) {
                return Ok(true);
            }
            let past = page
                .reviews
                .last()
                .is_some_and(|r| r.created < review.created);
            match page.next_cursor {
                Some(c) if !past => query.cursor = Some(c),
                _ => return Ok(false),
            }
        }
        Ok(false)
    }

    /// The name of an allowlisted app (cached for the life of the process).
    pub async fn app_name(&self, app_id: &str) -> Result<String, ToolError> {
        if let Some(name) = self
            .app_names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(app_id)
        {
            return Ok(name.clone());
        }
        let app = self.client.app(app_id).await?;
        self.app_names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(app_id.to_owned(), app.name.clone());
        Ok(app.name)
    }

    /// Feeds `sla_status`: an unanswered review is an open ticket of the App Store channel,
    /// an answered one has had its first response. Best effort: a ledger failure is logged and
    /// the read it came with still answers.
    pub async fn feed_tickets(
        &self,
        reviews: &[Review],
        responses: &[ReviewResponse],
        now: DateTime<Utc>,
    ) {
        for review in reviews {
            if let Err(err) = self
                .tickets
                .open(SupportChannel::AppStore, &review.id, review.created)
                .await
            {
                tracing::warn!(error = %err, "review ticket not recorded");
                return;
            }
            if let Some(Some(response_id)) = &review.response_id {
                let at = responses
                    .iter()
                    .find(|r| &r.id == response_id)
                    .and_then(|r| r.last_modified)
                    .unwrap_or(now)
                    .max(review.created);
                if let Err(err) = self
                    .tickets
                    .answered(SupportChannel::AppStore, &review.id, at)
                    .await
                {
                    tracing::warn!(error = %err, "review first response not recorded");
                    return;
                }
            }
        }
    }
}

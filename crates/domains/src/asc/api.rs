//! The App Store Connect endpoints this domain uses, typed: one function per endpoint.

use serde_json::{Value, json};

use care_core::error::{ErrorCode, ToolError};
use care_core::pipeline::WritePermit;
use reqwest::Method;

use super::client::AscClient;
use super::model::{self, App, Review, ReviewPage, ReviewResponse};

/// Largest page App Store Connect serves.
pub const MAX_PAGE: u32 = 200;

/// Filters of `GET /v1/apps/{id}/customerReviews`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewQuery {
    pub territory: Option<String>,
    pub rating: Option<u8>,
    /// `exists[publishedResponse]`.
    pub has_published_response: Option<bool>,
    pub limit: u32,
    pub cursor: Option<String>,
}

fn malformed(what: &str) -> ToolError {
    ToolError::new(ErrorCode::UpstreamUnavailable)
        .with_detail(format!("{what}: answer not understood"))
}

impl AscClient {
    /// `GET /v1/apps?filter[id]=...`: the allowlisted apps (filtered again here).
    pub async fn apps(&self, ids: &[String]) -> Result<Vec<App>, ToolError> {
        let query = [
            ("filter[id]", ids.join(",")),
            ("fields[apps]", "name,bundleId,primaryLocale".to_owned()),
            ("limit", MAX_PAGE.to_string()),
        ];
        let doc = self.get(&["v1", "apps"], &query).await?;
        Ok(model::items(&doc["data"], model::app_from)
            .into_iter()
            .filter(|a| ids.contains(&a.id))
            .collect())
    }

    /// `GET /v1/apps/{id}`.
    pub async fn app(&self, id: &str) -> Result<App, ToolError> {
        let query = [("fields[apps]", "name,bundleId,primaryLocale".to_owned())];
        let doc = self.get(&["v1", "apps", id], &query).await?;
        model::app_from(&doc["data"])
            .filter(|a| a.id == id)
            .ok_or_else(|| malformed("GET /v1/apps/{id}"))
    }

    /// `GET /v1/apps/{id}/customerReviews`, newest first, with their responses included.
    pub async fn reviews_page(
        &self,
        app_id: &str,
        q: &ReviewQuery,
    ) -> Result<ReviewPage, ToolError> {
        let mut query = vec![
            ("sort", "-createdDate".to_owned()),
            ("include", "response".to_owned()),
            ("limit", q.limit.clamp(1, MAX_PAGE).to_string()),
        ];
        if let Some(t) = &q.territory {
            query.push(("filter[territory]", t.clone()));
        }
        if let Some(r) = q.rating {
            query.push(("filter[rating]", r.to_string()));
        }
        if let Some(p) = q.has_published_response {
            query.push(("exists[publishedResponse]", p.to_string()));
        }
        if let Some(c) = &q.cursor {
            query.push(("cursor", c.clone()));
        }
        let doc = self
            .get(&["v1", "apps", app_id, "customerReviews"], &query)
            .await?;
        if !doc["data"].is_array() {
            return Err(malformed("GET /v1/apps/{id}/customerReviews"));
        }
        Ok(model::review_page(&doc))
    }

    /// `GET /v1/customerReviews/{id}?include=response`.
    pub async fn review(&self, id: &str) -> Result<Review, ToolError> {
        let doc = self
            .get(
                &["v1", "customerReviews", id],
                &[("include", "response".to_owned())],
            )
            .await?;
        model::review_from(&doc["data"])
            .filter(|r| r.id == id)
            .ok_or_else(|| malformed("GET /v1/customerReviews/{id}"))
    }

    /// `GET /v1/customerReviews/{id}/response`: `None` when the review has none (404 or null).
    pub async fn response_of(&self, review_id: &str) -> Result<Option<ReviewResponse>, ToolError> {
        match self
            .get(&["v1", "customerReviews", review_id, "response"], &[])
            .await
        {
            Ok(doc) if doc["data"].is_null() => Ok(None),
            Ok(doc) => model::response_from(&doc["data"])
                .map(Some)
                .ok_or_else(|| malformed("GET /v1/customerReviews/{id}/response")),
            Err(e) if e.code == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `POST /v1/customerReviewResponses`: creates the response, or replaces the existing one.
    /// Only with the permit of a consumed approval for exactly this reply.
    pub async fn create_response(
        &self,
        permit: &WritePermit<'_>,
        review_id: &str,
        body: &str,
    ) -> Result<ReviewResponse, ToolError> {
        let doc: Value = json!({
            "data": {
                "type": "customerReviewResponses",
                "attributes": { "responseBody": body },
                "relationships": {
                    "review": { "data": { "type": "customerReviews", "id": review_id } }
                }
            }
        });
        let answer = self
            .http
            .write(
                permit,
                Method::POST,
                &["v1", "customerReviewResponses"],
                &[],
                Some(&doc),
            )
            .await?;
        model::response_from(&answer["data"])
            .ok_or_else(|| malformed("POST /v1/customerReviewResponses"))
    }
}

//! The JSON:API documents App Store Connect answers with: apps, reviews, review responses and
//! errors, with `links` against the fake's own base URL and dates in Apple's Pacific offset.

use axum::http::StatusCode;
use chrono::{FixedOffset, Utc};
use serde_json::{Value, json};

use super::seed::{SeedApp, SeedResponse, SeedReview};

pub(crate) fn error_body(status: StatusCode, code: &str, detail: &str) -> Value {
    json!({
        "errors": [{
            "id": uuid::Uuid::new_v4().to_string(),
            "status": status.as_u16().to_string(),
            "code": code,
            "title": status.canonical_reason().unwrap_or("Error"),
            "detail": detail,
        }]
    })
}

/// Apple writes dates with the Pacific offset; the client must honour offsets.
fn apple_date(t: chrono::DateTime<Utc>) -> String {
    match FixedOffset::west_opt(7 * 3600) {
        Some(pacific) => t
            .with_timezone(&pacific)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
        None => t.to_rfc3339(),
    }
}

pub(crate) fn app_json(base_url: &str, a: &SeedApp) -> Value {
    json!({
        "type": "apps",
        "id": a.id,
        "attributes": {
            "name": a.name,
            "bundleId": a.bundle_id,
            "sku": a.sku,
            "primaryLocale": a.primary_locale,
        },
        "links": { "self": format!("{base_url}/v1/apps/{}", a.id) },
    })
}

pub(crate) fn review_json(base_url: &str, r: &SeedReview, include_response: bool) -> Value {
    let mut response = json!({
        "links": {
            "self": format!("{base_url}/v1/customerReviews/{}/relationships/response", r.id),
            "related": format!("{base_url}/v1/customerReviews/{}/response", r.id),
        }
    });
    if include_response {
        response["data"] = match &r.response {
            Some(resp) => json!({ "type": "customerReviewResponses", "id": resp.id }),
            None => Value::Null,
        };
    }
    json!({
        "type": "customerReviews",
        "id": r.id,
        "attributes": {
            "rating": r.rating,
            "title": r.title,
            "body": r.body,
            "reviewerNickname": r.nickname,
            "createdDate": apple_date(r.created),
            "territory": r.territory,
        },
        "relationships": { "response": response },
        "links": { "self": format!("{base_url}/v1/customerReviews/{}", r.id) },
    })
}

pub(crate) fn response_json(base_url: &str, review_id: &str, resp: &SeedResponse) -> Value {
    json!({
        "type": "customerReviewResponses",
        "id": resp.id,
        "attributes": {
            "responseBody": resp.body,
            "lastModifiedDate": apple_date(resp.last_modified),
            "state": resp.state,
        },
        "relationships": {
            "review": { "data": { "type": "customerReviews", "id": review_id } }
        },
        "links": { "self": format!("{base_url}/v1/customerReviewResponses/{}", resp.id) },
    })
}

//! App Store Connect's routes: the JSON:API reads of apps and reviews with their filters,
//! sorting and paging, and the create/replace and delete of review responses. Credentials,
//! recording and injected failures are the scaffold's front ([`crate::http`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Utc;
use serde_json::{Value, json};

use super::documents::{app_json, error_body, response_json, review_json};
use super::seed::SeedReview;
use super::state::{Data, Shared};
use crate::http::query::{encode, map as query_map};

/// Largest page App Store Connect serves.
const MAX_LIMIT: usize = 200;
/// Page size when the request names none.
const DEFAULT_LIMIT: usize = 50;

#[derive(Debug)]
pub(crate) struct App {
    pub shared: Arc<Shared>,
    pub base_url: String,
}

type Answer = (StatusCode, Value);

/// The one entry point: every path comes here (the API's paths are matched in [`route`]).
pub(crate) async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let query = query_map(uri.query());
    let body_text = (!body.is_empty()).then(|| String::from_utf8_lossy(&body).into_owned());
    let (status, json) = {
        let mut data = app.shared.lock();
        route(
            &app,
            &mut data,
            &method,
            uri.path(),
            &query,
            body_text.as_deref(),
        )
    };
    if status == StatusCode::NO_CONTENT {
        status.into_response()
    } else {
        (status, axum::Json(json)).into_response()
    }
}

fn not_found(what: &str) -> Answer {
    (
        StatusCode::NOT_FOUND,
        error_body(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            &format!("There is no resource of type '{what}' with this id."),
        ),
    )
}

fn bad_parameter(detail: &str) -> Answer {
    (
        StatusCode::BAD_REQUEST,
        error_body(StatusCode::BAD_REQUEST, "PARAMETER_ERROR.INVALID", detail),
    )
}

fn route(
    app: &App,
    data: &mut Data,
    method: &Method,
    path: &str,
    query: &HashMap<String, String>,
    body: Option<&str>,
) -> Answer {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["v1", "apps"]) => list_apps(app, data, query),
        ("GET", ["v1", "apps", id]) => match data.seed.apps.iter().find(|a| a.id == *id) {
            Some(a) => (
                StatusCode::OK,
                json!({ "data": app_json(&app.base_url, a) }),
            ),
            None => not_found("apps"),
        },
        ("GET", ["v1", "apps", id, "customerReviews"]) => list_reviews(app, data, id, query),
        ("GET", ["v1", "customerReviews", id]) => match data.review(id) {
            Some(r) => {
                let include = query
                    .get("include")
                    .is_some_and(|v| v.split(',').any(|i| i == "response"));
                let mut doc = json!({ "data": review_json(&app.base_url, r, include), "links": { "self": format!("{}{}", app.base_url, path) } });
                if include && let Some(resp) = &r.response {
                    doc["included"] = json!([response_json(&app.base_url, &r.id, resp)]);
                }
                (StatusCode::OK, doc)
            }
            None => not_found("customerReviews"),
        },
        ("GET", ["v1", "customerReviews", id, "response"]) => match data.review(id) {
            Some(SeedReview {
                response: Some(resp),
                id,
                ..
            }) => (
                StatusCode::OK,
                json!({ "data": response_json(&app.base_url, id, resp), "links": { "self": format!("{}{}", app.base_url, path) } }),
            ),
            Some(_) => not_found("customerReviewResponses"),
            None => not_found("customerReviews"),
        },
        ("POST", ["v1", "customerReviewResponses"]) => create_response(app, data, body),
        ("DELETE", ["v1", "customerReviewResponses", id]) => {
            match data
                .seed
                .reviews
                .iter_mut()
                .find(|r| r.response.as_ref().is_some_and(|resp| resp.id == *id))
            {
                Some(review) => {
                    review.response = None;
                    (StatusCode::NO_CONTENT, Value::Null)
                }
                None => not_found("customerReviewResponses"),
            }
        }
        _ => not_found("path"),
    }
}

fn limit_of(query: &HashMap<String, String>) -> Result<usize, Answer> {
    match query.get("limit") {
        None => Ok(DEFAULT_LIMIT),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
            _ => Err(bad_parameter("The limit must be between 1 and 200.")),
        },
    }
}

/// Apple's cursors are opaque base64url text; this fake's encode an offset the same way.
fn offset_of(query: &HashMap<String, String>) -> Result<usize, Answer> {
    let Some(cursor) = query.get("cursor") else {
        return Ok(0);
    };
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["offset"].as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| bad_parameter("The cursor is invalid."))
}

fn cursor_for(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(json!({ "offset": offset.to_string() }).to_string())
}

/// `data`, `links` (`self`, and `next` while more remain) and `meta.paging` of one page.
fn page(
    app: &App,
    path: &str,
    query: &HashMap<String, String>,
    items: Vec<Value>,
    offset: usize,
    limit: usize,
) -> (Vec<Value>, Value, Value) {
    let total = items.len();
    let data: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
    let mut pairs: Vec<(&String, &String)> = query.iter().filter(|(k, _)| *k != "cursor").collect();
    pairs.sort();
    let base_query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    let self_link = format!("{}{}?{}", app.base_url, path, base_query.join("&"));
    let mut links = json!({ "self": self_link });
    if offset + limit < total {
        let mut q = base_query.clone();
        q.push(format!("cursor={}", cursor_for(offset + limit)));
        links["next"] = json!(format!("{}{}?{}", app.base_url, path, q.join("&")));
    }
    (
        data,
        links,
        json!({ "paging": { "total": total, "limit": limit } }),
    )
}

fn list_apps(app: &App, data: &Data, query: &HashMap<String, String>) -> Answer {
    let (limit, offset) = match (limit_of(query), offset_of(query)) {
        (Ok(l), Ok(o)) => (l, o),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let ids: Option<Vec<&str>> = query.get("filter[id]").map(|v| v.split(',').collect());
    let items: Vec<Value> = data
        .seed
        .apps
        .iter()
        .filter(|a| ids.as_ref().is_none_or(|ids| ids.contains(&a.id.as_str())))
        .map(|a| app_json(&app.base_url, a))
        .collect();
    let (data, links, meta) = page(app, "/v1/apps", query, items, offset, limit);
    (
        StatusCode::OK,
        json!({ "data": data, "links": links, "meta": meta }),
    )
}

fn list_reviews(app: &App, data: &Data, app_id: &str, query: &HashMap<String, String>) -> Answer {
    if !data.seed.apps.iter().any(|a| a.id == app_id) {
        return not_found("apps");
    }
    let (limit, offset) = match (limit_of(query), offset_of(query)) {
        (Ok(l), Ok(o)) => (l, o),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let territories: Option<Vec<&str>> = query
        .get("filter[territory]")
        .map(|v| v.split(',').collect());
    let ratings: Option<Vec<u8>> = match query.get("filter[rating]") {
        None => None,
        Some(v) => match v
            .split(',')
            .map(str::parse::<u8>)
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(r) if r.iter().all(|x| (1..=5).contains(x)) => Some(r),
            _ => return bad_parameter("filter[rating] must be 1 to 5."),
        },
    };
    let published: Option<bool> = match query.get("exists[publishedResponse]").map(String::as_str) {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return bad_parameter("exists[publishedResponse] must be true or false."),
    };
    let include = query
        .get("include")
        .is_some_and(|v| v.split(',').any(|i| i == "response"));
    let mut reviews: Vec<&SeedReview> = data
        .seed
        .reviews
        .iter()
        .filter(|r| r.app_id == app_id)
        .filter(|r| {
            territories
                .as_ref()
                .is_none_or(|t| t.contains(&r.territory.as_str()))
        })
        .filter(|r| ratings.as_ref().is_none_or(|x| x.contains(&r.rating)))
        .filter(|r| {
            published
                .is_none_or(|p| p == r.response.as_ref().is_some_and(|x| x.state == "PUBLISHED"))
        })
        .collect();
    match query
        .get("sort")
        .map(String::as_str)
        .unwrap_or("-createdDate")
    {
        "-createdDate" => reviews.sort_by(|a, b| b.created.cmp(&a.created).then(a.id.cmp(&b.id))),
        "createdDate" => reviews.sort_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id))),
        "-rating" => reviews.sort_by(|a, b| b.rating.cmp(&a.rating).then(a.id.cmp(&b.id))),
        "rating" => reviews.sort_by(|a, b| a.rating.cmp(&b.rating).then(a.id.cmp(&b.id))),
        _ => return bad_parameter("sort must be createdDate, -createdDate, rating or -rating."),
    }
    let items: Vec<Value> = reviews
        .iter()
        .map(|r| review_json(&app.base_url, r, include))
        .collect();
    let path = format!("/v1/apps/{app_id}/customerReviews");
    let (page_data, links, meta) = page(app, &path, query, items, offset, limit);
    let mut doc = json!({ "data": page_data, "links": links, "meta": meta });
    if include {
        let shown: Vec<&str> = doc["data"]
            .as_array()
            .map(|a| a.iter().filter_map(|r| r["id"].as_str()).collect())
            .unwrap_or_default();
        let included: Vec<Value> = reviews
            .iter()
            .filter(|r| shown.contains(&r.id.as_str()))
            .filter_map(|r| {
                r.response
                    .as_ref()
                    .map(|resp| response_json(&app.base_url, &r.id, resp))
            })
            .collect();
        doc["included"] = json!(included);
    }
    (StatusCode::OK, doc)
}

fn create_response(app: &App, data: &mut Data, body: Option<&str>) -> Answer {
    let conflict = |detail: &str| {
        (
            StatusCode::CONFLICT,
            error_body(StatusCode::CONFLICT, "ENTITY_ERROR", detail),
        )
    };
    let Some(doc) = body.and_then(|b| serde_json::from_str::<Value>(b).ok()) else {
        return conflict("The request body is not a JSON document.");
    };
    let d = &doc["data"];
    if d["type"] != "customerReviewResponses" {
        return conflict("data.type must be customerReviewResponses.");
    }
    let Some(text) = d["attributes"]["responseBody"]
        .as_str()
        .filter(|t| !t.trim().is_empty())
    else {
        return conflict("attributes.responseBody is required.");
    };
    let review = &d["relationships"]["review"]["data"];
    if review["type"] != "customerReviews" {
        return conflict("relationships.review.data.type must be customerReviews.");
    }
    let Some(review_id) = review["id"].as_str() else {
        return conflict("relationships.review.data.id is required.");
    };
    match data.respond(review_id, text, Utc::now()) {
        Some(resp) => (
            StatusCode::CREATED,
            json!({ "data": response_json(&app.base_url, review_id, &resp), "links": { "self": format!("{}/v1/customerReviewResponses/{}", app.base_url, resp.id) } }),
        ),
        None => not_found("customerReviews"),
    }
}

//! Discourse's routes: the topic lists (latest, per category with its canonical slug path),
//! topic views and their post stream, single posts, search, categories, and `POST /posts.json`
//! with Discourse's refusals (too short, duplicate, closed or archived topic). Credentials,
//! recording and injected failures are the scaffold's front ([`crate::http`]); rate limits with
//! `extras.wait_seconds` are the fake's own ([`super::state::RateLimit`]).
//!
//! The API user is an admin and sees everything, private messages included (in topic views,
//! single posts and search): the client under test must keep them out itself.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Value, json};

use super::documents::{
    bumped, category_json, error_body, list_item, list_users, post_json, status_error, strip_tags,
    topic_view,
};
use super::seed::SeedTopic;
use super::state::{Data, Shared};
use crate::http::query::{map as query_map, pairs};

/// Topics per page of a topic list (Discourse's default).
pub const TOPICS_PER_PAGE: usize = 30;
/// Posts per chunk of a topic view (Discourse's `chunk_size`).
pub const POSTS_PER_CHUNK: usize = 20;
/// Posts per page of search results.
pub const SEARCH_PER_PAGE: usize = 50;
/// Discourse's default `min_post_length`.
pub const MIN_POST_LENGTH: usize = 20;

#[derive(Debug)]
pub(crate) struct App {
    pub shared: Arc<Shared>,
}

enum Answer {
    Json(StatusCode, Value),
    Redirect(String),
}

fn ok(v: Value) -> Answer {
    Answer::Json(StatusCode::OK, v)
}

fn status(code: StatusCode) -> Answer {
    Answer::Json(code, status_error(code))
}

fn refused(sentence: &str) -> Answer {
    Answer::Json(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({ "action": "create_post", "errors": [sentence] }),
    )
}

/// The one entry point: every path comes here (matched in [`route`]).
pub(crate) async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let answer = {
        let mut data = app.shared.lock();
        match data.rate_limited(uri.path()) {
            Some(wait) => {
                let mut body = status_error(StatusCode::TOO_MANY_REQUESTS);
                body["extras"] =
                    json!({ "wait_seconds": wait, "time_left": format!("{wait} seconds") });
                Answer::Json(StatusCode::TOO_MANY_REQUESTS, body)
            }
            None => route(&mut data, &method, uri.path(), uri.query(), &body),
        }
    };
    match answer {
        Answer::Json(status, value) => (status, axum::Json(value)).into_response(),
        Answer::Redirect(location) => (
            StatusCode::MOVED_PERMANENTLY,
            [(header::LOCATION, location)],
        )
            .into_response(),
    }
}

fn number(segment: &str, suffix: &str) -> Option<u64> {
    segment.strip_suffix(suffix).unwrap_or(segment).parse().ok()
}

fn route(data: &mut Data, method: &Method, path: &str, query: Option<&str>, body: &[u8]) -> Answer {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let q = query_map(query);
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["latest.json"]) => latest(data, None, &q),
        ("GET", ["c", rest @ .., last]) if last.ends_with(".json") => {
            let Some(id) = number(last, ".json") else {
                return status(StatusCode::NOT_FOUND);
            };
            let Some(canonical) = slug_path(data, id) else {
                return status(StatusCode::NOT_FOUND);
            };
            if rest.join("/") != canonical {
                // Discourse answers a wrong slug path with a redirect to the canonical one.
                return Answer::Redirect(format!("/c/{canonical}/{id}.json"));
            }
            latest(data, Some(id), &q)
        }
        ("GET", ["t", id]) if id.ends_with(".json") => {
            match number(id, ".json").and_then(|id| data.topic(id)) {
                Some(t) => ok(topic_view(data, t, POSTS_PER_CHUNK)),
                None => status(StatusCode::NOT_FOUND),
            }
        }
        ("GET", ["t", id, "posts.json"]) => {
            let Some(t) = id.parse().ok().and_then(|id| data.topic(id)) else {
                return status(StatusCode::NOT_FOUND);
            };
            let wanted: Vec<u64> = query
                .map(pairs)
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| k == "post_ids[]")
                .filter_map(|(_, v)| v.parse().ok())
                .collect();
            let posts: Vec<Value> = t
                .posts
                .iter()
                .filter(|p| wanted.contains(&p.id))
                .map(|p| post_json(data, t, p))
                .collect();
            ok(json!({ "post_stream": { "posts": posts } }))
        }
        ("GET", ["posts", id]) if id.ends_with(".json") => {
            match number(id, ".json").and_then(|id| data.post(id)) {
                Some((t, p)) => {
                    let mut doc = post_json(data, t, p);
                    doc["raw"] = json!(p.raw);
                    doc["posts_count"] = json!(t.posts.len());
                    ok(doc)
                }
                None => status(StatusCode::NOT_FOUND),
            }
        }
        ("GET", ["search.json"]) => search(data, &q),
        ("GET", ["categories.json"]) => categories(data, &q),
        ("POST", ["posts.json"]) => create_post(data, body),
        _ => status(StatusCode::NOT_FOUND),
    }
}

/// The canonical slug path of a category (`parent/child`).
fn slug_path(data: &Data, id: u64) -> Option<String> {
    let mut parts = Vec::new();
    let mut current = data.seed.categories.iter().find(|c| c.id == id)?;
    for _ in 0..4 {
        parts.push(current.slug.clone());
        match current.parent_id {
            None => {
                parts.reverse();
                return Some(parts.join("/"));
            }
            Some(parent) => current = data.seed.categories.iter().find(|c| c.id == parent)?,
        }
    }
    None
}

fn in_category(data: &Data, t: &SeedTopic, id: u64) -> bool {
    // A category's list includes its subcategories' topics, as Discourse shows them.
    t.category_id.is_some_and(|c| {
        c == id
            || data
                .seed
                .categories
                .iter()
                .any(|s| s.id == c && s.parent_id == Some(id))
    })
}

fn latest(
    data: &Data,
    category: Option<u64>,
    q: &std::collections::HashMap<String, String>,
) -> Answer {
    let page: usize = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(0);
    let per_page = q
        .get("per_page")
        .and_then(|p| p.parse().ok())
        .filter(|n| (1..=100).contains(n))
        .unwrap_or(TOPICS_PER_PAGE);
    let mut topics: Vec<&SeedTopic> = data
        .seed
        .topics
        .iter()
        .filter(|t| !t.private_message)
        .filter(|t| category.is_none_or(|c| in_category(data, t, c)))
        .collect();
    topics.sort_by(|a, b| bumped(b).cmp(&bumped(a)).then(b.id.cmp(&a.id)));
    let total = topics.len();
    let shown: Vec<&SeedTopic> = topics
        .into_iter()
        .skip(page.saturating_mul(per_page))
        .take(per_page)
        .collect();
    let mut list = json!({
        "can_create_topic": true,
        "per_page": per_page,
        "topics": shown.iter().map(|t| list_item(data, t)).collect::<Vec<_>>(),
    });
    if (page + 1) * per_page < total {
        list["more_topics_url"] = json!(format!("/latest?page={}", page + 1));
    }
    ok(json!({
        "users": list_users(data, &shown),
        "primary_groups": [],
        "topic_list": list,
    }))
}

fn search(data: &Data, q: &std::collections::HashMap<String, String>) -> Answer {
    let term = q.get("q").cloned().unwrap_or_default();
    let page: usize = q
        .get("page")
        .and_then(|p| p.parse().ok())
        .filter(|p| *p >= 1)
        .unwrap_or(1);
    let words: Vec<String> = term
        .split_whitespace()
        .filter(|w| !w.contains(':') && !w.starts_with('#') && !w.starts_with('@'))
        .map(str::to_lowercase)
        .collect();
    let mut hits: Vec<(&SeedTopic, &super::seed::SeedPost)> = Vec::new();
    if !words.is_empty() {
        for t in &data.seed.topics {
            for p in &t.posts {
                let text = format!("{} {}", t.title, strip_tags(&p.cooked)).to_lowercase();
                if words.iter().all(|w| text.contains(w)) {
                    hits.push((t, p));
                }
            }
        }
    }
    hits.sort_by(|a, b| b.1.created.cmp(&a.1.created).then(b.1.id.cmp(&a.1.id)));
    let more = hits.len() > page * SEARCH_PER_PAGE;
    let shown: Vec<_> = hits
        .into_iter()
        .skip((page - 1) * SEARCH_PER_PAGE)
        .take(SEARCH_PER_PAGE)
        .collect();
    let posts: Vec<Value> = shown
        .iter()
        .map(|(t, p)| {
            let name = data
                .user(p.user_id)
                .map_or("system", |u| u.username.as_str());
            let blurb: String = strip_tags(&p.cooked).chars().take(200).collect();
            json!({
                "id": p.id,
                "name": name,
                "username": name,
                "avatar_template": "/user_avatar/forum/x/{size}/1_2.png",
                "created_at": super::documents::discourse_date(p.created),
                "like_count": 0,
                "blurb": blurb,
                "post_number": p.post_number,
                "topic_id": t.id,
            })
        })
        .collect();
    let mut topic_ids: Vec<u64> = shown.iter().map(|(t, _)| t.id).collect();
    topic_ids.dedup();
    let topics: Vec<Value> = topic_ids
        .iter()
        .filter_map(|id| data.topic(*id))
        .map(|t| list_item(data, t))
        .collect();
    ok(json!({
        "posts": posts,
        "topics": topics,
        "users": [],
        "categories": [],
        "tags": [],
        "groups": [],
        "grouped_search_result": {
            "more_posts": null,
            "more_users": null,
            "more_categories": null,
            "term": term,
            "search_log_id": 1,
            "more_full_page_results": more,
            "can_create_topic": true,
            "error": null,
            "post_ids": shown.iter().map(|(_, p)| p.id).collect::<Vec<_>>(),
            "user_ids": [],
            "category_ids": [],
            "tag_ids": [],
            "group_ids": [],
        },
    }))
}

fn categories(data: &Data, q: &std::collections::HashMap<String, String>) -> Answer {
    let with_subcategories = q.get("include_subcategories").is_some_and(|v| v == "true");
    let list: Vec<Value> = data
        .seed
        .categories
        .iter()
        .filter(|c| c.parent_id.is_none())
        .map(|c| {
            let mut v = category_json(c, data);
            if with_subcategories {
                v["subcategory_list"] = json!(
                    data.seed
                        .categories
                        .iter()
                        .filter(|s| s.parent_id == Some(c.id))
                        .map(|s| category_json(s, data))
                        .collect::<Vec<_>>()
                );
            }
            v
        })
        .collect();
    ok(json!({
        "category_list": {
            "can_create_category": true,
            "can_create_topic": true,
            "categories": list,
        }
    }))
}

fn create_post(data: &mut Data, body: &[u8]) -> Answer {
    let Ok(doc) = serde_json::from_slice::<Value>(body) else {
        return Answer::Json(
            StatusCode::BAD_REQUEST,
            error_body(
                &["The request body is not JSON."],
                Some("invalid_parameters"),
            ),
        );
    };
    // The client under test only ever replies: anything that would open a topic or a private
    // message is refused, so a test sees it.
    for key in [
        "title",
        "archetype",
        "target_recipients",
        "target_usernames",
        "category",
    ] {
        if doc.get(key).is_some() {
            return refused("This fake accepts replies in existing topics only.");
        }
    }
    let (Some(topic_id), Some(raw)) = (doc["topic_id"].as_u64(), doc["raw"].as_str()) else {
        return refused("topic_id and raw are required.");
    };
    let Some(api_user) = data.user_named(&data.seed.api_username).map(|u| u.id) else {
        return status(StatusCode::FORBIDDEN);
    };
    let Some(topic) = data.topic(topic_id) else {
        return status(StatusCode::NOT_FOUND);
    };
    if topic.private_message {
        return status(StatusCode::FORBIDDEN);
    }
    if topic.closed {
        return refused("This topic is closed; it no longer accepts new replies.");
    }
    if topic.archived {
        return refused("This topic is archived; it no longer accepts replies.");
    }
    if raw.trim().chars().count() < MIN_POST_LENGTH {
        return refused(&format!(
            "Body is too short (minimum is {MIN_POST_LENGTH} characters)"
        ));
    }
    if topic
        .posts
        .iter()
        .any(|p| p.user_id == api_user && p.raw.trim() == raw.trim())
    {
        return refused("Body is too similar to what you recently posted");
    }
    let reply_to = doc["reply_to_post_number"].as_u64();
    match data.add_post(topic_id, api_user, raw, reply_to, Utc::now(), true) {
        Some(post) => match data.topic(topic_id) {
            Some(t) => {
                let mut answer = post_json(data, t, &post);
                answer["raw"] = json!(post.raw);
                ok(answer)
            }
            None => status(StatusCode::NOT_FOUND),
        },
        None => status(StatusCode::NOT_FOUND),
    }
}

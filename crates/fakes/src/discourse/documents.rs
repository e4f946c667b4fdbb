//! The JSON Discourse answers with, shaped after its OpenAPI description: topic lists, topic
//! views, posts, search results, categories and error documents, dates as Discourse writes them
//! (UTC, milliseconds, `Z`).

use axum::http::StatusCode;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::seed::{SeedCategory, SeedPost, SeedTopic, SeedUser};
use super::state::Data;

pub(crate) fn discourse_date(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Discourse's error document: human sentences and a machine `error_type`.
pub(crate) fn error_body(errors: &[&str], error_type: Option<&str>) -> Value {
    let mut body = json!({ "errors": errors });
    if let Some(t) = error_type {
        body["error_type"] = json!(t);
    }
    body
}

/// The error document of a status, as Discourse words it.
pub(crate) fn status_error(status: StatusCode) -> Value {
    match status.as_u16() {
        403 => error_body(
            &["You are not permitted to view the requested resource."],
            Some("invalid_access"),
        ),
        404 => error_body(
            &["The requested URL or resource could not be found."],
            Some("not_found"),
        ),
        429 => error_body(
            &[
                "You’ve performed this action too many times. Please wait a few seconds before trying again.",
            ],
            Some("rate_limit"),
        ),
        _ => error_body(&["Something went wrong."], None),
    }
}

fn slug(title: &str) -> String {
    let s: String = title
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let s = s
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    if s.is_empty() { "topic".to_owned() } else { s }
}

fn last_post(t: &SeedTopic) -> Option<&SeedPost> {
    t.posts.iter().max_by_key(|p| p.post_number)
}

/// The time of a topic's last post (its `bumped_at`).
pub(crate) fn bumped(t: &SeedTopic) -> DateTime<Utc> {
    last_post(t).map_or_else(Utc::now, |p| p.created)
}

fn created(t: &SeedTopic) -> DateTime<Utc> {
    t.posts.first().map_or_else(Utc::now, |p| p.created)
}

fn username(data: &Data, user_id: u64) -> String {
    data.user(user_id)
        .map_or_else(|| "system".to_owned(), |u| u.username.clone())
}

fn basic_user(u: &SeedUser) -> Value {
    json!({
        "id": u.id,
        "username": u.username,
        "name": u.username,
        "avatar_template": format!("/user_avatar/forum/{}/{{size}}/1_2.png", u.username),
    })
}

/// The fields every topic document has.
fn topic_fields(t: &SeedTopic) -> Value {
    let highest = last_post(t).map_or(0, |p| p.post_number);
    json!({
        "id": t.id,
        "title": t.title,
        "fancy_title": t.title.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;"),
        "slug": slug(&t.title),
        "posts_count": t.posts.len(),
        "reply_count": t.posts.iter().filter(|p| p.reply_to_post_number.is_some()).count(),
        "highest_post_number": highest,
        "image_url": null,
        "created_at": discourse_date(created(t)),
        "last_posted_at": discourse_date(bumped(t)),
        "bumped": true,
        "bumped_at": discourse_date(bumped(t)),
        "archetype": if t.private_message { "private_message" } else { "regular" },
        "unseen": false,
        "pinned": false,
        "unpinned": null,
        "visible": true,
        "closed": t.closed,
        "archived": t.archived,
        "bookmarked": null,
        "liked": null,
        "views": 10 * t.posts.len(),
        "like_count": 0,
        "has_summary": false,
        "category_id": t.category_id,
        "pinned_globally": false,
        "featured_link": null,
    })
}

/// A topic of a topic list, its posters named by user id (the original poster first, then the
/// most recent and up to three other frequent posters, as Discourse lists them).
pub(crate) fn list_item(data: &Data, t: &SeedTopic) -> Value {
    let mut item = topic_fields(t);
    let mut posters: Vec<(u64, &str)> = Vec::new();
    if let Some(first) = t.posts.first() {
        posters.push((first.user_id, "Original Poster"));
    }
    if let Some(last) = last_post(t)
        && !posters.iter().any(|(id, _)| *id == last.user_id)
    {
        posters.push((last.user_id, "Most Recent Poster"));
    }
    for p in &t.posts {
        if posters.len() >= 5 {
            break;
        }
        if !posters.iter().any(|(id, _)| *id == p.user_id) {
            posters.push((p.user_id, "Frequent Poster"));
        }
    }
    item["posters"] = json!(
        posters
            .iter()
            .map(|(id, d)| json!({"extras": null, "description": d, "user_id": id, "primary_group_id": null}))
            .collect::<Vec<_>>()
    );
    item["last_poster_username"] = json!(last_post(t).map(|p| username(data, p.user_id)));
    item
}

/// The users a set of list items names.
pub(crate) fn list_users(data: &Data, topics: &[&SeedTopic]) -> Value {
    let mut ids: Vec<u64> = topics
        .iter()
        .flat_map(|t| t.posts.iter().map(|p| p.user_id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    json!(
        ids.iter()
            .filter_map(|id| data.user(*id))
            .map(basic_user)
            .collect::<Vec<_>>()
    )
}

pub(crate) fn post_json(data: &Data, t: &SeedTopic, p: &SeedPost) -> Value {
    let user = data.user(p.user_id);
    let admin = user.is_some_and(|u| u.admin);
    let moderator = user.is_some_and(|u| u.moderator);
    let name = username(data, p.user_id);
    let mut doc = json!({
        "id": p.id,
        "name": name,
        "username": name,
        "avatar_template": format!("/user_avatar/forum/{name}/{{size}}/1_2.png"),
        "created_at": discourse_date(p.created),
        "cooked": p.cooked,
        "post_number": p.post_number,
        "post_type": p.post_type,
        "updated_at": discourse_date(p.created),
        "reply_count": t.posts.iter().filter(|r| r.reply_to_post_number == Some(p.post_number)).count(),
        "reply_to_post_number": p.reply_to_post_number,
        "quote_count": 0,
        "incoming_link_count": 0,
        "reads": 1,
        "readers_count": 0,
        "score": 0.2,
        "yours": data.user_named(&data.seed.api_username).is_some_and(|u| u.id == p.user_id),
        "topic_id": t.id,
        "topic_slug": slug(&t.title),
        "display_username": name,
        "primary_group_name": null,
        "flair_name": null,
        "flair_url": null,
        "flair_bg_color": null,
        "flair_color": null,
    });
    // Two literals: one would pass serde_json's macro recursion limit.
    let more = json!({
        "version": p.version,
        "can_edit": true,
        "can_delete": true,
        "can_recover": false,
        "can_wiki": true,
        "read": true,
        "user_title": null,
        "bookmarked": false,
        "actions_summary": [],
        "moderator": moderator,
        "admin": admin,
        "staff": admin || moderator,
        "user_id": p.user_id,
        "hidden": false,
        "trust_level": if admin || moderator { 4 } else { 1 },
        "deleted_at": null,
        "user_deleted": false,
        "edit_reason": null,
        "can_view_edit_history": true,
        "wiki": false,
    });
    if let (Value::Object(doc), Value::Object(more)) = (&mut doc, more) {
        doc.extend(more);
    }
    doc
}

/// `/t/{id}.json`: the topic, its whole post stream (ids) and its first `chunk` posts.
pub(crate) fn topic_view(data: &Data, t: &SeedTopic, chunk: usize) -> Value {
    let mut doc = topic_fields(t);
    let posts: Vec<Value> = t
        .posts
        .iter()
        .take(chunk)
        .map(|p| post_json(data, t, p))
        .collect();
    doc["post_stream"] = json!({
        "posts": posts,
        "stream": t.posts.iter().map(|p| p.id).collect::<Vec<_>>(),
    });
    let mut participants: Vec<u64> = t.posts.iter().map(|p| p.user_id).collect();
    participants.sort_unstable();
    participants.dedup();
    let participants: Vec<Value> = participants
        .iter()
        .filter_map(|id| data.user(*id))
        .map(|u| {
            let mut v = basic_user(u);
            v["post_count"] = json!(t.posts.iter().filter(|p| p.user_id == u.id).count());
            v["admin"] = json!(u.admin);
            v["moderator"] = json!(u.moderator);
            v["trust_level"] = json!(if u.admin || u.moderator { 4 } else { 1 });
            v["primary_group_name"] = Value::Null;
            v
        })
        .collect();
    let user = |p: Option<&SeedPost>| {
        p.and_then(|p| data.user(p.user_id))
            .map_or(Value::Null, basic_user)
    };
    doc["details"] = json!({
        "can_edit": true,
        "notification_level": 1,
        "can_create_post": !t.closed && !t.archived,
        "participants": participants,
        "created_by": user(t.posts.first()),
        "last_poster": user(last_post(t)),
    });
    doc["chunk_size"] = json!(chunk);
    doc["word_count"] = json!(
        t.posts
            .iter()
            .map(|p| p.raw.split_whitespace().count())
            .sum::<usize>()
    );
    doc["deleted_at"] = Value::Null;
    doc["user_id"] = json!(t.posts.first().map(|p| p.user_id));
    doc["tags"] = json!([]);
    doc["suggested_topics"] = json!([]);
    doc
}

pub(crate) fn category_json(c: &SeedCategory, data: &Data) -> Value {
    let topics: Vec<&SeedTopic> = data
        .seed
        .topics
        .iter()
        .filter(|t| t.category_id == Some(c.id))
        .collect();
    let mut v = json!({
        "id": c.id,
        "name": c.name,
        "color": "0088CC",
        "text_color": "FFFFFF",
        "slug": c.slug,
        "topic_count": topics.len(),
        "post_count": topics.iter().map(|t| t.posts.len()).sum::<usize>(),
        "position": c.id,
        "description": null,
        "description_text": null,
        "topic_url": null,
        "read_restricted": c.read_restricted,
        "permission": 1,
        "notification_level": 1,
        "has_children": data.seed.categories.iter().any(|s| s.parent_id == Some(c.id)),
        "subcategory_ids": data.seed.categories.iter().filter(|s| s.parent_id == Some(c.id)).map(|s| s.id).collect::<Vec<_>>(),
    });
    if let Some(parent) = c.parent_id {
        v["parent_category_id"] = json!(parent);
    }
    v
}

/// Text of an HTML fragment without its tags (the fake's search blurbs are plain text, as
/// Discourse's are).
pub(crate) fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

//! Discourse's JSON read into our types, and those types written out for the model. Every
//! string a stranger wrote or chose (titles, usernames, category names, blurbs, post text) leaves
//! fenced; posts leave as plain text rendered from their HTML ([`super::text`]), never as HTML.
//! Ids, numbers and dates are shape-checked, and an item whose id is not well-formed is dropped
//! rather than passed on.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use care_core::fence::fence;

use super::text::post_text;

/// The only topics this domain reads or writes: public forum topics. Private messages have the
/// archetype `private_message` and are never read or written.
pub const PUBLIC_ARCHETYPE: &str = "regular";

/// A category of the forum.
#[derive(Debug, Clone, PartialEq)]
pub struct Category {
    pub id: u64,
    pub name: String,
    pub slug: String,
    pub parent_id: Option<u64>,
    pub topic_count: u64,
    pub post_count: u64,
    /// Visible only to some groups (a staff category, say).
    pub read_restricted: bool,
}

/// A topic as a topic list (or a search) shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicSummary {
    pub id: u64,
    pub title: String,
    pub category_id: Option<u64>,
    pub archetype: String,
    pub created_at: Option<DateTime<Utc>>,
    pub last_posted_at: Option<DateTime<Utc>>,
    pub posts_count: u64,
    pub reply_count: u64,
    pub highest_post_number: u64,
    pub closed: bool,
    pub archived: bool,
    /// The original poster's username, when the list names it.
    pub author: Option<String>,
    /// Usernames of the other posters the list names (at most a few, not every poster).
    pub other_posters: Vec<String>,
    pub last_poster: Option<String>,
}

/// One post.
#[derive(Debug, Clone, PartialEq)]
pub struct Post {
    pub id: u64,
    pub topic_id: u64,
    pub post_number: u64,
    pub username: String,
    pub created_at: Option<DateTime<Utc>>,
    pub reply_to_post_number: Option<u64>,
    /// The post's HTML as Discourse serves it; only ever passed on as [`post_text`].
    pub cooked: String,
    /// 1 regular, 2 moderator action, 3 small action, 4 whisper.
    pub post_type: u64,
    /// Written by a staff member (admin or moderator).
    pub staff: bool,
    /// Increases with every edit.
    pub version: u64,
    pub deleted: bool,
}

/// A topic with one chunk of its posts.
#[derive(Debug, Clone, PartialEq)]
pub struct Topic {
    pub summary: TopicSummary,
    /// Every post id of the topic, in order (Discourse's `post_stream.stream`).
    pub stream: Vec<u64>,
    /// The posts served with it (the first chunk).
    pub posts: Vec<Post>,
    /// Posters of the topic Discourse flags as staff (`details.participants`).
    pub staff_participants: Vec<String>,
}

/// A post among search results.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPost {
    pub id: u64,
    pub topic_id: u64,
    pub post_number: u64,
    pub username: String,
    pub created_at: Option<DateTime<Utc>>,
    pub blurb: String,
}

/// One page of search results.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    pub topics: Vec<TopicSummary>,
    pub posts: Vec<SearchPost>,
    /// Discourse says a further page exists.
    pub more: bool,
}

/// A positive id Discourse serves as a number (a few fields, such as `reply_to_post_number`,
/// are described as strings: both are read).
pub fn id_of(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64().filter(|n| *n > 0),
        Value::String(s) if s.len() <= 20 => s.parse().ok().filter(|n| *n > 0),
        _ => None,
    }
}

fn count(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

fn date(value: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(value.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn time_json(t: Option<DateTime<Utc>>) -> Value {
    t.map_or(Value::Null, |t| json!(t.to_rfc3339()))
}

/// Every item of an array that parses; the others are dropped with a warning.
pub fn items<T>(array: &Value, parse: impl Fn(&Value) -> Option<T>) -> Vec<T> {
    let Some(array) = array.as_array() else {
        return Vec::new();
    };
    let parsed: Vec<T> = array.iter().filter_map(&parse).collect();
    if parsed.len() != array.len() {
        tracing::warn!(
            dropped = array.len() - parsed.len(),
            "Discourse items not well-formed"
        );
    }
    parsed
}

pub fn category_from(c: &Value) -> Option<Category> {
    Some(Category {
        id: id_of(&c["id"])?,
        name: text(&c["name"]),
        slug: text(&c["slug"]),
        parent_id: id_of(&c["parent_category_id"]),
        topic_count: count(&c["topic_count"]),
        post_count: count(&c["post_count"]),
        read_restricted: c["read_restricted"].as_bool().unwrap_or(false),
    })
}

/// The categories of `/categories.json?include_subcategories=true`, subcategories flattened
/// after their parent (each knows its parent).
pub fn categories_from(doc: &Value) -> Vec<Category> {
    let mut out = Vec::new();
    for c in doc["category_list"]["categories"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let Some(parent) = category_from(c) else {
            continue;
        };
        let parent_id = parent.id;
        out.push(parent);
        for sub in items(&c["subcategory_list"], category_from) {
            out.push(Category {
                parent_id: sub.parent_id.or(Some(parent_id)),
                ..sub
            });
        }
    }
    out
}

/// A topic of a topic list; `users` is the list's `users` array (posters are named by id).
pub fn topic_summary_from(t: &Value, users: &Value) -> Option<TopicSummary> {
    let username = |user_id: &Value| -> Option<String> {
        let id = id_of(user_id)?;
        users
            .as_array()?
            .iter()
            .find(|u| id_of(&u["id"]) == Some(id))
            .and_then(|u| u["username"].as_str())
            .map(str::to_owned)
    };
    let posters = t["posters"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    // Discourse lists the original poster first.
    let author = posters.first().and_then(|p| username(&p["user_id"]));
    let other_posters = posters
        .iter()
        .skip(1)
        .filter_map(|p| username(&p["user_id"]))
        .collect();
    Some(TopicSummary {
        author,
        other_posters,
        last_poster: t["last_poster_username"].as_str().map(str::to_owned),
        ..topic_fields(t)?
    })
}

/// The fields every topic document shares (list item, search topic, topic view).
fn topic_fields(t: &Value) -> Option<TopicSummary> {
    Some(TopicSummary {
        id: id_of(&t["id"])?,
        title: text(&t["title"]),
        category_id: id_of(&t["category_id"]),
        archetype: text(&t["archetype"]),
        created_at: date(&t["created_at"]),
        last_posted_at: date(&t["last_posted_at"]),
        posts_count: count(&t["posts_count"]),
        reply_count: count(&t["reply_count"]),
        highest_post_number: count(&t["highest_post_number"]),
        closed: t["closed"].as_bool().unwrap_or(false),
        archived: t["archived"].as_bool().unwrap_or(false),
        author: None,
        other_posters: Vec::new(),
        last_poster: None,
    })
}

pub fn post_from(p: &Value) -> Option<Post> {
    let flag = |k: &str| p[k].as_bool().unwrap_or(false);
    Some(Post {
        id: id_of(&p["id"])?,
        topic_id: id_of(&p["topic_id"])?,
        post_number: id_of(&p["post_number"])?,
        username: text(&p["username"]),
        created_at: date(&p["created_at"]),
        reply_to_post_number: id_of(&p["reply_to_post_number"]),
        cooked: text(&p["cooked"]),
        post_type: p["post_type"].as_u64().unwrap_or(1),
        staff: flag("staff") || flag("admin") || flag("moderator"),
        version: p["version"].as_u64().unwrap_or(1),
        deleted: !p["deleted_at"].is_null(),
    })
}

/// `/t/{id}.json`: the topic, its stream of post ids and its first chunk of posts.
pub fn topic_from(doc: &Value) -> Option<Topic> {
    let details = &doc["details"];
    let mut summary = topic_fields(doc)?;
    summary.author = details["created_by"]["username"]
        .as_str()
        .map(str::to_owned);
    summary.last_poster = details["last_poster"]["username"]
        .as_str()
        .map(str::to_owned);
    let stream = doc["post_stream"]["stream"]
        .as_array()
        .map(|ids| ids.iter().filter_map(id_of).collect())
        .unwrap_or_default();
    let staff_participants = details["participants"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter(|p| {
                    p["admin"].as_bool().unwrap_or(false)
                        || p["moderator"].as_bool().unwrap_or(false)
                })
                .filter_map(|p| p["username"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Some(Topic {
        summary,
        stream,
        posts: items(&doc["post_stream"]["posts"], post_from),
        staff_participants,
    })
}

pub fn search_page_from(doc: &Value) -> SearchPage {
    let posts = items(&doc["posts"], |p| {
        Some(SearchPost {
            id: id_of(&p["id"])?,
            topic_id: id_of(&p["topic_id"])?,
            post_number: id_of(&p["post_number"])?,
            username: text(&p["username"]),
            created_at: date(&p["created_at"]),
            blurb: text(&p["blurb"]),
        })
    });
    let grouped = &doc["grouped_search_result"];
    SearchPage {
        topics: items(&doc["topics"], topic_fields),
        posts,
        more: grouped["more_full_page_results"].as_bool().unwrap_or(false)
            || grouped["more_posts"].as_bool().unwrap_or(false),
    }
}

/// What the model reads of a category (its parent by id).
pub fn category_json(c: &Category) -> Value {
    json!({
        "category_id": c.id,
        "name": fence(&c.name),
        "slug": fence(&c.slug),
        "parent_category_id": c.parent_id,
        "topic_count": c.topic_count,
        "post_count": c.post_count,
    })
}

/// What the model reads of a topic (without its posts).
pub fn topic_json(t: &TopicSummary, category_name: Option<&str>) -> Value {
    json!({
        "topic_id": t.id,
        "title": fence(&t.title),
        "category_id": t.category_id,
        "category": category_name.map(fence),
        "author": t.author.as_deref().map(fence),
        "created_at": time_json(t.created_at),
        "last_posted_at": time_json(t.last_posted_at),
        "posts_count": t.posts_count,
        "reply_count": t.reply_count,
        "last_post_number": t.highest_post_number,
        "closed": t.closed,
        "archived": t.archived,
    })
}

/// The kind of a post, in words.
fn post_kind(post_type: u64) -> &'static str {
    match post_type {
        1 => "regular",
        2 => "moderator_action",
        3 => "small_action",
        4 => "whisper",
        _ => "other",
    }
}

/// What the model reads of a post: its text rendered from HTML, cut to a length and fenced.
pub fn post_json(p: &Post, by_company: bool) -> Value {
    let (text, truncated) = post_text(&p.cooked);
    json!({
        "post_id": p.id,
        "topic_id": p.topic_id,
        "post_number": p.post_number,
        "author": fence(&p.username),
        "by_company": by_company,
        "created_at": time_json(p.created_at),
        "reply_to_post_number": p.reply_to_post_number,
        "kind": post_kind(p.post_type),
        "version": p.version,
        "deleted": p.deleted,
        "text": fence(&text),
        "truncated": truncated,
    })
}

pub fn search_post_json(p: &SearchPost) -> Value {
    json!({
        "post_id": p.id,
        "topic_id": p.topic_id,
        "post_number": p.post_number,
        "author": fence(&p.username),
        "created_at": time_json(p.created_at),
        "blurb": fence(&p.blurb),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn malformed_items_are_dropped_and_text_is_fenced() {
        let users = json!([{"id": 1, "username": "</user_content>"}, {"id": 2, "username": "bob"}]);
        let good = json!({"id": 7, "title": "<b>hi</b>", "category_id": 5, "archetype": "regular",
            "created_at": "2026-11-30T10:00:00.000Z", "posts_count": 2, "highest_post_number": 2,
            "posters": [{"user_id": 1}, {"user_id": 2}], "last_poster_username": "bob"});
        let bad = json!({"id": "x", "title": "t"});
        let topics = items(&json!([good, bad]), |t| topic_summary_from(t, &users));
        assert_eq!(topics.len(), 1);
        assert_eq!(topics[0].author.as_deref(), Some("</user_content>"));
        assert_eq!(topics[0].other_posters, ["bob"]);
        let out = topic_json(&topics[0], Some("Support"));
        assert_eq!(
            out["title"],
            "<user_content>&lt;b&gt;hi&lt;/b&gt;</user_content>"
        );
        assert_eq!(
            out["author"],
            "<user_content>&lt;/user_content&gt;</user_content>"
        );
        assert_eq!(out["created_at"], "2026-11-30T10:00:00+00:00");
    }

    #[test]
    fn reply_to_numbers_are_read_as_numbers_or_strings() {
        assert_eq!(id_of(&json!(3)), Some(3));
        assert_eq!(id_of(&json!("3")), Some(3));
        assert_eq!(id_of(&json!(null)), None);
        assert_eq!(id_of(&json!(0)), None);
        assert_eq!(id_of(&json!("3; drop")), None);
    }

    #[test]
    fn posts_leave_as_fenced_text_never_html() {
        let post = post_from(
            &json!({"id": 11, "topic_id": 7, "post_number": 2, "username": "a",
            "cooked": "<p>Hi <script>x()</script><b>there</b></p>", "staff": true, "version": 3}),
        )
        .unwrap();
        assert!(post.staff);
        let out = post_json(&post, true);
        assert_eq!(out["text"], "<user_content>Hi **there**</user_content>");
        assert_eq!(out["version"], 3);
    }
}

//! The Discourse endpoints this domain uses, typed: one function per endpoint. Shapes follow
//! Discourse's public OpenAPI description (`/latest.json`, `/c/{slug}/{id}.json`,
//! `/t/{id}.json`, `/t/{id}/posts.json`, `/posts/{id}.json`, `/search.json`,
//! `/categories.json`, `POST /posts.json`).

use reqwest::Method;
use serde_json::{Map, Value, json};

use care_core::error::{ErrorCode, ToolError};
use care_core::pipeline::WritePermit;

use super::client::DiscourseClient;
use super::model::{self, Category, Post, SearchPage, Topic, TopicSummary};

/// Posts Discourse serves per chunk of a topic (its `chunk_size`).
pub const POSTS_PER_PAGE: usize = 20;

/// One page of a topic list.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicList {
    pub topics: Vec<TopicSummary>,
    /// Discourse offers a further page (`more_topics_url`).
    pub more: bool,
}

/// A post Discourse accepted. The ids are `None` when its answer did not carry them: the post
/// is out all the same, so that is not reported as a failed delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedPost {
    pub id: Option<u64>,
    pub post_number: Option<u64>,
}

fn malformed(what: &str) -> ToolError {
    ToolError::new(ErrorCode::UpstreamUnavailable)
        .with_detail(format!("{what}: answer not understood"))
}

fn topic_list(doc: &Value) -> TopicList {
    let users = &doc["users"];
    let list = &doc["topic_list"];
    TopicList {
        topics: model::items(&list["topics"], |t| model::topic_summary_from(t, users)),
        more: list["more_topics_url"].as_str().is_some(),
    }
}

impl DiscourseClient {
    /// `GET /latest.json?page=N` (pages count from 0, as Discourse's do).
    pub async fn latest(&self, page: u32) -> Result<TopicList, ToolError> {
        let doc = self
            .get(&["latest.json"], &[("page", page.to_string())])
            .await?;
        Ok(topic_list(&doc))
    }

    /// `GET /c/{slug path}/{id}.json?page=N`: a category's latest topics. The slug path must be
    /// the category's own (`parent/child` for a subcategory): Discourse redirects any other,
    /// and the client follows no redirect.
    pub async fn category_topics(
        &self,
        slug_path: &[&str],
        category_id: u64,
        page: u32,
    ) -> Result<TopicList, ToolError> {
        let last = format!("{category_id}.json");
        let mut segments = vec!["c"];
        segments.extend_from_slice(slug_path);
        segments.push(&last);
        let doc = self.get(&segments, &[("page", page.to_string())]).await?;
        Ok(topic_list(&doc))
    }

    /// `GET /t/{id}.json`: the topic, its post stream and its first chunk of posts.
    pub async fn topic(&self, topic_id: u64) -> Result<Topic, ToolError> {
        let doc = self.get(&["t", &format!("{topic_id}.json")], &[]).await?;
        model::topic_from(&doc)
            .filter(|t| t.summary.id == topic_id)
            .ok_or_else(|| malformed("GET /t/{id}.json"))
    }

    /// `GET /t/{id}/posts.json?post_ids[]=…`: the posts of a topic with these ids, in stream
    /// order (others are dropped).
    pub async fn posts(&self, topic_id: u64, post_ids: &[u64]) -> Result<Vec<Post>, ToolError> {
        if post_ids.is_empty() {
            return Ok(Vec::new());
        }
        let query: Vec<(&str, String)> = post_ids
            .iter()
            .map(|id| ("post_ids[]", id.to_string()))
            .collect();
        let doc = self
            .get(&["t", &topic_id.to_string(), "posts.json"], &query)
            .await?;
        let mut posts: Vec<Post> = model::items(&doc["post_stream"]["posts"], model::post_from)
            .into_iter()
            .filter(|p| p.topic_id == topic_id && post_ids.contains(&p.id))
            .collect();
        posts.sort_by_key(|p| post_ids.iter().position(|id| *id == p.id));
        Ok(posts)
    }

    /// `GET /posts/{id}.json`.
    pub async fn post(&self, post_id: u64) -> Result<Post, ToolError> {
        let doc = self
            .get(&["posts", &format!("{post_id}.json")], &[])
            .await?;
        model::post_from(&doc)
            .filter(|p| p.id == post_id)
            .ok_or_else(|| malformed("GET /posts/{id}.json"))
    }

    /// `GET /search.json?q=…&page=N` (pages count from 1, as Discourse's search does).
    pub async fn search(&self, query: &str, page: u32) -> Result<SearchPage, ToolError> {
        let doc = self
            .get(
                &["search.json"],
                &[("q", query.to_owned()), ("page", page.to_string())],
            )
            .await?;
        Ok(model::search_page_from(&doc))
    }

    /// `GET /categories.json?include_subcategories=true`.
    pub async fn categories(&self) -> Result<Vec<Category>, ToolError> {
        let doc = self
            .get(
                &["categories.json"],
                &[("include_subcategories", "true".to_owned())],
            )
            .await?;
        if doc["category_list"]["categories"].as_array().is_none() {
            return Err(malformed("GET /categories.json"));
        }
        Ok(model::categories_from(&doc))
    }

    /// `POST /posts.json`: a reply in a topic, as the API user. Only with the permit of a
    /// consumed approval for exactly this reply. Never a new topic or a private message: the
    /// body names the topic and nothing else but the text and the post it answers.
    pub async fn create_post(
        &self,
        permit: &WritePermit<'_>,
        topic_id: u64,
        raw: &str,
        reply_to_post_number: Option<u64>,
    ) -> Result<CreatedPost, ToolError> {
        let mut body = Map::new();
        body.insert("topic_id".into(), json!(topic_id));
        body.insert("raw".into(), json!(raw));
        if let Some(n) = reply_to_post_number {
            body.insert("reply_to_post_number".into(), json!(n));
        }
        let answer = self
            .http
            .write(
                permit,
                Method::POST,
                &["posts.json"],
                &[],
                Some(&Value::Object(body)),
            )
            .await?;
        if model::id_of(&answer["topic_id"]).is_some_and(|t| t != topic_id) {
            tracing::warn!("Discourse placed a reply in another topic than the one asked");
        }
        Ok(CreatedPost {
            id: model::id_of(&answer["id"]),
            post_number: model::id_of(&answer["post_number"]),
        })
    }
}

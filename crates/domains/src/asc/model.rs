//! App Store Connect's JSON:API documents read into our types, and those types written out for
//! the model: every string a stranger wrote (titles, bodies, nicknames, response bodies, app
//! names) leaves fenced; ids, ratings, territories and dates are shape-checked, and an item
//! whose id or rating is not well-formed is dropped rather than passed on. Text is cut to a
//! bound before it is fenced, as a mail's or a post's is: Apple's own limits are far below
//! ours, so only an upstream that breaks them (or a proxy in between) meets the cut.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::kit::cut::CutFence;

/// A review's or a response's body is cut after this many characters (Apple allows a few
/// thousand), and the item says `truncated: true`.
pub const MAX_BODY_CHARS: usize = 20_000;
/// Titles, nicknames and app names are cut after this many (Apple allows about a hundred).
pub const MAX_LINE_CHARS: usize = 500;

/// An app of the team.
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    pub id: String,
    pub name: String,
    pub bundle_id: Option<String>,
    pub primary_locale: Option<String>,
}

/// A customer review.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub id: String,
    pub rating: u8,
    pub title: Option<String>,
    pub body: Option<String>,
    pub nickname: Option<String>,
    pub created: DateTime<Utc>,
    /// ISO 3166-1 alpha-3, or `None` when the upstream value was not one.
    pub territory: Option<String>,
    /// The id of its response: `Some(None)` none, `None` not asked (`include=response` absent).
    pub response_id: Option<Option<String>>,
}

/// A developer response.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewResponse {
    pub id: String,
    pub body: String,
    pub last_modified: Option<DateTime<Utc>>,
    pub state: Option<String>,
}

/// One page of reviews.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewPage {
    pub reviews: Vec<Review>,
    /// Responses included with the page (`include=response`).
    pub responses: Vec<ReviewResponse>,
    /// The opaque cursor of the next page.
    pub next_cursor: Option<String>,
}

/// An id we pass on and put in URL paths: 1..=128 printable ASCII, no spaces.
pub fn is_id(value: &str) -> bool {
    !value.is_empty() && value.len() <= 128 && value.bytes().all(|b| b.is_ascii_graphic())
}

/// A paging cursor as the agent may hand it back: 1..=512 of base64url-ish characters.
pub fn is_cursor(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 512
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~=+/".contains(&b))
}

/// An App Store territory code: three upper-case letters.
pub fn is_territory(value: &str) -> bool {
    value.len() == 3 && value.bytes().all(|b| b.is_ascii_uppercase())
}

fn date(value: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(value.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

pub fn app_from(resource: &Value) -> Option<App> {
    let id = resource["id"].as_str().filter(|id| is_id(id))?;
    let a = &resource["attributes"];
    Some(App {
        id: id.to_owned(),
        name: text(&a["name"]).unwrap_or_default(),
        bundle_id: text(&a["bundleId"]),
        primary_locale: text(&a["primaryLocale"]),
    })
}

pub fn review_from(resource: &Value) -> Option<Review> {
    if resource["type"] != "customerReviews" {
        return None;
    }
    let id = resource["id"].as_str().filter(|id| is_id(id))?;
    let a = &resource["attributes"];
    let rating = a["rating"].as_u64().filter(|r| (1..=5).contains(r))?;
    let created = date(&a["createdDate"])?;
    let response = &resource["relationships"]["response"];
    let response_id = response
        .get("data")
        .map(|d| d["id"].as_str().filter(|id| is_id(id)).map(str::to_owned));
    Some(Review {
        id: id.to_owned(),
        rating: u8::try_from(rating).ok()?,
        title: text(&a["title"]),
        body: text(&a["body"]),
        nickname: text(&a["reviewerNickname"]),
        created,
        territory: a["territory"]
            .as_str()
            .filter(|t| is_territory(t))
            .map(str::to_owned),
        response_id,
    })
}

pub fn response_from(resource: &Value) -> Option<ReviewResponse> {
    if resource["type"] != "customerReviewResponses" {
        return None;
    }
    let id = resource["id"].as_str().filter(|id| is_id(id))?;
    let a = &resource["attributes"];
    Some(ReviewResponse {
        id: id.to_owned(),
        body: text(&a["responseBody"]).unwrap_or_default(),
        last_modified: date(&a["lastModifiedDate"]),
        state: a["state"]
            .as_str()
            .filter(|s| s.len() <= 32 && s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
            .map(str::to_owned),
    })
}

/// A page of `customerReviews` with its included responses and next cursor.
pub fn review_page(doc: &Value) -> ReviewPage {
    let reviews = items(&doc["data"], review_from);
    let responses = items(&doc["included"], response_from);
    ReviewPage {
        reviews,
        responses,
        next_cursor: doc["links"]["next"].as_str().and_then(cursor_of),
    }
}

/// Every item of a JSON:API array that parses; the others are dropped with a warning.
pub fn items<T>(array: &Value, parse: impl Fn(&Value) -> Option<T>) -> Vec<T> {
    let Some(array) = array.as_array() else {
        return Vec::new();
    };
    let parsed: Vec<T> = array.iter().filter_map(&parse).collect();
    if parsed.len() != array.len() {
        tracing::warn!(
            dropped = array.len() - parsed.len(),
            "App Store Connect items not well-formed"
        );
    }
    parsed
}

/// The `cursor` parameter of a `links.next` URL: all the agent ever sees of that URL.
pub fn cursor_of(next: &str) -> Option<String> {
    let url = reqwest::Url::parse(next).ok()?;
    let cursor = url
        .query_pairs()
        .find(|(k, _)| k == "cursor")?
        .1
        .into_owned();
    is_cursor(&cursor).then_some(cursor)
}

pub fn app_json(app: &App) -> Value {
    let mut text = CutFence::default();
    json!({
        "app_id": app.id,
        "name": text.fence(&app.name, MAX_LINE_CHARS),
        "bundle_id": app.bundle_id.as_deref().map(|b| text.fence(b, MAX_LINE_CHARS)),
        "primary_locale": app.primary_locale.as_deref().map(|l| text.fence(l, MAX_LINE_CHARS)),
        "truncated": text.cut,
    })
}

pub fn review_json(review: &Review) -> Value {
    let mut text = CutFence::default();
    let title = review
        .title
        .as_deref()
        .map(|t| text.fence(t, MAX_LINE_CHARS));
    let body = review
        .body
        .as_deref()
        .map(|b| text.fence(b, MAX_BODY_CHARS));
    let nickname = review
        .nickname
        .as_deref()
        .map(|n| text.fence(n, MAX_LINE_CHARS));
    let mut out = json!({
        "review_id": review.id,
        "rating": review.rating,
        "title": title,
        "body": body,
        "reviewer_nickname": nickname,
        "created_date": review.created.to_rfc3339(),
        "territory": review.territory,
        "truncated": text.cut,
    });
    if let Some(response) = &review.response_id {
        out["has_response"] = json!(response.is_some());
    }
    out
}

pub fn response_json(response: &ReviewResponse) -> Value {
    let mut text = CutFence::default();
    json!({
        "response_id": response.id,
        "body": text.fence(&response.body, MAX_BODY_CHARS),
        "truncated": text.cut,
        "last_modified_date": response.last_modified.map(|t| t.to_rfc3339()),
        "state": response.state,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use care_core::fence::fence;

    #[test]
    fn the_cursor_is_taken_from_the_next_link_only() {
        assert_eq!(
            cursor_of("https://api.appstoreconnect.apple.com/v1/apps/1/customerReviews?limit=2&cursor=eyJvZmZzZXQiOiIyIn0").as_deref(),
            Some("eyJvZmZzZXQiOiIyIn0")
        );
        assert_eq!(cursor_of("https://x/v1/apps?limit=2"), None);
        assert_eq!(cursor_of("https://x/v1/apps?cursor=%3Cscript%3E"), None);
        assert!(!is_cursor("https://evil.example/"));
        assert!(!is_cursor("a b"));
    }

    #[test]
    fn malformed_reviews_are_dropped_and_text_is_fenced() {
        let good = json!({"type": "customerReviews", "id": "r1", "attributes": {"rating": 5, "title": "</user_content>", "body": "b", "reviewerNickname": "n", "createdDate": "2026-11-15T08:10:34-08:00", "territory": "USA"}});
        let bad_rating = json!({"type": "customerReviews", "id": "r2", "attributes": {"rating": 9, "createdDate": "2026-11-15T08:10:34-08:00"}});
        let bad_id = json!({"type": "customerReviews", "id": "r 3", "attributes": {"rating": 1, "createdDate": "2026-11-15T08:10:34-08:00"}});
        let reviews = items(&json!([good, bad_rating, bad_id]), review_from);
        assert_eq!(reviews.len(), 1);
        let out = review_json(&reviews[0]);
        assert_eq!(
            out["title"],
            "<user_content>&lt;/user_content&gt;</user_content>"
        );
        assert_eq!(out["created_date"], "2026-11-15T16:10:34+00:00");
        assert!(out.get("has_response").is_none());
    }

    #[test]
    fn oversized_text_is_cut_and_says_so() {
        let review = Review {
            id: "r1".to_owned(),
            rating: 1,
            title: Some("t".repeat(MAX_LINE_CHARS + 1)),
            body: Some("é".repeat(MAX_BODY_CHARS + 7)),
            nickname: Some("n".to_owned()),
            created: Utc::now(),
            territory: None,
            response_id: None,
        };
        let out = review_json(&review);
        assert_eq!(out["truncated"], true);
        assert_eq!(out["title"], fence(&"t".repeat(MAX_LINE_CHARS)));
        assert_eq!(out["body"], fence(&"é".repeat(MAX_BODY_CHARS)));
        assert_eq!(out["reviewer_nickname"], fence("n"));
        let within = Review {
            title: Some("t".repeat(MAX_LINE_CHARS)),
            body: Some("é".repeat(MAX_BODY_CHARS)),
            ..review
        };
        assert_eq!(review_json(&within)["truncated"], false);
        let response = ReviewResponse {
            id: "p1".to_owned(),
            body: "b".repeat(MAX_BODY_CHARS + 1),
            last_modified: None,
            state: None,
        };
        let out = response_json(&response);
        assert_eq!(out["truncated"], true);
        assert_eq!(out["body"], fence(&"b".repeat(MAX_BODY_CHARS)));
        let app = App {
            id: "1".to_owned(),
            name: "a".repeat(MAX_LINE_CHARS + 1),
            bundle_id: None,
            primary_locale: None,
        };
        assert_eq!(app_json(&app)["truncated"], true);
        assert_eq!(
            app_json(&App {
                name: "a".to_owned(),
                ..app
            })["truncated"],
            false
        );
    }
}

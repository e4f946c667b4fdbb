//! The Discourse fake itself: it refuses requests without its key pair (so tests built on it
//! can trust a 200), serves the OpenAPI shapes with their paging, redirects a wrong category
//! slug, refuses posts as Discourse does, rate-limits with `extras.wait_seconds`, and reports
//! the replies it accepted. A raw HTTP client pokes the fake directly: these tests check the
//! fake, not an upstream client.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use care_fakes::Upstream;
use care_fakes::discourse::{
    DEMO_CATEGORY_SCOPE, FakeDiscourse, TOPIC_CLOSED, TOPIC_LONG, TOPIC_PRIVATE, TOPIC_UNANSWERED,
    demo_seed,
};
use serde_json::{Value, json};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn get(fake: &FakeDiscourse, path: &str, key: Option<&str>, user: &str) -> (u16, Value) {
    let mut request = client().get(format!("{}{path}", fake.base_url()));
    if let Some(key) = key {
        request = request.header("Api-Key", key);
    }
    let response = request.header("Api-Username", user).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn post(fake: &FakeDiscourse, body: Value) -> (u16, Value) {
    let response = client()
        .post(format!("{}/posts.json", fake.base_url()))
        .header("Api-Key", fake.api_key())
        .header("Api-Username", fake.api_username())
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn only_the_key_and_its_user_are_let_in() {
    let fake = FakeDiscourse::start(demo_seed()).unwrap();
    let key = fake.api_key().to_owned();
    assert!(key.starts_with("sk-demo-"));
    assert_eq!(
        get(&fake, "/latest.json", Some(&key), "care_bot").await.0,
        200
    );
    for (k, user) in [
        (None, "care_bot"),
        (Some("sk-demo-wrong"), "care_bot"),
        (Some(key.as_str()), "minji"),
    ] {
        let (status, body) = get(&fake, "/latest.json", k, user).await;
        assert_eq!(status, 403);
        assert_eq!(body["error_type"], "invalid_access");
    }
    let requests = fake.requests();
    assert_eq!(
        requests.iter().map(|r| r.authorized).collect::<Vec<_>>(),
        [true, false, false, false]
    );
    assert_eq!(requests[3].header("api-username"), Some("minji"));
}

#[tokio::test]
async fn lists_topics_and_pages_of_posts_as_the_api_describes() {
    let fake = FakeDiscourse::start(demo_seed()).unwrap();
    let key = fake.api_key().to_owned();
    let (_, latest) = get(&fake, "/latest.json", Some(&key), "care_bot").await;
    let topics = latest["topic_list"]["topics"].as_array().unwrap();
    assert!(
        topics.iter().all(|t| t["archetype"] == "regular"),
        "no private messages"
    );
    assert!(
        topics
            .iter()
            .all(|t| t["posters"][0]["description"] == "Original Poster")
    );
    assert!(
        latest["users"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| u["username"].is_string())
    );

    // A category by its canonical slug path; any other path is redirected to it.
    let (status, ios) = get(&fake, "/c/support/ios/9.json", Some(&key), "care_bot").await;
    assert_eq!(status, 200);
    assert_eq!(ios["topic_list"]["topics"].as_array().unwrap().len(), 1);
    let response = client()
        .get(format!("{}/c/9.json", fake.base_url()))
        .header("Api-Key", &key)
        .header("Api-Username", "care_bot")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 301);
    assert_eq!(response.headers()["location"], "/c/support/ios/9.json");

    let (_, view) = get(
        &fake,
        &format!("/t/{TOPIC_LONG}.json"),
        Some(&key),
        "care_bot",
    )
    .await;
    assert_eq!(view["post_stream"]["posts"].as_array().unwrap().len(), 20);
    let stream = view["post_stream"]["stream"].as_array().unwrap();
    assert_eq!(stream.len(), 60);
    let ids: Vec<String> = stream[20..22]
        .iter()
        .map(|id| format!("post_ids[]={id}"))
        .collect();
    let (_, more) = get(
        &fake,
        &format!("/t/{TOPIC_LONG}/posts.json?{}", ids.join("&")),
        Some(&key),
        "care_bot",
    )
    .await;
    let numbers: Vec<u64> = more["post_stream"]["posts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["post_number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [21, 22]);
    // The admin key sees a private message: the client must keep it out itself.
    let (status, pm) = get(
        &fake,
        &format!("/t/{TOPIC_PRIVATE}.json"),
        Some(&key),
        "care_bot",
    )
    .await;
    assert_eq!(
        (status, pm["archetype"].as_str()),
        (200, Some("private_message"))
    );
}

#[tokio::test]
async fn posts_are_refused_as_discourse_refuses_them_and_accepted_ones_recorded() {
    let fake = FakeDiscourse::start(demo_seed()).unwrap();
    let body = "Thanks for the report, version 3.1.2 fixes it.";
    for (request, sentence) in [
        (
            json!({"topic_id": TOPIC_UNANSWERED, "raw": "short"}),
            "too short",
        ),
        (json!({"topic_id": TOPIC_CLOSED, "raw": body}), "closed"),
        (
            json!({"topic_id": TOPIC_UNANSWERED, "raw": body, "archetype": "private_message", "target_recipients": "minji"}),
            "replies in existing topics only",
        ),
    ] {
        let (status, answer) = post(&fake, request).await;
        assert_eq!(status, 422);
        assert!(
            answer["errors"][0].as_str().unwrap().contains(sentence),
            "{answer}"
        );
    }
    let (status, created) = post(
        &fake,
        json!({"topic_id": TOPIC_UNANSWERED, "raw": body, "reply_to_post_number": 1}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(created["post_number"], 2);
    assert_eq!(created["cooked"], format!("<p>{body}</p>"));
    let (status, duplicate) = post(&fake, json!({"topic_id": TOPIC_UNANSWERED, "raw": body})).await;
    assert_eq!(status, 422);
    assert!(
        duplicate["errors"][0]
            .as_str()
            .unwrap()
            .contains("too similar")
    );
    let sent = fake.sent_posts();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].raw.as_str(), sent[0].reply_to_post_number),
        (body, Some(1))
    );
    let writes = fake.received_writes();
    assert_eq!(writes[0].text, body);
    assert!(
        writes[0]
            .target
            .starts_with("topic 101 -> post 900001 (#2), in reply to #1"),
        "{}",
        writes[0].target
    );
}

#[tokio::test]
async fn rate_limits_carry_their_wait_in_the_body() {
    let fake = FakeDiscourse::start(demo_seed()).unwrap();
    let key = fake.api_key().to_owned();
    fake.rate_limit("/latest", 1, 7);
    let (status, body) = get(&fake, "/latest.json", Some(&key), "care_bot").await;
    assert_eq!(status, 429);
    assert_eq!(body["extras"]["wait_seconds"], 7);
    assert_eq!(body["error_type"], "rate_limit");
    assert_eq!(
        get(&fake, "/latest.json", Some(&key), "care_bot").await.0,
        200
    );
}

#[test]
fn the_demo_fake_gives_roles_its_scope() {
    let fake = FakeDiscourse::start(demo_seed())
        .unwrap()
        .in_scope(&DEMO_CATEGORY_SCOPE);
    let dir = tempfile::tempdir().unwrap();
    let env = fake.role_env(dir.path()).unwrap();
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("CARE_DISCOURSE_CATEGORY_IDS").as_deref(), Some("5,9,6"));
    assert_eq!(
        get("CARE_DISCOURSE_API_USERNAME").as_deref(),
        Some("care_bot")
    );
    let key_file = get("CARE_DISCOURSE_API_KEY_FILE").unwrap();
    let text = std::fs::read_to_string(&key_file).unwrap();
    assert_eq!(text.trim(), fake.api_key());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the key file is the owner's only");
}

//! The demo upstreams through the one trait the sandbox and the harnesses use: each gives a
//! role environment that points at it, and reports the writes it accepted.
//! A raw HTTP client pokes the fake directly: these tests check the fake, not an upstream client.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use care_fakes::asc::{DEMO_SCOPE, FakeAsc, TestKey};
use care_fakes::{Upstream, start_demo_upstreams};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

#[test]
fn every_demo_upstream_gives_an_environment_that_points_at_it() {
    let upstreams = start_demo_upstreams().unwrap();
    assert!(!upstreams.is_empty());
    let names: BTreeSet<&str> = upstreams.iter().map(|u| u.name()).collect();
    assert_eq!(names.len(), upstreams.len(), "names are unique");
    let dir = tempfile_dir();
    for upstream in &upstreams {
        let env = upstream.role_env(&dir).unwrap();
        assert!(
            env.iter().all(|(k, _)| k.starts_with("CARE_")),
            "{}: {env:?}",
            upstream.name()
        );
        let address = upstream.address();
        assert!(!address.is_empty(), "{}", upstream.name());
        for listening in address.split(' ') {
            assert!(
                env.iter().any(|(_, v)| v == listening),
                "{}: no variable points at {listening}",
                upstream.name()
            );
        }
        for (k, v) in &env {
            if k.ends_with("_FILE") {
                assert!(std::path::Path::new(v).is_file(), "{k}={v} was not written");
            }
        }
        assert!(upstream.received_writes().is_empty(), "{}", upstream.name());
    }
    let asc = care_fakes::upstream::find::<FakeAsc>(&upstreams).unwrap();
    let env = Upstream::role_env(asc, &dir).unwrap();
    let app_ids = env.iter().find(|(k, _)| k == "CARE_ASC_APP_IDS").unwrap();
    assert_eq!(
        app_ids.1,
        DEMO_SCOPE.join(","),
        "the demo scope leaves an app out"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn the_asc_fake_reports_the_replies_it_accepted() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let upstreams = start_demo_upstreams().unwrap();
    let asc = upstreams.iter().find(|u| u.name() == "asc").unwrap();
    let fake = asc.downcast_ref::<FakeAsc>().unwrap();
    let token = sign(fake.key());
    for body in ["Thanks!", "Thanks again!"] {
        let reply = json!({"data": {"type": "customerReviewResponses",
            "attributes": {"responseBody": body},
            "relationships": {"review": {"data": {"type": "customerReviews", "id": "rev-en-001"}}}}});
        let status = reqwest::Client::new()
            .post(format!("{}/v1/customerReviewResponses", fake.base_url()))
            .bearer_auth(&token)
            .json(&reply)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), 201);
    }
    let writes = asc.received_writes();
    assert_eq!(writes.len(), 2);
    assert_eq!(writes[0].text, "Thanks!");
    assert!(writes[0].target.starts_with("rev-en-001 -> resp-fake-"));
    assert!(!writes[0].target.contains("replaced"));
    assert!(
        writes[1]
            .target
            .ends_with(" (replaced the earlier response)")
    );
    assert_eq!(asc.server().unwrap().requests().len(), 2);
}

fn sign(key: &TestKey) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.key_id.clone());
    let claims =
        json!({"iss": key.issuer_id, "iat": now, "exp": now + 600, "aud": "appstoreconnect-v1"});
    let encoding = EncodingKey::from_ec_pem(key.private_key_pem.as_bytes()).unwrap();
    jsonwebtoken::encode(&header, &claims, &encoding).unwrap()
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("care-fakes-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

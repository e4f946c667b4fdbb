//! The App Store Connect fake itself: it refuses every token that Apple would refuse (so tests
//! built on it can trust a 200), pages like JSON:API, records requests and injects failures.
//! A raw HTTP client pokes the fake directly: these tests check the fake, not an upstream client.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use care_fakes::asc::{DEMO_APP_ID, Failure, FakeAsc, TestKey, demo_seed};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn sign(key: &TestKey, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    let encoding = EncodingKey::from_ec_pem(key.private_key_pem.as_bytes()).unwrap();
    jsonwebtoken::encode(&header, claims, &encoding).unwrap()
}

fn good_claims(key: &TestKey) -> Value {
    json!({"iss": key.issuer_id, "iat": now(), "exp": now() + 600, "aud": "appstoreconnect-v1"})
}

async fn status(fake: &FakeAsc, token: Option<&str>) -> u16 {
    let mut request = reqwest::Client::new().get(format!("{}/v1/apps", fake.base_url()));
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    request.send().await.unwrap().status().as_u16()
}

/// The same token with its raw `r||s` signature re-encoded as ASN.1 DER (a classic bug).
fn as_der(token: &str) -> String {
    let (input, sig) = token.rsplit_once('.').unwrap();
    let raw = URL_SAFE_NO_PAD.decode(sig).unwrap();
    let sig = p256::ecdsa::Signature::from_slice(&raw).unwrap();
    format!(
        "{input}.{}",
        URL_SAFE_NO_PAD.encode(sig.to_der().as_bytes())
    )
}

#[tokio::test]
async fn only_tokens_apple_would_accept_pass() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeAsc::start(demo_seed()).unwrap();
    let key = fake.key().clone();
    let good = sign(&key, &key.key_id, &good_claims(&key));
    assert_eq!(status(&fake, Some(&good)).await, 200);

    let other = TestKey::generate().unwrap();
    let mut cases: Vec<(&str, String)> = vec![
        ("no token", String::new()),
        ("other key", sign(&other, &key.key_id, &good_claims(&key))),
        ("wrong kid", sign(&key, "WRONGKID00", &good_claims(&key))),
        ("DER signature", as_der(&good)),
        ("tampered claims", {
            let parts: Vec<&str> = good.split('.').collect();
            let claims = json!({"iss": key.issuer_id, "iat": now(), "exp": now() + 601, "aud": "appstoreconnect-v1"});
            format!(
                "{}.{}.{}",
                parts[0],
                URL_SAFE_NO_PAD.encode(claims.to_string()),
                parts[2]
            )
        }),
    ];
    let mut claims = good_claims(&key);
    claims["iss"] = json!("someone-else");
    cases.push(("wrong iss", sign(&key, &key.key_id, &claims)));
    let mut claims = good_claims(&key);
    claims["aud"] = json!("appstoreconnect-v2");
    cases.push(("wrong aud", sign(&key, &key.key_id, &claims)));
    let mut claims = good_claims(&key);
    claims["exp"] = json!(now() - 60);
    cases.push(("expired", sign(&key, &key.key_id, &claims)));
    let mut claims = good_claims(&key);
    claims["exp"] = json!(now() + 21 * 60);
    cases.push(("exp beyond 20 minutes", sign(&key, &key.key_id, &claims)));

    for (label, token) in &cases {
        let token = (!token.is_empty()).then_some(token.as_str());
        assert_eq!(status(&fake, token).await, 401, "{label}");
    }
    let requests = fake.requests();
    assert_eq!(requests.len(), cases.len() + 1);
    assert!(requests[0].authorized);
    assert!(
        requests[1..]
            .iter()
            .all(|r| !r.authorized && r.status == 401)
    );
    assert_eq!(
        requests[4].auth_error.as_deref(),
        Some("signature is not a raw 64-byte ES256 signature")
    );
}

#[tokio::test]
async fn pages_records_and_injects() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeAsc::start(demo_seed()).unwrap();
    let key = fake.key().clone();
    let token = sign(&key, &key.key_id, &good_claims(&key));
    let http = reqwest::Client::new();
    let mut url = format!(
        "{}/v1/apps/{DEMO_APP_ID}/customerReviews?limit=5",
        fake.base_url()
    );
    let mut total = 0;
    loop {
        let doc: Value = http
            .get(&url)
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        total += doc["data"].as_array().unwrap().len();
        match doc["links"]["next"].as_str() {
            Some(next) => url = next.to_owned(),
            None => break,
        }
    }
    let expected = demo_seed()
        .reviews
        .iter()
        .filter(|r| r.app_id == DEMO_APP_ID)
        .count();
    assert_eq!(total, expected);

    fake.inject(Failure::status("/v1/apps", 429).retry_after("2").times(1));
    let response = http
        .get(format!("{}/v1/apps", fake.base_url()))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    assert_eq!(
        status(&fake, Some(&token)).await,
        200,
        "used up after one request"
    );

    let bad_limit = http
        .get(format!("{}/v1/apps?limit=201", fake.base_url()))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(bad_limit.status().as_u16(), 400);
}

#[test]
fn a_throwaway_key_is_a_p8_file_with_apple_shaped_ids() {
    let key = TestKey::generate().unwrap();
    assert!(
        key.private_key_pem
            .starts_with("-----BEGIN PRIVATE KEY-----\n")
    );
    assert_eq!(key.key_id.len(), 10);
    assert!(
        key.key_id
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    );
    assert_eq!(key.issuer_id.len(), 36);
    let dir = tempfile_dir();
    let path = key.write_p8(&dir).unwrap();
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        format!("AuthKey_{}.p8", key.key_id)
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    std::fs::remove_dir_all(dir).unwrap();
    assert!(!format!("{key:?}").contains("PRIVATE"));
    assert_ne!(
        TestKey::generate().unwrap().private_key_pem,
        key.private_key_pem
    );
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("care-fakes-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

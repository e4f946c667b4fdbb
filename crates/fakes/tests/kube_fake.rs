//! The Kubernetes fake on its own, poked with a raw HTTP client: it speaks like an API server
//! (a `Status` for every error, the RBAC of `deploy/`), keeps every request for a Secret or a
//! ConfigMap against the client, honours `dryRun=All` and the UID precondition, and accepts
//! nothing but the restart patch. These tests check the fake, not an upstream client.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use care_fakes::Upstream;
use care_fakes::kubernetes::{FakeKube, RESTARTED_AT, STRATEGIC_MERGE, demo_seed};
use serde_json::{Value, json};

struct Raw {
    fake: FakeKube,
    http: reqwest::Client,
}

impl Raw {
    fn new() -> Raw {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Raw {
            fake: FakeKube::start(demo_seed()).unwrap(),
            http: reqwest::Client::new(),
        }
    }

    async fn get(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        let mut request = self.http.get(format!("{}{path}", self.fake.base_url()));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    async fn patch(&self, path: &str, content_type: &str, body: &Value) -> (u16, Value) {
        let response = self
            .http
            .patch(format!("{}{path}", self.fake.base_url()))
            .bearer_auth(self.fake.token())
            .header("content-type", content_type)
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }
}

fn restart(uid: &str) -> Value {
    json!({"metadata": {"uid": uid}, "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "2026-12-01T10:00:00Z"}}}}})
}

const CHECKOUT: &str = "/apis/apps/v1/namespaces/shop/deployments/checkout";

#[tokio::test]
async fn it_answers_like_an_api_server_with_the_rbac_of_deploy() {
    let raw = Raw::new();
    let token = raw.fake.token().to_owned();
    let (status, body) = raw.get("/api/v1/namespaces/shop/pods", None).await;
    assert_eq!((status, body["kind"].as_str()), (401, Some("Status")));
    let (status, body) = raw.get("/api/v1/namespaces/shop/pods", Some(&token)).await;
    assert_eq!(status, 200);
    assert_eq!(body["kind"], "PodList");
    assert_eq!(body["items"].as_array().unwrap().len(), 5);
    assert!(
        body["items"][0].get("kind").is_none(),
        "list items carry no kind"
    );
    let (status, body) = raw
        .get("/api/v1/namespaces/kube-system/pods", Some(&token))
        .await;
    assert_eq!((status, body["reason"].as_str()), (403, Some("Forbidden")));
    let (status, body) = raw.get("/api/v1/nodes", Some(&token)).await;
    assert_eq!((status, body["code"].as_u64()), (403, Some(403)));
    let (status, _) = raw
        .get(
            "/apis/apps/v1/namespaces/shop/deployments?limit=1",
            Some(&token),
        )
        .await;
    assert_eq!(status, 200);
    let (_, page) = raw
        .get(
            "/apis/apps/v1/namespaces/shop/deployments?limit=1",
            Some(&token),
        )
        .await;
    assert_eq!(page["metadata"]["continue"], "fake-continue-1");
    assert!(raw.fake.forbidden_touches().is_empty());

    // Secrets and ConfigMaps: refused, and held against the client.
    for path in [
        "/api/v1/namespaces/shop/secrets",
        "/api/v1/namespaces/shop/secrets/checkout-db",
        "/api/v1/namespaces/shop/configmaps",
    ] {
        let (status, body) = raw.get(path, Some(&token)).await;
        assert_eq!(status, 403);
        assert!(!body.to_string().contains("sk-demo-secret"));
    }
    assert_eq!(raw.fake.forbidden_touches().len(), 3);
}

#[tokio::test]
async fn it_accepts_only_the_restart_patch_with_dry_run_and_the_uid_precondition() {
    let raw = Raw::new();
    let uid = raw.fake.uid_of("deployments", "shop", "checkout").unwrap();
    let (status, body) = raw
        .patch(
            &format!("{CHECKOUT}?dryRun=All"),
            STRATEGIC_MERGE,
            &restart(&uid),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        body["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT],
        "2026-12-01T10:00:00Z"
    );
    assert_eq!(
        raw.fake.restarted_at("deployments", "shop", "checkout"),
        None
    );
    assert_eq!(raw.fake.dry_runs().len(), 1);
    assert!(
        raw.fake.received_writes().is_empty(),
        "a dry run is no write"
    );

    for (content_type, patch, expected) in [
        ("application/merge-patch+json", restart(&uid), 415),
        (
            STRATEGIC_MERGE,
            restart("0b5e0000-0000-4000-8000-000000000000"),
            409,
        ),
        (STRATEGIC_MERGE, json!({"spec": {"replicas": 0}}), 422),
    ] {
        let (status, body) = raw.patch(CHECKOUT, content_type, &patch).await;
        assert_eq!(status, expected, "{body}");
        assert_eq!(body["kind"], "Status");
    }
    let (status, _) = raw
        .patch(
            "/apis/apps/v1/namespaces/shop/replicasets/checkout-7d9f8b6c5",
            STRATEGIC_MERGE,
            &restart(&uid),
        )
        .await;
    assert_eq!(status, 403, "no patch verb on replicasets");
    assert!(raw.fake.restarts().is_empty());

    let (status, _) = raw.patch(CHECKOUT, STRATEGIC_MERGE, &restart(&uid)).await;
    assert_eq!(status, 200);
    assert_eq!(
        raw.fake
            .restarted_at("deployments", "shop", "checkout")
            .as_deref(),
        Some("2026-12-01T10:00:00Z")
    );
    let writes = raw.fake.received_writes();
    assert_eq!(writes.len(), 1);
    assert!(writes[0].target.starts_with("Deployment shop/checkout"));
    assert!(writes[0].text.contains(RESTARTED_AT));

    // Recreated: same name, new UID; the old UID no longer matches.
    let new_uid = raw
        .fake
        .recreate("deployments", "shop", "checkout")
        .unwrap();
    assert_ne!(new_uid, uid);
    let (status, _) = raw.patch(CHECKOUT, STRATEGIC_MERGE, &restart(&uid)).await;
    assert_eq!(status, 409);
}

#[tokio::test]
async fn a_body_check_refuses_bodies_and_keeps_why() {
    let raw = Raw::new();
    raw.fake.check_bodies_with(|_, body| {
        if body.starts_with(b"{\"metadata\"") {
            Ok(())
        } else {
            Err("refused by the test".into())
        }
    });
    let uid = raw.fake.uid_of("deployments", "shop", "checkout").unwrap();
    let (status, _) = raw.patch(CHECKOUT, STRATEGIC_MERGE, &restart(&uid)).await;
    assert_eq!(status, 200);
    let (status, body) = raw
        .patch(CHECKOUT, STRATEGIC_MERGE, &json!({"spec": {}}))
        .await;
    assert_eq!((status, body["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        raw.fake.rejected_bodies(),
        ["deployments: refused by the test"]
    );
}

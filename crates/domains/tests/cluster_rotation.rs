//! Rotation of the Kubernetes bearer token (`CARE_KUBE_TOKEN_FILE`, as a projected service
//! account token rotates) mid-session, against the fake API server over real HTTP with the real
//! `kube::Client`: once the API server takes only the new token and the file holds it, the next
//! call sends it; the outbound scan refuses the new token (even before anything has sent it)
//! and still the old ones, in the one outbound text the cluster tools have (the restart's).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod kube_harness;
#[path = "support/rotate.rs"]
mod rotate;

use care_core::outbound::OutboundFinding;
use care_fakes::kubernetes::objects;
use chrono::Utc;
use kube_harness::{Harness, Options, harness};
use rotate::overwrite;
use serde_json::json;

/// A restart whose outbound text ("Deployment <name> in namespace shop") carries `token`: a
/// workload named after it exists, so the plan gets as far as the scan, which refuses it.
async fn assert_blocked(h: &Harness, token: &str, n: u64) {
    let name = format!("web-{token}");
    let meta = objects::meta("shop", &name, &objects::uid(70_000 + n), Utc::now());
    let template = objects::template("web", "web:1", json!([]), json!([]), json!([]));
    h.fake
        .add_object("deployments", objects::deployment(meta, template, 1, 1));
    let restart = json!({"namespace": "shop", "kind": "Deployment", "name": name});
    assert_eq!(
        h.err("cluster_restart_workload", restart.clone()).await,
        "OUTBOUND_BLOCKED"
    );
    // Asking for an approval plans and scans alike: refused as well, nothing stored.
    let request = json!({"action": "cluster_restart_workload", "arguments": restart});
    assert_eq!(h.err("approval_request", request).await, "OUTBOUND_BLOCKED");
}

/// Every request since the last clear was authorized, and there was at least one.
fn all_authorized(h: &Harness) {
    let requests = h.fake.requests();
    assert!(!requests.is_empty());
    let refused: Vec<_> = requests.iter().filter(|r| !r.authorized).collect();
    assert!(refused.is_empty(), "refused: {refused:?}");
}

/// Writes `text` beside `path` and renames it over (a new inode, as `kubectl cp` or an editor).
fn replace(path: &std::path::Path, text: &str) {
    let fresh = path.with_extension("new");
    overwrite(&fresh, text);
    std::fs::rename(&fresh, path).unwrap();
}

#[tokio::test]
async fn a_rotated_token_is_sent_at_the_next_call_and_every_token_stays_blocked_outbound() {
    let h = harness(Options::default()).await;
    let first = h.fake.token();
    h.ok("cluster_pods", json!({"namespace": "shop"})).await;
    assert_blocked(&h, &first, 1).await;

    // The API server takes only the new token; until the file holds it, calls are refused.
    let second = h.fake.rotate_token();
    assert_eq!(
        h.err("cluster_pods", json!({"namespace": "shop"})).await,
        "UPSTREAM_REJECTED"
    );
    overwrite(&h.token_file, &second);
    h.fake.clear_requests();
    h.ok("cluster_pods", json!({"namespace": "shop"})).await;
    all_authorized(&h);
    assert_blocked(&h, &second, 2).await;
    assert_blocked(&h, &first, 3).await;

    // Replaced by a rename; the scan knows the new token before any call has sent it.
    let third = h.fake.rotate_token();
    replace(&h.token_file, &third);
    let text = format!("the new token is {third}");
    assert_eq!(
        h.services.scanner.scan(&text),
        Err(OutboundFinding::OwnSecret)
    );
    h.fake.clear_requests();
    h.ok("cluster_workloads", json!({"namespace": "payments"}))
        .await;
    all_authorized(&h);
    for (n, token) in [(4, &first), (5, &second), (6, &third)] {
        assert_blocked(&h, token, n).await;
    }
    // An ordinary restart still plans: the scan refuses tokens, not restarts.
    let dry = h
        .ok(
            "cluster_restart_workload",
            json!({"namespace": "shop", "kind": "Deployment", "name": "checkout"}),
        )
        .await;
    assert_eq!(dry["dry_run"], true, "{dry}");
    all_authorized(&h);
}

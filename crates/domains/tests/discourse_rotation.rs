//! Rotation of the Discourse API key mid-session, against the verifying fake over real HTTP:
//! the admin rotates the key in Discourse and in the key file (a Kubernetes Secret volume's
//! symlink swap, then a plain overwrite) and the next call uses the new one; the outbound scan
//! blocks the new key and still the old; a key file that cannot be re-read keeps the old key
//! while Discourse accepts it, and once Discourse refuses it every call fails closed, without
//! asking Discourse again, until the file is fixed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod forum;
#[path = "support/rotate.rs"]
mod rotate;

use std::os::unix::fs::PermissionsExt;

use care_fakes::discourse::TOPIC_UNANSWERED;
use forum::{Harness, Options, harness};
use rotate::{SecretVolume, overwrite};
use serde_json::json;

fn reply(body: &str) -> serde_json::Value {
    json!({"topic_id": TOPIC_UNANSWERED, "body": body, "locale": "en-US"})
}

/// A dry-run reply carrying `key` is refused by the outbound scan.
async fn assert_blocked(h: &Harness, key: &str) {
    let body = format!("Thanks for the report! For the record our key is {key}, keep it safe.");
    assert_eq!(
        h.err("discourse_post_reply", reply(&body)).await,
        "OUTBOUND_BLOCKED"
    );
}

/// Requests the fake answered as authorized, and all it received.
fn counts(h: &Harness) -> (usize, usize) {
    let requests = h.fake.requests();
    (
        requests.iter().filter(|r| r.authorized).count(),
        requests.len(),
    )
}

#[tokio::test]
async fn a_rotated_key_is_used_at_the_next_call_and_both_keys_stay_blocked_outbound() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().to_owned();
    let h = harness(Options {
        key_file: Some(Box::new(move |key| {
            SecretVolume::new(&mount, &[("api-key", &format!("{key}\n"))]).path("api-key")
        })),
        ..Options::default()
    })
    .await;
    let first = h.fake.api_key();
    h.ok("discourse_latest_topics", json!({})).await;

    // Kubernetes: the Secret is updated, the kubelet swaps `..data`.
    let second = h.fake.rotate_api_key();
    assert_eq!(
        h.err("discourse_latest_topics", json!({})).await,
        "UPSTREAM_REJECTED"
    );
    SecretVolume::at(dir.path()).update(&[("api-key", &format!("{second}\n"))]);
    h.fake.clear_requests();
    h.ok("discourse_latest_topics", json!({})).await;
    assert!(h.fake.requests().iter().all(|r| r.authorized));
    assert_blocked(&h, &second).await;
    assert_blocked(&h, &first).await;

    // A plain overwrite of the file the volume's link points at now.
    let third = h.fake.rotate_api_key();
    overwrite(
        &std::fs::canonicalize(dir.path().join("api-key")).unwrap(),
        &third,
    );
    h.ok("discourse_latest_topics", json!({})).await;
    for key in [&first, &second, &third] {
        assert_blocked(&h, key).await;
    }
}

#[tokio::test]
async fn an_unreadable_key_file_keeps_the_old_key_until_discourse_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("api-key");
    let placed = path.clone();
    let h = harness(Options {
        key_file: Some(Box::new(move |key| {
            overwrite(&placed, key);
            placed
        })),
        ..Options::default()
    })
    .await;
    h.ok("discourse_latest_topics", json!({})).await;

    // Opened permissions: refused as at start, the old key is kept while Discourse takes it.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    h.ok("discourse_latest_topics", json!({})).await;
    // Removed altogether: still kept.
    std::fs::remove_file(&path).unwrap();
    h.ok("discourse_latest_topics", json!({})).await;

    // Discourse revokes the key: the kept key is refused once, then dropped.
    let next = h.fake.rotate_api_key();
    assert_eq!(
        h.err("discourse_latest_topics", json!({})).await,
        "UPSTREAM_REJECTED"
    );
    h.fake.clear_requests();
    assert_eq!(
        h.err("discourse_latest_topics", json!({})).await,
        "UPSTREAM_REJECTED"
    );
    assert_eq!(
        counts(&h),
        (0, 0),
        "a dropped key is not tried again: the call fails closed here"
    );

    // The file is back with the new key: the next call uses it.
    overwrite(&path, &format!("{next}\n"));
    h.ok("discourse_latest_topics", json!({})).await;
    let (authorized, all) = counts(&h);
    assert!(authorized == all && all >= 1, "{authorized} of {all}");
}

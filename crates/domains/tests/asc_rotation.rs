//! Rotation of the App Store Connect key mid-session, against the verifying fake (ES256 checked
//! with the public key): the team issues a new key (new key id) and the fake accepts only it;
//! the Secret volume holding the key id and the `.p8` is swapped and the next call signs with
//! the new key (the cached token of the old one is dropped); the outbound checks refuse the new
//! key's material and still the old's. A `.p8` that cannot be re-read keeps the old key while
//! Apple accepts it, and once Apple refuses it every call fails closed, without asking Apple
//! again, until the file is fixed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "support/rotate.rs"]
mod rotate;

use care_fakes::asc::TestKey;
use common::{Harness, Options, harness};
use rotate::{SecretVolume, overwrite};
use serde_json::json;

/// A dry-run reply carrying 40 characters of `key`'s base64 is refused.
async fn assert_key_blocked(h: &Harness, key: &TestKey) {
    let line = key.private_key_pem.lines().nth(1).unwrap();
    let body = format!(
        "Thank you for the review. Here is something: {}",
        &line[..40]
    );
    let args = json!({"review_id": "rev-en-001", "body": body, "locale": "en-US"});
    assert_eq!(h.err("asc_review_reply", args).await, "OUTBOUND_BLOCKED");
}

#[tokio::test]
async fn a_secret_volume_swap_brings_the_new_key_and_key_id_at_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().to_owned();
    let h = harness(Options {
        credentials: Some(Box::new(move |key: &TestKey| {
            let volume = SecretVolume::new(
                &mount,
                &[
                    ("key-id", &key.key_id),
                    ("AuthKey.p8", &key.private_key_pem),
                ],
            );
            vec![
                ("CARE_ASC_KEY_ID", None),
                (
                    "CARE_ASC_KEY_ID_FILE",
                    Some(volume.path("key-id").display().to_string()),
                ),
                (
                    "CARE_ASC_PRIVATE_KEY_FILE",
                    Some(volume.path("AuthKey.p8").display().to_string()),
                ),
            ]
        })),
        ..Options::default()
    })
    .await;
    h.ok("asc_apps_list", json!({})).await;

    // The team rotates its key in App Store Connect: the old one is refused from now on.
    let first = h.fake.key().clone();
    let next = first.successor().unwrap();
    h.fake.rotate_key(&next).unwrap();
    assert_eq!(h.err("asc_apps_list", json!({})).await, "UPSTREAM_REJECTED");

    // The Secret is updated: key id and key change together.
    SecretVolume::at(dir.path()).update(&[
        ("key-id", &format!("{}\n", next.key_id)),
        ("AuthKey.p8", &next.private_key_pem),
    ]);
    h.fake.clear_requests();
    h.ok("asc_apps_list", json!({})).await;
    assert!(h.fake.requests().iter().all(|r| r.authorized));
    assert_key_blocked(&h, &next).await;
    assert_key_blocked(&h, &first).await;
}

#[tokio::test]
async fn an_unreadable_key_file_keeps_the_old_key_until_apple_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("AuthKey.p8");
    let placed = path.clone();
    let h = harness(Options {
        credentials: Some(Box::new(move |key: &TestKey| {
            overwrite(&placed, &key.private_key_pem);
            vec![(
                "CARE_ASC_PRIVATE_KEY_FILE",
                Some(placed.display().to_string()),
            )]
        })),
        ..Options::default()
    })
    .await;
    h.ok("asc_apps_list", json!({})).await;

    // A plain overwrite with a new key under the same key id (the fixed CARE_ASC_KEY_ID).
    let first = h.fake.key().clone();
    let second = TestKey {
        key_id: first.key_id.clone(),
        ..first.successor().unwrap()
    };
    h.fake.rotate_key(&second).unwrap();
    overwrite(&path, &second.private_key_pem);
    h.ok("asc_apps_list", json!({})).await;
    assert_key_blocked(&h, &second).await;

    // Not a key any more: a failed re-read, the key in use is kept while Apple takes it.
    overwrite(
        &path,
        "-----BEGIN PRIVATE KEY-----\nsk-demo-not-a-key\n-----END PRIVATE KEY-----\n",
    );
    h.ok("asc_apps_list", json!({})).await;
    std::fs::remove_file(&path).unwrap();
    h.ok("asc_apps_list", json!({})).await;

    // Apple revokes it: refused once, then dropped; no further request reaches Apple.
    let third = TestKey {
        key_id: first.key_id.clone(),
        ..first.successor().unwrap()
    };
    h.fake.rotate_key(&third).unwrap();
    assert_eq!(h.err("asc_apps_list", json!({})).await, "UPSTREAM_REJECTED");
    h.fake.clear_requests();
    assert_eq!(h.err("asc_apps_list", json!({})).await, "UPSTREAM_REJECTED");
    assert!(
        h.fake.requests().is_empty(),
        "a dropped key is not tried again"
    );

    overwrite(&path, &third.private_key_pem);
    h.ok("asc_apps_list", json!({})).await;
    assert!(h.fake.requests().iter().all(|r| r.authorized));
}

//! A ledger written by the previous release (schema migrations 1 and 2) opened by this one:
//! migration 3 applies, rows stored before it read as they were requested (the pre-RFC 8785
//! hash encoding, no policy of their own, no checked facts), and they still verify and consume
//! with the hash they were approved under.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;

use care_core::approvals::{ApproverKey, RowPolicy};
use care_core::canonical::{self, HashEncoding};
use care_core::ledger::{ApprovalStatus, ConsumeError, Decision, NewDecision};
use care_ledger::test_support::temp_sqlite;
use serde_json::{Map, Value, json};
use sqlx::ConnectOptions;
use sqlx::migrate::Migrator;
use sqlx::sqlite::SqliteConnectOptions;

const ACTION: &str = "asc_review_reply";

fn arguments() -> Map<String, Value> {
    // A backspace and keys whose UTF-8 and UTF-16 orders differ: the two encodings disagree.
    json!({"review_id": "rev-1", "body": "Thanks\u{8}!", "locale": "en-US", "\u{e000}": "x", "\u{1f600}": "y"})
        .as_object()
        .unwrap()
        .clone()
}

async fn previous_release_ledger(url: &str, rows: &[(&str, &str)]) {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../migrations/sqlite"
    ));
    let mut old = Migrator::new(dir).await.unwrap();
    old.migrations = Cow::Owned(
        old.migrations
            .iter()
            .filter(|m| m.version <= 2)
            .cloned()
            .collect(),
    );
    let options = SqliteConnectOptions::from_str(url)
        .unwrap()
        .create_if_missing(true);
    let mut conn = options.connect().await.unwrap();
    old.run(&mut conn).await.unwrap();
    let now = chrono::Utc::now().timestamp_millis();
    for (id, status) in rows {
        sqlx::query(
            "INSERT INTO approvals (id, action, arguments_json, payload_hash, status, \
             requested_by_role, requested_by_client, reason, created_at, expires_at, card_event_id) \
             VALUES ($1, $2, $3, $4, $5, 'reviews', 'stdio', NULL, $6, $7, NULL)",
        )
        .bind(id)
        .bind(ACTION)
        .bind(String::from_utf8(canonical::legacy::encode(&Value::Object(arguments()))).unwrap())
        .bind(canonical::payload_hash_with(
            HashEncoding::LegacyV1,
            ACTION,
            &arguments(),
        ))
        .bind(status)
        .bind(now)
        .bind(now + 3_600_000)
        .execute(&mut conn)
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn approvals_stored_by_the_previous_release_still_verify() {
    let (url, _dir) = temp_sqlite();
    previous_release_ledger(&url, &[("old-1", "pending"), ("old-2", "pending")]).await;
    let ledger = care_ledger::connect(Some(&url), Path::new("/nonexistent"))
        .await
        .unwrap();

    let row = ledger.approval("old-1").await.unwrap().unwrap();
    assert_eq!(row.hash_encoding, HashEncoding::LegacyV1);
    assert_eq!(row.policy, None);
    assert_eq!(row.checked_facts_json, None);
    assert_eq!(row.card_text, None);

    // Judged by the deciding process's policy, as before.
    let approver = ApproverKey::from_hex(&"11".repeat(32)).unwrap();
    let legacy = RowPolicy::new(vec![approver.clone()], 1);
    for id in ["old-1", "old-2"] {
        let decided = ledger
            .record_decision(
                &NewDecision {
                    approval_id: id.to_owned(),
                    approver: approver.clone(),
                    decision: Decision::Approve,
                    evidence: "{}".to_owned(),
                },
                &legacy,
            )
            .await
            .unwrap();
        assert_eq!(decided.status, ApprovalStatus::Approved);
    }

    let jcs = canonical::payload_hash(ACTION, &arguments());
    let legacy_hash = canonical::payload_hash_with(HashEncoding::LegacyV1, ACTION, &arguments());
    assert_ne!(
        jcs, legacy_hash,
        "the arguments must tell the encodings apart"
    );
    // The same arguments hashed the new way do not match a row bound the old way...
    let r = ledger.consume("old-2", ACTION, &jcs, "{}").await;
    assert!(matches!(r, Err(ConsumeError::Mismatch)), "{r:?}");
    // ...the way the row records does.
    let consumed = ledger
        .consume("old-1", ACTION, &legacy_hash, "{}")
        .await
        .unwrap();
    assert_eq!(consumed.status, ApprovalStatus::Consumed);
}

//! The HTTP clients table and call windows on both backends (Postgres through
//! `CARE_TEST_DATABASE_URL`, a fresh database per test; SQLite in a temp file): add, lookup,
//! rotate, revoke, and a ceiling that holds when many callers on separate ledger handles
//! (as replicas are) race for the last slots.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use care_core::catalog::Role;
use care_core::clients::{self, NewClient, RateVerdict};
use care_core::ledger::{Ledger, LedgerError};
use care_ledger::test_support::{fresh_postgres_db, temp_sqlite};

async fn open(url: &str) -> Arc<dyn Ledger> {
    care_ledger::connect(Some(url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap()
}

fn new_client(name: &str, rate: u32) -> (NewClient, clients::Minted) {
    let minted = clients::mint();
    (
        NewClient {
            name: name.to_owned(),
            role: Role::Reviews,
            rate_per_minute: rate,
            key_id: minted.key_id.clone(),
            secret_digest: minted.secret_digest.clone(),
        },
        minted,
    )
}

async fn lifecycle(ledger: Arc<dyn Ledger>) {
    let store = ledger.client_store().unwrap();
    let (new, minted) = new_client("agent-a", 7);
    store.add_client(&new).await.unwrap();
    let (dup, _) = new_client("agent-a", 7);
    assert!(matches!(
        store.add_client(&dup).await,
        Err(LedgerError::Conflict(_))
    ));
    let row = store.client_by_key(&minted.key_id).await.unwrap().unwrap();
    assert_eq!(
        (row.name.as_str(), row.role.as_str()),
        ("agent-a", "reviews")
    );
    assert_eq!(row.rate_per_minute, 7);
    let (_, secret) = clients::parse_token(&minted.token).unwrap();
    assert!(clients::secret_matches(&row, secret));
    assert!(row.revoked_at.is_none() && row.rotated_at.is_none());

    let fresh = clients::mint();
    assert!(
        store
            .rotate_client("agent-a", &fresh.key_id, &fresh.secret_digest)
            .await
            .unwrap()
    );
    assert!(store.client_by_key(&minted.key_id).await.unwrap().is_none());
    let rotated = store.client_by_key(&fresh.key_id).await.unwrap().unwrap();
    assert!(rotated.rotated_at.is_some());

    assert!(store.revoke_client("agent-a").await.unwrap());
    assert!(!store.revoke_client("agent-a").await.unwrap(), "once");
    assert!(!store.rotate_client("agent-a", "k", "d").await.unwrap());
    let revoked = store.client_by_key(&fresh.key_id).await.unwrap().unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(store.take_call("agent-a").await.unwrap(), RateVerdict::Gone);
    assert_eq!(store.take_call("nobody").await.unwrap(), RateVerdict::Gone);
    assert_eq!(store.list_clients().await.unwrap().len(), 1);
}

/// 40 callers on 4 separate ledgers (separate pools, as replicas have) race for 10 slots.
async fn ceiling_holds_across_handles(url: &str) {
    let ledgers: Vec<Arc<dyn Ledger>> = futures_join(url).await;
    let store = ledgers[0].client_store().unwrap();
    let (new, _) = new_client("shared", 10);
    store.add_client(&new).await.unwrap();
    let (other, _) = new_client("other", 10);
    store.add_client(&other).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let ledger = Arc::clone(&ledgers[i % ledgers.len()]);
        tasks.push(tokio::spawn(async move {
            ledger
                .client_store()
                .unwrap()
                .take_call("shared")
                .await
                .unwrap()
        }));
    }
    let mut allowed = 0;
    let mut limited = 0;
    for task in tasks {
        match task.await.unwrap() {
            RateVerdict::Allowed => allowed += 1,
            RateVerdict::Limited { retry_after } => {
                assert!(retry_after.as_millis() >= 1 && retry_after.as_secs() <= 60);
                limited += 1;
            }
            RateVerdict::Gone => panic!("the client is live"),
        }
    }
    assert_eq!((allowed, limited), (10, 30));
    // Another client's window is its own.
    assert_eq!(
        store.take_call("other").await.unwrap(),
        RateVerdict::Allowed
    );
}

async fn futures_join(url: &str) -> Vec<Arc<dyn Ledger>> {
    let mut ledgers = Vec::new();
    for _ in 0..4 {
        ledgers.push(open(url).await);
    }
    ledgers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_client_lifecycle() {
    let (url, _db) = fresh_postgres_db().await;
    lifecycle(open(&url).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_ceiling_holds_across_replicas() {
    let (url, _db) = fresh_postgres_db().await;
    ceiling_holds_across_handles(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_client_lifecycle() {
    let (url, _dir) = temp_sqlite();
    lifecycle(open(&url).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_ceiling_holds_across_handles() {
    let (url, _dir) = temp_sqlite();
    ceiling_holds_across_handles(&url).await;
}

//! The HTTP clients table and call windows on both backends (Postgres through
//! `CARE_TEST_DATABASE_URL`, a fresh database per test; SQLite in a temp file): add, lookup,
//! rotate, revoke, and a ceiling that holds when many callers on separate ledger handles
//! (as replicas are) race for the last slots, one call at a time or through each replica's
//! leases ([`CallMeter`]).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use care_core::catalog::Role;
use care_core::clients::{
    self, CallMeter, ClientRow, ClientStore, NewClient, RateVerdict, Reservation, Settle,
};
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

/// Reservations by hand: a lease takes what is free up to what it asks, a settled lease gives
/// back its unused slots, and a revoked client reserves nothing.
async fn leases_give_back_what_they_did_not_use(ledger: Arc<dyn Ledger>) {
    let store = ledger.client_store().unwrap();
    store.add_client(&new_client("leaser", 32).0).await.unwrap();
    let hold = Duration::from_secs(1);
    let reserve = |lease: &'static str, wanted: u32, settle: Option<Settle>| async move {
        store
            .reserve("leaser", lease, wanted, hold, settle.as_ref())
            .await
            .unwrap()
    };
    assert_eq!(
        reserve("l1", 10, None).await,
        Reservation::Granted { slots: 10 }
    );
    assert_eq!(
        reserve("l2", 30, None).await,
        Reservation::Granted { slots: 22 }
    );
    let Reservation::Limited { retry_after } = reserve("l3", 1, None).await else {
        panic!("the window is full");
    };
    // The oldest lease ends a second from now: its slots leave a window later.
    assert!(retry_after > Duration::from_secs(59) && retry_after <= Duration::from_secs(61));
    let settle = Settle {
        lease: "l1".into(),
        used: 3,
    };
    assert_eq!(
        reserve("l3", 5, Some(settle.clone())).await,
        Reservation::Granted { slots: 5 }
    );
    // Settling again gives nothing more back (a settle never raises a lease either).
    assert_eq!(
        reserve("l4", 5, Some(settle)).await,
        Reservation::Granted { slots: 2 }
    );
    let grow = Settle {
        lease: "l4".into(),
        used: 9,
    };
    assert!(matches!(
        reserve("l5", 1, Some(grow)).await,
        Reservation::Limited { .. }
    ));
    assert!(store.revoke_client("leaser").await.unwrap());
    assert_eq!(reserve("l6", 1, None).await, Reservation::Gone);
}

/// Counts the reservations a meter makes, passing each to the real store.
struct Counting<'a> {
    store: &'a dyn ClientStore,
    reservations: AtomicUsize,
}

#[async_trait]
impl ClientStore for Counting<'_> {
    async fn add_client(&self, new: &NewClient) -> Result<(), LedgerError> {
        self.store.add_client(new).await
    }
    async fn list_clients(&self) -> Result<Vec<ClientRow>, LedgerError> {
        self.store.list_clients().await
    }
    async fn client_by_key(&self, key_id: &str) -> Result<Option<ClientRow>, LedgerError> {
        self.store.client_by_key(key_id).await
    }
    async fn revoke_client(&self, name: &str) -> Result<bool, LedgerError> {
        self.store.revoke_client(name).await
    }
    async fn rotate_client(
        &self,
        name: &str,
        key_id: &str,
        secret_digest: &str,
    ) -> Result<bool, LedgerError> {
        self.store.rotate_client(name, key_id, secret_digest).await
    }
    async fn reserve(
        &self,
        name: &str,
        lease: &str,
        wanted: u32,
        hold: Duration,
        settle: Option<&Settle>,
    ) -> Result<Reservation, LedgerError> {
        self.reservations.fetch_add(1, Ordering::Relaxed);
        self.store.reserve(name, lease, wanted, hold, settle).await
    }
}

/// Four replicas (own ledger handle, own meter), four callers each, 40 calls per caller
/// against a ceiling of 64: never more than 64 pass, the leases' unused slots come back so
/// nearly all 64 do, and the ledger sees far fewer reservations than calls.
async fn metered_replicas_never_exceed_the_ceiling(url: &str) {
    const CEILING: u32 = 64;
    let ledgers: Vec<Arc<dyn Ledger>> = futures_join(url).await;
    let store = ledgers[0].client_store().unwrap();
    store
        .add_client(&new_client("busy", CEILING).0)
        .await
        .unwrap();
    let mut replicas = Vec::new();
    for ledger in ledgers {
        let ledger = Arc::clone(&ledger);
        replicas.push(tokio::spawn(async move {
            let meter = Arc::new(CallMeter::default());
            let counting = Arc::new(Counting {
                store: ledger.client_store().unwrap(),
                reservations: AtomicUsize::new(0),
            });
            // Callers of one replica share its meter, as a server's requests do.
            let allowed = AtomicUsize::new(0);
            let caller = || async {
                for _ in 0..40 {
                    match meter
                        .take(counting.as_ref(), "busy", CEILING)
                        .await
                        .unwrap()
                    {
                        RateVerdict::Allowed => {
                            allowed.fetch_add(1, Ordering::Relaxed);
                        }
                        RateVerdict::Limited { .. } => {}
                        RateVerdict::Gone => panic!("the client is live"),
                    }
                }
            };
            tokio::join!(caller(), caller(), caller(), caller());
            (
                allowed.load(Ordering::Relaxed),
                counting.reservations.load(Ordering::Relaxed),
            )
        }));
    }
    let (mut allowed, mut reservations) = (0, 0);
    for replica in replicas {
        let (a, r) = replica.await.unwrap();
        allowed += a;
        reservations += r;
    }
    assert!(
        allowed <= CEILING as usize,
        "{allowed} calls passed a ceiling of {CEILING}"
    );
    // At most one small lease per replica can be left unused at the end.
    assert!(
        allowed >= CEILING as usize - 4 * 4,
        "only {allowed} of {CEILING} passed"
    );
    // 640 calls: the 64 admitted ones took a handful of leases, each refusal one reservation.
    assert!(reservations < 640, "{reservations} reservations");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_leases_give_back_what_they_did_not_use() {
    let (url, _db) = fresh_postgres_db().await;
    leases_give_back_what_they_did_not_use(open(&url).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_leases_give_back_what_they_did_not_use() {
    let (url, _dir) = temp_sqlite();
    leases_give_back_what_they_did_not_use(open(&url).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_metered_replicas_never_exceed_the_ceiling() {
    let (url, _db) = fresh_postgres_db().await;
    metered_replicas_never_exceed_the_ceiling(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_metered_replicas_never_exceed_the_ceiling() {
    let (url, _dir) = temp_sqlite();
    metered_replicas_never_exceed_the_ceiling(&url).await;
}

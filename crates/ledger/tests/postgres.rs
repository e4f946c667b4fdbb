//! The conformance suite against Postgres (a fresh database per test, through
//! `CARE_TEST_DATABASE_URL`; unset fails every test).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;

use std::path::Path;
use std::sync::Arc;

use care_core::ledger::Ledger;
use care_ledger::test_support::{PgTestDb, fresh_postgres_db};
use conformance::conformance_suite;

async fn open() -> (Arc<dyn Ledger>, PgTestDb) {
    let (url, db) = fresh_postgres_db().await;
    let ledger = care_ledger::connect(Some(&url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap();
    assert_eq!(ledger.backend(), "postgres");
    (ledger, db)
}

conformance_suite!(open);

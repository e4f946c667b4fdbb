//! The conformance suite against SQLite (a fresh file per test).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;

use std::path::Path;
use std::sync::Arc;

use care_core::ledger::Ledger;
use care_ledger::test_support::temp_sqlite;
use conformance::conformance_suite;

async fn open() -> (Arc<dyn Ledger>, tempfile::TempDir) {
    let (url, dir) = temp_sqlite();
    let ledger = care_ledger::connect(Some(&url), Path::new("/nonexistent/unused.db"))
        .await
        .unwrap();
    assert_eq!(ledger.backend(), "sqlite");
    (ledger, dir)
}

conformance_suite!(open);

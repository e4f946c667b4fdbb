//! `connect` picks the backend from `DATABASE_URL` and refuses unknown schemes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;

use care_core::ledger::LedgerError;
use care_ledger::{ConnectError, connect};

#[tokio::test]
async fn unset_or_blank_url_opens_sqlite_at_the_default_path() {
    let dir = tempfile::tempdir().unwrap();
    for (i, url) in [None, Some(""), Some("  ")].into_iter().enumerate() {
        let path = dir.path().join(format!("nested{i}/deeper/ledger.db"));
        let ledger = connect(url, &path).await.unwrap();
        assert_eq!(ledger.backend(), "sqlite");
        ledger.ping().await.unwrap();
        assert!(
            path.exists(),
            "the file and its directories are created at start"
        );
    }
}

#[tokio::test]
async fn sqlite_url_opens_that_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/ledger.db");
    let default = dir.path().join("default.db");
    let url = format!("sqlite://{}", path.display());
    let ledger = connect(Some(&url), &default).await.unwrap();
    assert_eq!(ledger.backend(), "sqlite");
    ledger.ping().await.unwrap();
    assert!(path.exists());
    assert!(!default.exists());
}

#[tokio::test]
async fn unknown_scheme_is_refused() {
    for url in [
        "mysql://localhost/db",
        "/var/lib/care/ledger.db",
        "http://x",
    ] {
        let r = connect(Some(url), std::path::Path::new("/nonexistent/x.db")).await;
        assert!(matches!(r, Err(ConnectError::UnsupportedScheme)), "{url}");
    }
}

#[tokio::test]
async fn postgres_url_does_not_connect_at_construction() {
    // A port nobody listens on: construction succeeds, calls answer Unavailable.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for scheme in ["postgres", "postgresql"] {
        let url = format!("{scheme}://postgres@127.0.0.1:{port}/care");
        let ledger = connect(Some(&url), std::path::Path::new("/nonexistent/x.db"))
            .await
            .unwrap();
        assert_eq!(ledger.backend(), "postgres");
        let ping = ledger.ping().await;
        assert!(matches!(ping, Err(LedgerError::Unavailable(_))), "{ping:?}");
    }
}

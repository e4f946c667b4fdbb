//! A Postgres that is down at start, goes away and comes back: the ledger is built while it
//! is down, answers `Unavailable` while it is down, and recovers by itself (migrations
//! included) once it is up. Runs its own throwaway cluster (initdb/pg_ctl).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use care_core::ledger::{Ledger, LedgerError, NewApproval};
use chrono::{TimeDelta, Utc};

/// Where initdb and pg_ctl live; `CARE_TEST_PG_BIN` overrides.
const DEFAULT_PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A throwaway cluster in a temporary directory, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    /// Postgres refuses to run as root: run its tools as the `postgres` user then.
    as_postgres: bool,
}

impl Cluster {
    fn init() -> Self {
        let bin = PathBuf::from(
            std::env::var("CARE_TEST_PG_BIN").unwrap_or_else(|_| DEFAULT_PG_BIN.to_owned()),
        );
        assert!(
            bin.join("initdb").exists(),
            "no initdb in {} (set CARE_TEST_PG_BIN)",
            bin.display()
        );
        let uid = Command::new("id").arg("-u").output().unwrap();
        let as_postgres = String::from_utf8_lossy(&uid.stdout).trim() == "0";
        let dir = tempfile::tempdir().unwrap();
        if as_postgres {
            let st = Command::new("chown")
                .arg("postgres:postgres")
                .arg(dir.path())
                .status();
            assert!(
                st.unwrap().success(),
                "chown of the cluster directory failed"
            );
        }
        // A free port now; nothing else on this machine should grab it in the next seconds.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Self {
            dir,
            bin,
            port,
            as_postgres,
        };
        let data = cluster.data();
        cluster.run(
            "initdb",
            &[
                "-D",
                &data,
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
                "--no-locale",
            ],
        );
        cluster
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn command(&self, tool: &str, args: &[&str]) -> Command {
        let tool = self.bin.join(tool);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(tool).args(args);
            c
        } else {
            let mut c = Command::new(tool);
            c.args(args);
            c
        }
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let out = self.command(tool, args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn start(&self) {
        let dir = self.dir.path().display().to_string();
        let opts = format!(
            "-k {dir} -p {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port
        );
        let log = format!("{dir}/postgres.log");
        self.run(
            "pg_ctl",
            &["-D", &self.data(), "-l", &log, "-o", &opts, "-w", "start"],
        );
    }

    fn stop(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
    }
}

/// Asserts the ledger answers `Unavailable`, and promptly (the acquire timeout, not a hang).
async fn assert_unavailable(ledger: &dyn Ledger) {
    let t = Instant::now();
    let ping = ledger.ping().await;
    assert!(
        matches!(ping, Err(LedgerError::Unavailable(_))),
        "ping: {ping:?}"
    );
    let read = ledger.approval("o-1", Utc::now()).await;
    assert!(
        matches!(read, Err(LedgerError::Unavailable(_))),
        "approval: {read:?}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t.elapsed()
    );
}

/// Waits (bounded) for the ledger to answer again after the database returned.
async fn assert_recovers(ledger: &dyn Ledger) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match ledger.ping().await {
            Ok(()) => return,
            Err(e) if Instant::now() < deadline => {
                eprintln!("not yet recovered: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("ledger did not recover: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outage_at_start_and_midway_recovers() {
    let started = Instant::now();
    let cluster = Cluster::init();

    // Down at start: construction still succeeds, calls answer Unavailable.
    let ledger = care_ledger::connect(Some(&cluster.url()), Path::new("/nonexistent/unused.db"))
        .await
        .expect("the ledger is built while Postgres is down");
    assert_eq!(ledger.backend(), "postgres");
    assert_unavailable(ledger.as_ref()).await;

    // Up: the same ledger connects and applies its migrations.
    cluster.start();
    assert_recovers(ledger.as_ref()).await;
    let now = Utc::now();
    ledger
        .create_approval(&NewApproval {
            id: "o-1".to_owned(),
            action: "mail_send".to_owned(),
            arguments_json: "{}".to_owned(),
            payload_hash: "00".to_owned(),
            requested_by_role: "mail".to_owned(),
            requested_by_client: "outage".to_owned(),
            reason: None,
            created_at: now,
            expires_at: now + TimeDelta::minutes(10),
        })
        .await
        .unwrap();

    // Down midway: pooled connections are dead, calls answer Unavailable.
    cluster.stop();
    assert_unavailable(ledger.as_ref()).await;

    // Back: recovered without a restart, data intact.
    cluster.start();
    assert_recovers(ledger.as_ref()).await;
    let row = ledger.approval("o-1", Utc::now()).await.unwrap();
    assert!(row.is_some(), "the row written before the outage is there");

    eprintln!("outage test took {:?}", started.elapsed());
}

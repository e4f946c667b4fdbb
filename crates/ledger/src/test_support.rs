//! Throwaway databases for tests (feature `test-support`): a fresh Postgres database per test,
//! created through `CARE_TEST_DATABASE_URL` and dropped with its guard, and a SQLite file in a
//! temporary directory. Tests may run in parallel: every database has a random name. Also an
//! approved approval row, ready to consume.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::str::FromStr;

use care_core::approvals::{ApproverKey, RowPolicy};
use care_core::canonical::HashEncoding;
use care_core::ledger::{Decision, Ledger, NewApproval, NewDecision};
use chrono::TimeDelta;
use sqlx::postgres::PgConnectOptions;
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, PgConnection};

/// The admin URL of the Postgres the tests may create databases on.
pub const TEST_DATABASE_URL_ENV: &str = "CARE_TEST_DATABASE_URL";

/// A test database; dropped (connections terminated) when this guard is dropped.
#[derive(Debug)]
pub struct PgTestDb {
    admin_url: String,
    name: String,
    url: String,
}

impl PgTestDb {
    /// The URL of the fresh database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database name (`care_test_<hex>`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for PgTestDb {
    fn drop(&mut self) {
        // Drop is synchronous and may run inside a runtime: use a thread with its own runtime.
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        let joined = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match rt {
                Ok(rt) => rt.block_on(drop_database(&admin_url, &name)),
                Err(e) => Err(e.to_string()),
            }
        })
        .join();
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("test database {} not dropped: {e}", self.name),
            Err(_) => eprintln!("test database {} not dropped: dropper panicked", self.name),
        }
    }
}

async fn admin_connection(admin_url: &str) -> Result<PgConnection, String> {
    let options = PgConnectOptions::from_str(admin_url).map_err(|e| e.to_string())?;
    options.connect().await.map_err(|e| e.to_string())
}

async fn drop_database(admin_url: &str, name: &str) -> Result<(), String> {
    let mut conn = admin_connection(admin_url).await?;
    let stmt = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
    sqlx::query(AssertSqlSafe(stmt))
        .execute(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    conn.close().await.map_err(|e| e.to_string())
}

/// `admin_url` with its database replaced by `name` (query parameters kept).
fn with_database(admin_url: &str, name: &str) -> String {
    let (base, query) = match admin_url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (admin_url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let root = match base[authority_start..].find('/') {
        Some(i) => &base[..authority_start + i],
        None => base,
    };
    match query {
        Some(q) => format!("{root}/{name}?{q}"),
        None => format!("{root}/{name}"),
    }
}

/// Creates a fresh, empty Postgres database and returns its URL and the guard that drops it.
///
/// # Panics
/// When `CARE_TEST_DATABASE_URL` is unset or the database cannot be created: a Postgres test
/// must fail, never pass silently.
pub async fn fresh_postgres_db() -> (String, PgTestDb) {
    let Ok(admin_url) = std::env::var(TEST_DATABASE_URL_ENV) else {
        panic!(
            "{TEST_DATABASE_URL_ENV} is not set: the Postgres tests need an admin URL such as \
             postgres://postgres@127.0.0.1:5432/postgres (CI always sets it)"
        );
    };
    let name = format!("care_test_{}", uuid::Uuid::new_v4().simple());
    let created = async {
        let mut conn = admin_connection(&admin_url).await?;
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        conn.close().await.map_err(|e| e.to_string())
    };
    if let Err(e) = created.await {
        panic!("cannot create test database via {TEST_DATABASE_URL_ENV}: {e}");
    }
    let url = with_database(&admin_url, &name);
    let guard = PgTestDb {
        admin_url,
        name,
        url: url.clone(),
    };
    (url, guard)
}

/// Runs one statement on the ledger at `url` (a `sqlite:` or `postgres:` URL), for tests that
/// must reach under the `Ledger` trait: a row as an older release stored it, an expiry already
/// past. Returns the number of rows changed.
pub async fn execute(url: &str, statement: &str) -> Result<u64, String> {
    let statement = AssertSqlSafe(statement.to_owned());
    if url.starts_with("sqlite:") {
        let options =
            sqlx::sqlite::SqliteConnectOptions::from_str(url).map_err(|e| e.to_string())?;
        let mut conn = options.connect().await.map_err(|e| e.to_string())?;
        let done = sqlx::query(statement)
            .execute(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        conn.close().await.map_err(|e| e.to_string())?;
        Ok(done.rows_affected())
    } else {
        let options = PgConnectOptions::from_str(url).map_err(|e| e.to_string())?;
        let mut conn = options.connect().await.map_err(|e| e.to_string())?;
        let done = sqlx::query(statement)
            .execute(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        conn.close().await.map_err(|e| e.to_string())?;
        Ok(done.rows_affected())
    }
}

/// A SQLite ledger file in a fresh temporary directory (removed with the guard); the URL is
/// `sqlite://<dir>/ledger.db`. The file does not exist until a ledger opens it.
///
/// # Panics
/// When no temporary directory can be created.
pub fn temp_sqlite() -> (String, tempfile::TempDir) {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("cannot create a temporary directory: {e}"),
    };
    let path: PathBuf = dir.path().join("ledger.db");
    (format!("sqlite://{}", path.display()), dir)
}

/// Where initdb and pg_ctl live; `CARE_TEST_PG_BIN` (or `PG_BIN`, set by `scripts/test`) overrides.
const DEFAULT_PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A throwaway Postgres cluster in a temporary directory, stopped when dropped: for tests
/// that stop and restart the database under a running ledger. Panics on failure (test support).
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[derive(Debug)]
pub struct ThrowawayCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    /// Postgres refuses to run as root: run its tools as the `postgres` user then.
    as_postgres: bool,
}

#[allow(clippy::unwrap_used, clippy::expect_used)]
impl ThrowawayCluster {
    /// Creates (initdb) a stopped cluster on a free loopback port.
    pub fn init() -> Self {
        let bin = PathBuf::from(
            std::env::var("CARE_TEST_PG_BIN")
                .or_else(|_| std::env::var("PG_BIN"))
                .unwrap_or_else(|_| DEFAULT_PG_BIN.to_owned()),
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

    /// The admin URL (trust auth, user postgres).
    pub fn url(&self) -> String {
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

    /// Starts the cluster and waits until it accepts connections.
    pub fn start(&self) {
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

    /// Stops the cluster (fast shutdown) and waits.
    pub fn stop(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }
}

impl Drop for ThrowawayCluster {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
    }
}

/// Stores approval `id` for `action` and `payload_hash` (checked facts `{}`, ten minutes to
/// live, one throwaway approver) and approves it: a row ready to consume.
pub async fn approved_approval(
    ledger: &dyn Ledger,
    id: &str,
    action: &str,
    payload_hash: &str,
) -> Result<(), String> {
    let approver = ApproverKey::from_hex(&"11".repeat(32)).ok_or("the throwaway approver key")?;
    let now = ledger.clock().await.map_err(|e| e.to_string())?;
    ledger
        .create_approval(&NewApproval {
            id: id.to_owned(),
            action: action.to_owned(),
            arguments_json: "{}".to_owned(),
            payload_hash: payload_hash.to_owned(),
            requested_by_role: "mail".to_owned(),
            requested_by_client: "test".to_owned(),
            reason: None,
            created_at: now,
            expires_at: now + TimeDelta::minutes(10),
            hash_encoding: HashEncoding::Jcs,
            policy: RowPolicy::new(vec![approver.clone()], 1),
            checked_facts_json: "{}".to_owned(),
            card_event_id: None,
            card_text: None,
        })
        .await
        .map_err(|e| e.to_string())?;
    let approval = NewDecision {
        approval_id: id.to_owned(),
        approver,
        decision: Decision::Approve,
        evidence: "{}".to_owned(),
    };
    ledger
        .record_decision(&approval, &RowPolicy::new(Vec::new(), 1))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn replaces_the_database_keeping_parameters() {
        assert_eq!(
            with_database("postgres://u:p@h:5432/postgres?sslmode=disable", "x"),
            "postgres://u:p@h:5432/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
        assert_eq!(
            with_database("postgresql://h:1/", "x"),
            "postgresql://h:1/x"
        );
    }
}

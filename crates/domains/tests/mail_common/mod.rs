//! The mail domain in process against two peers, so the same tests keep the fake honest: the
//! in-process fake (`care_fakes::mail`) and a real Dovecot with an SMTP server delivering into
//! it (started by `scripts/test` through `scripts/mail-peers`; found by `CARE_TEST_IMAP_URL`,
//! `CARE_TEST_SMTP_URL`, `CARE_TEST_MAIL_PASSWORD`; a missing peer FAILS the test). Each harness
//! uses addresses of its own (any login is an account on both peers), seeds the support
//! mailbox over IMAP APPEND, and serves the mail tools and the ledger tools behind a real
//! `Gate` with a temp SQLite ledger.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/in_process.rs"]
pub mod in_process;

use std::collections::HashMap;
use std::sync::Arc;

use care_core::catalog::Role;
use care_core::env::MapEnv;
use care_core::gate::{Gate, GateAnswer};
use care_core::ledger::Ledger;
use care_core::tool::Services;
use care_fakes::mail::{FakeMail, MailSeed, SeedMessage};
use futures::TryStreamExt;
use serde_json::{Map, Value, json};

/// The customers of the demo seed; each harness gives them addresses of its own.
const CUSTOMERS: [&str; 6] = [
    "jordan.lee@example.com",
    "kim.minji@example.co.kr",
    "alex@example.org",
    "sam@example.net",
    "robin@example.com",
    "attacker@example.net",
];

/// Which server a harness talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fake,
    Dovecot,
}

/// A mail server the tests can use.
pub struct Peer {
    pub kind: Kind,
    pub imap_url: String,
    pub smtp_url: String,
    pub password: String,
    pub fake: Option<FakeMail>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.kind)
    }
}

/// A fresh, empty in-process fake.
pub fn fake_peer() -> Peer {
    let fake = FakeMail::start(MailSeed::default()).unwrap();
    Peer {
        kind: Kind::Fake,
        imap_url: fake.imap_url().to_owned(),
        smtp_url: fake.smtp_url().to_owned(),
        password: care_fakes::mail::FAKE_PASSWORD.to_owned(),
        fake: Some(fake),
    }
}

/// The Dovecot that `scripts/test` started. Missing: the test fails (never skips).
pub fn dovecot_peer() -> Peer {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!(
                "{name} is not set: run the tests with scripts/test, which starts Dovecot and an \
                 SMTP server (scripts/mail-peers)"
            )
        })
    };
    Peer {
        kind: Kind::Dovecot,
        imap_url: var("CARE_TEST_IMAP_URL"),
        smtp_url: var("CARE_TEST_SMTP_URL"),
        password: var("CARE_TEST_MAIL_PASSWORD"),
        fake: None,
    }
}

/// Both peers: every mail test runs against each.
pub fn peers() -> Vec<Peer> {
    vec![fake_peer(), dovecot_peer()]
}

pub struct Options {
    pub role: Role,
    pub write_enabled: bool,
    pub extra_env: Vec<(&'static str, String)>,
    pub password: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            role: Role::Mail,
            write_enabled: false,
            extra_env: vec![
                ("CARE_MAIL_CONNECT_TIMEOUT_SECS", "3".into()),
                ("CARE_MAIL_COMMAND_TIMEOUT_SECS", "3".into()),
            ],
            password: None,
        }
    }
}

pub struct Harness {
    pub peer: Peer,
    pub tag: String,
    pub support: String,
    pub gate: Gate,
    pub ledger: Arc<dyn Ledger>,
    pub services: Arc<Services>,
    /// `CARE_MAIL_PASSWORD_FILE` (tests rotate it).
    pub password_file: std::path::PathBuf,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

/// A support account and customer addresses of this harness's own.
fn tag() -> String {
    format!("t{}", &uuid::Uuid::new_v4().simple().to_string()[..10])
}

pub async fn harness(peer: Peer, options: Options) -> Harness {
    let tag = tag();
    let support = format!("support.{tag}@care.test");
    let dir = tempfile::tempdir().unwrap();
    let password_file = dir.path().join("mail-password");
    std::fs::write(
        &password_file,
        format!(
            "{}\n",
            options.password.as_deref().unwrap_or(&peer.password)
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &password_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let (url, db_dir) = care_ledger::test_support::temp_sqlite();
    let mut env: HashMap<String, String> = HashMap::from([
        ("CARE_IMAP_URL".into(), peer.imap_url.clone()),
        ("CARE_SMTP_URL".into(), peer.smtp_url.clone()),
        ("CARE_MAIL_USERNAME".into(), support.clone()),
        (
            "CARE_MAIL_PASSWORD_FILE".into(),
            password_file.display().to_string(),
        ),
        ("CARE_MAIL_FROM".into(), support.clone()),
        (
            "CARE_MAIL_ALLOWED_RECIPIENT_DOMAINS".into(),
            "example.com".into(),
        ),
        ("DATABASE_URL".into(), url.clone()),
        (
            "CARE_AUDIT_SALT".into(),
            "sk-demo-audit-salt-mail-0001".into(),
        ),
        ("CARE_CLIENT_ID".into(), "mail-test".into()),
    ]);
    if options.write_enabled {
        env.insert("CARE_WRITE_ENABLED".into(), "1".into());
    }
    for (k, v) in options.extra_env {
        env.insert(k.to_owned(), v);
    }
    let env = MapEnv(env);
    let built = in_process::build(options.role, &env, care_domains::register_domains).await;
    Harness {
        peer,
        tag,
        support,
        gate: built.gate,
        ledger: built.ledger,
        services: built.services,
        password_file,
        _dirs: (dir, db_dir),
    }
}

pub type CallResult = Result<Value, (String, Value)>;

/// A raw IMAP session (what a person's mail client would use), for seeding and checking.
pub type Raw = async_imap::Session<tokio::net::TcpStream>;

impl Harness {
    pub fn label(&self) -> String {
        format!("{:?}", self.peer.kind)
    }

    /// A customer's address in this harness (`jordan.lee@example.com` → its own variant).
    pub fn customer(&self, address: &str) -> String {
        let (local, domain) = address.split_once('@').unwrap();
        format!("{local}.{}@{domain}", self.tag)
    }

    /// `raw` with the seed's customer addresses made this harness's own.
    pub fn own(&self, raw: &[u8]) -> Vec<u8> {
        let mut text = String::from_utf8_lossy(raw).into_owned();
        for c in CUSTOMERS {
            text = text.replace(c, &self.customer(c));
        }
        text.into_bytes()
    }

    pub async fn call(&self, tool: &str, arguments: Value) -> CallResult {
        let args: Map<String, Value> = arguments.as_object().unwrap().clone();
        match self.gate.call(tool, Some(args)).await {
            GateAnswer::UnknownTool => panic!("{tool} unknown"),
            GateAnswer::Result {
                envelope, is_error, ..
            } => {
                let text = envelope.to_string();
                assert!(
                    !text.contains(&self.peer.password),
                    "the mail password leaked: {text}"
                );
                if is_error {
                    let error = envelope["error"].clone();
                    let code = error["code"].as_str().unwrap().to_owned();
                    let fixed = care_core::error::ErrorCode::ALL
                        .into_iter()
                        .find(|c| c.as_str() == code)
                        .unwrap()
                        .message();
                    assert_eq!(error["message"], fixed, "{error}");
                    Err((code, error))
                } else {
                    Ok(envelope["data"].clone())
                }
            }
        }
    }

    pub async fn ok(&self, tool: &str, arguments: Value) -> Value {
        match self.call(tool, arguments.clone()).await {
            Ok(data) => data,
            Err((code, e)) => panic!(
                "{}: {tool} {arguments} failed with {code}: {e}",
                self.label()
            ),
        }
    }

    pub async fn err(&self, tool: &str, arguments: Value) -> String {
        match self.call(tool, arguments.clone()).await {
            Ok(data) => panic!("{}: {tool} {arguments} succeeded: {data}", self.label()),
            Err((code, _)) => code,
        }
    }

    pub async fn request_approval(&self, arguments: Value) -> String {
        let data = self
            .ok(
                "approval_request",
                json!({"action": "mail_send", "arguments": arguments}),
            )
            .await;
        data["approval_id"].as_str().unwrap().to_owned()
    }

    pub async fn approve(&self, id: &str) {
        in_process::approve(&self.services, self.ledger.as_ref(), id).await;
    }

    /// Logs in as `login` over plain IMAP (both peers listen on loopback).
    pub async fn raw(&self, login: &str) -> Raw {
        let address = self.peer.imap_url.trim_start_matches("imap://").to_owned();
        let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
        let mut client = async_imap::Client::new(tcp);
        client.read_response().await.unwrap().unwrap();
        client
            .login(login, &self.peer.password)
            .await
            .map_err(|(e, _)| e)
            .unwrap()
    }

    /// Stores `raw` (made this harness's own) in the support account's `mailbox`.
    pub async fn append(
        &self,
        mailbox: &str,
        raw: &[u8],
        seen: bool,
        at: chrono::DateTime<chrono::Utc>,
    ) {
        let mut s = self.raw(&self.support).await;
        if mailbox != "INBOX" {
            let _ = s.create(mailbox).await;
        }
        let date = format!("\"{}\"", at.format("%d-%b-%Y %H:%M:%S +0000"));
        s.append(
            mailbox,
            if seen { Some("(\\Seen)") } else { None },
            Some(&date),
            self.own(raw),
        )
        .await
        .unwrap();
        s.logout().await.unwrap();
    }

    /// The demo inbox, oldest first (so UIDs follow the dates).
    pub async fn seed_demo(&self) {
        let mut messages: Vec<SeedMessage> = care_fakes::mail::demo_seed().messages;
        messages.sort_by_key(|m| m.received);
        for m in messages {
            self.append(&m.mailbox, &m.raw, m.seen, m.received).await;
        }
    }

    /// `(uid, flags)` of every message of `login`'s `mailbox`, read without changing them.
    pub async fn flags(&self, login: &str, mailbox: &str) -> Vec<(u32, Vec<String>)> {
        let mut s = self.raw(login).await;
        s.examine(mailbox).await.unwrap();
        let fetches: Vec<async_imap::types::Fetch> = s
            .uid_fetch("1:*", "(UID FLAGS)")
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        s.logout().await.unwrap();
        let mut out: Vec<(u32, Vec<String>)> = fetches
            .iter()
            .map(|f| {
                (
                    f.uid.unwrap(),
                    f.flags().map(|fl| format!("{fl:?}")).collect(),
                )
            })
            .collect();
        out.sort();
        out
    }

    /// Every message of `login`'s `mailbox`, raw, read with PEEK. Empty when it does not exist.
    pub async fn messages(&self, login: &str, mailbox: &str) -> Vec<Vec<u8>> {
        let mut s = self.raw(login).await;
        if s.examine(mailbox).await.is_err() {
            return Vec::new();
        }
        let fetches: Vec<async_imap::types::Fetch> =
            match s.uid_fetch("1:*", "(UID BODY.PEEK[])").await {
                Ok(stream) => stream.try_collect().await.unwrap(),
                Err(_) => Vec::new(),
            };
        s.logout().await.unwrap();
        fetches
            .iter()
            .filter_map(|f| f.body().map(<[u8]>::to_vec))
            .collect()
    }
}

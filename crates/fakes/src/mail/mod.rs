//! An in-process mail server for the tests and the sandbox: IMAP and SMTP on loopback ports,
//! one store behind both, on its own thread and runtime (like the HTTP fakes), stopped when
//! the handle is dropped.
//!
//! The protocols are real: IMAP commands are parsed by imap-codec and answered as RFC 3501 says
//! (literals, LITERAL+, BODYSTRUCTURE, partial fetches, UID forms, `\Seen` set by a non-PEEK
//! body fetch in a SELECTed mailbox); SMTP is mailin's state machine with AUTH PLAIN/LOGIN.
//! Every login with the fake's password is an account (as Dovecot's static passdb), so the
//! support account and the customers it writes to read their own mailboxes; each accepted
//! message is delivered to every recipient's INBOX and recorded as a submission.
//!
//! What it leaves out, and Dovecot (the tests' other peer) covers: TLS and STARTTLS, IDLE,
//! STORE, EXPUNGE, message/rfc822 structure (served as an opaque part).
//!
//! # Layout
//! - [`store`]: accounts, mailboxes, messages, submissions, and the test knobs.
//! - [`mime`]: the MIME reading the IMAP side needs; [`render`]: what it writes.
//! - [`imap`], [`search`]: the IMAP side; [`smtp`]: the SMTP side.
//! - [`seed`]: the demo inbox (support tickets, some hostile).

pub mod imap;
pub mod mime;
pub mod render;
pub mod search;
pub mod seed;
pub mod smtp;
pub mod store;
mod upstream;

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};
use tokio::net::TcpListener;

pub use seed::{
    DEMO_ALLOWED_DOMAIN, DEMO_TICKET_ID, HOSTILE_TICKET_ID, MailSeed, SUPPORT_ADDRESS, SeedMessage,
    demo_seed, hostile_messages,
};
use store::Store;
pub use store::{Mailbox, StoredMessage, Submission};

/// The password every account of the fake has (obviously not a real one).
pub const FAKE_PASSWORD: &str = "sk-demo-mail-password-0001";

/// Why the fake could not start.
#[derive(Debug, thiserror::Error)]
pub enum MailFakeError {
    #[error("cannot listen on loopback: {0}")]
    Listen(std::io::Error),
    #[error("cannot start the fake's runtime: {0}")]
    Runtime(std::io::Error),
}

/// A running mail fake; stops when dropped.
#[derive(Debug)]
pub struct FakeMail {
    imap_url: String,
    smtp_url: String,
    store: Arc<Store>,
    support: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn listener() -> Result<std::net::TcpListener, MailFakeError> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(MailFakeError::Listen)?;
    l.set_nonblocking(true).map_err(MailFakeError::Listen)?;
    Ok(l)
}

impl FakeMail {
    /// Starts the fake with `seed` stored in its account.
    pub fn start(seed: MailSeed) -> Result<FakeMail, MailFakeError> {
        let imap = listener()?;
        let smtp = listener()?;
        let imap_url = format!(
            "imap://{}",
            imap.local_addr().map_err(MailFakeError::Listen)?
        );
        let smtp_url = format!(
            "smtp://{}",
            smtp.local_addr().map_err(MailFakeError::Listen)?
        );
        let store = Arc::new(Store::default());
        // Oldest first, so UIDs follow the dates as they would after real deliveries.
        let mut messages: Vec<&SeedMessage> = seed.messages.iter().collect();
        messages.sort_by_key(|m| m.received);
        for m in messages {
            store.create(&seed.login, &m.mailbox);
            let flags: BTreeSet<String> = if m.seen {
                BTreeSet::from(["\\Seen".to_owned()])
            } else {
                BTreeSet::new()
            };
            let mailbox = store::mailbox_key(&m.mailbox);
            store.with_account(&seed.login, |a| {
                if let Some(mb) = a.mailboxes.get_mut(&mailbox) {
                    mb.add(m.raw.clone(), flags, m.received);
                }
            });
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(MailFakeError::Runtime)?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = Arc::clone(&store);
        let thread = std::thread::Builder::new()
            .name("fake-mail".into())
            .spawn(move || runtime.block_on(serve(imap, smtp, served, stopped)))
            .map_err(MailFakeError::Runtime)?;
        Ok(FakeMail {
            imap_url,
            smtp_url,
            store,
            support: seed.login.to_ascii_lowercase(),
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `imap://127.0.0.1:PORT` (plaintext: loopback only).
    pub fn imap_url(&self) -> &str {
        &self.imap_url
    }

    /// `smtp://127.0.0.1:PORT` (plaintext: loopback only).
    pub fn smtp_url(&self) -> &str {
        &self.smtp_url
    }

    /// The account the seed was stored in.
    pub fn support_login(&self) -> &str {
        &self.support
    }

    /// Writes the password file (mode 600) into `dir`.
    pub fn write_password(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join("mail-password");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        writeln!(file, "{FAKE_PASSWORD}")?;
        Ok(path)
    }

    /// The environment a care-mcp role needs to use this fake as `login`.
    pub fn env(&self, login: &str, password_file: &Path) -> Vec<(String, String)> {
        vec![
            ("CARE_IMAP_URL".into(), self.imap_url.clone()),
            ("CARE_SMTP_URL".into(), self.smtp_url.clone()),
            ("CARE_MAIL_USERNAME".into(), login.to_owned()),
            (
                "CARE_MAIL_PASSWORD_FILE".into(),
                password_file.display().to_string(),
            ),
            ("CARE_MAIL_FROM".into(), login.to_owned()),
            (
                "CARE_MAIL_ALLOWED_RECIPIENT_DOMAINS".into(),
                DEMO_ALLOWED_DOMAIN.to_owned(),
            ),
        ]
    }

    /// A copy of `login`'s `mailbox`.
    pub fn mailbox(&self, login: &str, mailbox: &str) -> Option<Mailbox> {
        self.store.mailbox(login, mailbox)
    }

    /// Stores `raw` in `login`'s `mailbox` (created if needed), as a delivery would.
    pub fn add(&self, login: &str, mailbox: &str, raw: &[u8], at: DateTime<Utc>) -> u32 {
        self.store.create(login, mailbox);
        let key = store::mailbox_key(mailbox);
        self.store.with_account(login, |a| {
            a.mailboxes
                .get_mut(&key)
                .map_or(0, |m| m.add(raw.to_vec(), BTreeSet::new(), at))
        })
    }

    /// Every message the SMTP side accepted, in order.
    pub fn submissions(&self) -> Vec<Submission> {
        self.store.submissions()
    }

    /// How many IMAP logins succeeded so far.
    pub fn logins(&self) -> usize {
        self.store.logins()
    }

    /// The next FETCH answer stops halfway and never finishes.
    pub fn stall_next_fetch(&self) {
        self.store.stall_next_fetch.store(true, Ordering::SeqCst);
    }

    /// Every open IMAP connection is closed at its next command, unanswered (a server restart
    /// or an idle timeout, as a client meets it).
    pub fn drop_connections(&self) {
        self.store.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Every account's password becomes `password` (a rotation): new connections must log in
    /// with it; one logged in before keeps its session, as IMAP servers do.
    pub fn set_password(&self, password: &str) {
        *self
            .store
            .password
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(password.to_owned());
    }

    /// While on, every message is refused at the end of DATA (554).
    pub fn refuse_submissions(&self, on: bool) {
        self.store.refuse_submissions.store(on, Ordering::SeqCst);
    }
}

impl Drop for FakeMail {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    imap: std::net::TcpListener,
    smtp: std::net::TcpListener,
    store: Arc<Store>,
    stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let (Ok(imap), Ok(smtp)) = (TcpListener::from_std(imap), TcpListener::from_std(smtp)) else {
        return;
    };
    let accept = async {
        loop {
            tokio::select! {
                Ok((stream, _)) = imap.accept() => {
                    tokio::spawn(imap::serve(stream, Arc::clone(&store), store.password()));
                }
                Ok((stream, _)) = smtp.accept() => {
                    tokio::spawn(smtp::serve(stream, Arc::clone(&store), store.password()));
                }
            }
        }
    };
    tokio::select! {
        () = accept => {}
        _ = stopped => {}
    }
}

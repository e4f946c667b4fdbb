//! The fake's mail store: accounts (any login with the fake's password, as Dovecot's static
//! passdb), each with mailboxes of messages (UID, flags, internal date, raw bytes); the SMTP
//! side delivers into it and the IMAP side reads it. Also the knobs tests turn: a stall in the
//! next FETCH answer, dropping every connection, and counters of logins and submissions.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

use chrono::{DateTime, Utc};

/// A stored message.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    pub uid: u32,
    pub flags: BTreeSet<String>,
    pub internal_date: DateTime<Utc>,
    pub raw: Vec<u8>,
}

/// A mailbox.
#[derive(Debug, Clone)]
pub struct Mailbox {
    pub uid_validity: u32,
    pub next_uid: u32,
    pub messages: Vec<StoredMessage>,
}

impl Mailbox {
    fn new(uid_validity: u32) -> Self {
        Mailbox {
            uid_validity,
            next_uid: 1,
            messages: Vec::new(),
        }
    }

    /// Adds a message; its UID.
    pub fn add(&mut self, raw: Vec<u8>, flags: BTreeSet<String>, at: DateTime<Utc>) -> u32 {
        let uid = self.next_uid;
        self.next_uid += 1;
        self.messages.push(StoredMessage {
            uid,
            flags,
            internal_date: at,
            raw,
        });
        uid
    }
}

/// One account's mailboxes (an INBOX always exists).
#[derive(Debug, Clone)]
pub struct Account {
    pub mailboxes: BTreeMap<String, Mailbox>,
}

/// A message the SMTP side accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// The authenticated login.
    pub login: String,
    pub mail_from: String,
    pub recipients: Vec<String>,
    pub raw: Vec<u8>,
}

#[derive(Debug, Default)]
struct Data {
    accounts: HashMap<String, Account>,
    submissions: Vec<Submission>,
    next_validity: u32,
}

/// Everything both protocol sides share.
#[derive(Debug, Default)]
pub struct Store {
    data: Mutex<Data>,
    pub(crate) stall_next_fetch: AtomicBool,
    pub(crate) generation: AtomicU64,
    pub(crate) logins: AtomicUsize,
    pub(crate) refuse_submissions: AtomicBool,
    /// Every account's password; `None`: [`super::FAKE_PASSWORD`].
    pub(crate) password: RwLock<Option<String>>,
}

/// Canonical mailbox name: INBOX is case-insensitive.
pub fn mailbox_key(name: &str) -> String {
    if name.eq_ignore_ascii_case("INBOX") {
        "INBOX".to_owned()
    } else {
        name.to_owned()
    }
}

impl Store {
    /// The password a new connection must log in with.
    pub(crate) fn password(&self) -> String {
        self.password
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| super::FAKE_PASSWORD.to_owned())
    }

    fn lock(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on `login`'s account, creating it (with an INBOX) on first use.
    pub fn with_account<T>(&self, login: &str, f: impl FnOnce(&mut Account) -> T) -> T {
        let mut data = self.lock();
        data.next_validity += 1;
        let validity = 1_000 + data.next_validity;
        let account = data
            .accounts
            .entry(login.to_ascii_lowercase())
            .or_insert_with(|| Account {
                mailboxes: BTreeMap::from([("INBOX".to_owned(), Mailbox::new(validity))]),
            });
        f(account)
    }

    /// Creates `mailbox` for `login`; false when it exists.
    pub fn create(&self, login: &str, mailbox: &str) -> bool {
        let validity = {
            let mut data = self.lock();
            data.next_validity += 1;
            2_000 + data.next_validity
        };
        self.with_account(login, |a| {
            let key = mailbox_key(mailbox);
            match a.mailboxes.entry(key) {
                std::collections::btree_map::Entry::Occupied(_) => false,
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(Mailbox::new(validity));
                    true
                }
            }
        })
    }

    /// Delivers `raw` to `login`'s INBOX (what the SMTP side does for each recipient).
    pub fn deliver(&self, login: &str, raw: Vec<u8>, at: DateTime<Utc>) -> u32 {
        self.with_account(login, |a| {
            a.mailboxes
                .entry("INBOX".to_owned())
                .or_insert_with(|| Mailbox::new(1))
                .add(raw, BTreeSet::new(), at)
        })
    }

    pub fn submit(&self, submission: Submission) {
        self.lock().submissions.push(submission);
    }

    pub fn submissions(&self) -> Vec<Submission> {
        self.lock().submissions.clone()
    }

    /// A copy of `login`'s `mailbox`, if it exists.
    pub fn mailbox(&self, login: &str, mailbox: &str) -> Option<Mailbox> {
        self.with_account(login, |a| a.mailboxes.get(&mailbox_key(mailbox)).cloned())
    }

    pub fn logins(&self) -> usize {
        self.logins.load(Ordering::SeqCst)
    }
}

//! The IMAP side of the mailbox: one session per process, opened on first use and reused,
//! dropped after a failure or when idle too long, and reopened by the next call (a call that
//! meets a connection the server dropped is retried once on a fresh one). Every step runs under
//! [`kit::deadline`](crate::kit::deadline): connecting under the connect bound, each operation
//! under the command bound, so a server that stalls mid-answer yields UPSTREAM_UNAVAILABLE and
//! the half-read session is thrown away. The password is the rotating credential's current
//! value: a rotation drops the session logged in with the old one, and a LOGIN refused with a
//! stale one drops it (see `care_core::rotation`).
//!
//! Reads change nothing: mailboxes are opened with EXAMINE (read-only) and bodies fetched with
//! `BODY.PEEK`, so no read sets `\Seen`; nothing here moves, flags or deletes. The one write,
//! [`ImapClient::append`] (the Sent copy of an approved send), takes the pipeline's permit.

use std::sync::Arc;
use std::time::Instant;

use futures::TryStreamExt;
use futures::future::BoxFuture;
use tokio::sync::Mutex;

use care_core::env::ExposeSecret;
use care_core::error::{ErrorCode, ToolError};
use care_core::pipeline::WritePermit;
use care_core::rotation::{Credential, RotatingSecret};

use super::config::MailLimits;
use super::endpoint::{Endpoint, Security};
use super::stream::{self, MailStream};
use super::structure::{self, Leaf};
use crate::kit::deadline;

pub type Session = async_imap::Session<MailStream>;

/// Header fields every listing reads (nothing else of the header is fetched).
pub const LIST_FIELDS: &str =
    "FROM TO REPLY-TO SUBJECT DATE MESSAGE-ID IN-REPLY-TO REFERENCES CONTENT-TYPE";
/// At most this much of those header fields is fetched per message (a 1 MB header line is cut).
pub const MAX_HEADER_BYTES: u32 = 64 * 1024;

/// What an IMAP operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    #[error("mailbox or message not found: {0}")]
    NotFound(String),
    #[error("{0}")]
    Imap(#[from] async_imap::error::Error),
    #[error("answer not understood: {0}")]
    Malformed(&'static str),
    /// LOGIN answered NO: the password was refused.
    #[error("login refused")]
    LoginRefused,
}

impl OpError {
    fn code(&self) -> ErrorCode {
        match self {
            OpError::NotFound(_) => ErrorCode::NotFound,
            OpError::Imap(async_imap::error::Error::No(_) | async_imap::error::Error::Bad(_)) => {
                ErrorCode::UpstreamRejected
            }
            OpError::LoginRefused => ErrorCode::UpstreamRejected,
            OpError::Imap(_) | OpError::Malformed(_) => ErrorCode::UpstreamUnavailable,
        }
    }

    /// The connection is gone (the server closed it, or it broke): worth one fresh try.
    fn connection_lost(&self) -> bool {
        matches!(
            self,
            OpError::Imap(
                async_imap::error::Error::Io(_) | async_imap::error::Error::ConnectionLost
            )
        )
    }
}

/// A mailbox as EXAMINE reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailboxInfo {
    pub uid_validity: u32,
    pub exists: u32,
}

/// One message's metadata: what listing it costs (no body).
#[derive(Debug, Clone)]
pub struct Summary {
    pub uid: u32,
    pub flags: Vec<String>,
    pub size: u32,
    pub internal_date: Option<chrono::DateTime<chrono::Utc>>,
    /// The listed header fields, at most [`MAX_HEADER_BYTES`].
    pub header: Vec<u8>,
    /// Leaf parts from BODYSTRUCTURE (text bodies and attachments), in order.
    pub leaves: Vec<Leaf>,
}

struct Live {
    session: Session,
    last_used: Instant,
    /// The password generation it logged in with.
    generation: u64,
}

/// The IMAP client of one account.
pub struct ImapClient {
    endpoint: Endpoint,
    username: String,
    password: Arc<RotatingSecret>,
    limits: MailLimits,
    connector: Option<tokio_rustls::TlsConnector>,
    live: Mutex<Option<Live>>,
}

impl std::fmt::Debug for ImapClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImapClient")
            .field("endpoint", &self.endpoint)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

fn io_error(e: std::io::Error) -> OpError {
    OpError::Imap(async_imap::error::Error::Io(e))
}

impl ImapClient {
    pub fn new(
        endpoint: Endpoint,
        username: String,
        password: Arc<RotatingSecret>,
        limits: MailLimits,
    ) -> std::io::Result<Self> {
        let connector = match endpoint.security {
            Security::Plain => None,
            Security::Tls | Security::StartTls => Some(stream::connector()?),
        };
        Ok(ImapClient {
            endpoint,
            username,
            password,
            limits,
            connector,
            live: Mutex::new(None),
        })
    }

    /// TCP (and TLS), greeting, STARTTLS when asked for, LOGIN with `password`.
    async fn open(&self, password: &Credential) -> Result<Session, OpError> {
        let (host, port) = self.endpoint.address();
        let tcp = stream::connect(&host, port).await.map_err(io_error)?;
        let stream = match (&self.endpoint.security, &self.connector) {
            (Security::Tls, Some(c)) => stream::upgrade(c, &host, tcp).await.map_err(io_error)?,
            _ => MailStream::plain(tcp),
        };
        let mut client = async_imap::Client::new(stream);
        greeting(&mut client).await?;
        if let (Security::StartTls, Some(c)) = (&self.endpoint.security, &self.connector) {
            client.run_command_and_check_ok("STARTTLS", None).await?;
            let Some(tcp) = client.into_inner().into_plain() else {
                return Err(OpError::Malformed("STARTTLS on a TLS stream"));
            };
            client =
                async_imap::Client::new(stream::upgrade(c, &host, tcp).await.map_err(io_error)?);
        }
        match client
            .login(&self.username, password.value.expose_secret())
            .await
        {
            Ok(session) => Ok(session),
            Err((async_imap::error::Error::No(_), _)) => {
                self.password.refused(password.generation);
                Err(OpError::LoginRefused)
            }
            Err((e, _)) => Err(OpError::Imap(e)),
        }
    }

    /// Runs `op` on the session (opening one if needed) under the command bound. A reused
    /// session the server dropped is replaced once; any other failure drops the session, and so
    /// does a rotated password (a session logged in with the old one is never reused).
    pub async fn run<T, F>(&self, what: &str, op: F) -> Result<T, ToolError>
    where
        F: for<'s> Fn(&'s mut Session) -> BoxFuture<'s, Result<T, OpError>>,
    {
        let mut live = self.live.lock().await;
        for attempt in 0..2 {
            let password = self.password.current()?;
            if live
                .as_ref()
                .is_some_and(|l| l.last_used.elapsed() > self.limits.idle)
            {
                // Idle too long: the server may have closed it; a new one costs a login.
                *live = None;
            }
            if live
                .as_ref()
                .is_some_and(|l| l.generation != password.generation)
            {
                tracing::info!("mail password rotated: the IMAP session logs in anew");
                *live = None;
            }
            let reused = live.is_some();
            if !reused {
                let session = deadline(
                    &format!("imap connect to {}", self.endpoint.host),
                    self.limits.connect,
                    self.open(&password),
                    OpError::code,
                )
                .await?;
                *live = Some(Live {
                    session,
                    last_used: Instant::now(),
                    generation: password.generation,
                });
            }
            let Some(current) = live.as_mut() else {
                return Err(ToolError::new(ErrorCode::Internal).with_detail("imap session missing"));
            };
            let mut lost = false;
            let mut result = deadline(what, self.limits.command, op(&mut current.session), |e| {
                lost = e.connection_lost();
                e.code()
            })
            .await;
            if result.is_ok() && current.session.get_ref().closed_by_peer() {
                // async-imap ends an answer at the end of the stream as if it were complete (an
                // EXAMINE of an empty mailbox, a SEARCH without UIDs): an answer the server cut
                // off by closing is a lost connection, never an answer.
                lost = true;
                result = Err(ToolError::new(ErrorCode::UpstreamUnavailable)
                    .with_detail(format!("{what}: the server closed the connection")));
            }
            match result {
                Ok(value) => {
                    current.last_used = Instant::now();
                    return Ok(value);
                }
                Err(e) => {
                    // Whatever happened, the session's state is unknown: never reuse it.
                    *live = None;
                    if !(reused && lost && attempt == 0) {
                        return Err(e);
                    }
                    tracing::info!(what, "imap session was dropped by the server; reopening");
                }
            }
        }
        Err(ToolError::new(ErrorCode::UpstreamUnavailable).with_detail(format!("{what}: gave up")))
    }

    /// Forgets the session (tests: the next call must open a new one).
    pub async fn reset(&self) {
        *self.live.lock().await = None;
    }

    /// EXAMINE (read-only) `mailbox`.
    pub async fn examine(&self, mailbox: &str) -> Result<MailboxInfo, ToolError> {
        let mailbox = mailbox.to_owned();
        self.run("imap EXAMINE", move |s| {
            let mailbox = mailbox.clone();
            Box::pin(async move { examine(s, &mailbox).await })
        })
        .await
    }

    /// `UID SEARCH <criteria>` in `mailbox` (opened read-only): the UIDs, ascending.
    pub async fn search(
        &self,
        mailbox: &str,
        criteria: &str,
    ) -> Result<(MailboxInfo, Vec<u32>), ToolError> {
        let (mailbox, criteria) = (mailbox.to_owned(), criteria.to_owned());
        self.run("imap UID SEARCH", move |s| {
            let (mailbox, criteria) = (mailbox.clone(), criteria.clone());
            Box::pin(async move {
                let info = examine(s, &mailbox).await?;
                let mut uids: Vec<u32> = s.uid_search(&criteria).await?.into_iter().collect();
                uids.sort_unstable();
                Ok((info, uids))
            })
        })
        .await
    }

    /// Metadata of `uids` in `mailbox`: flags, size, dates, the listed header fields (bounded)
    /// and the body structure. Nothing of any body is fetched.
    pub async fn summaries(&self, mailbox: &str, uids: &[u32]) -> Result<Vec<Summary>, ToolError> {
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        let set = uid_set(uids);
        let mailbox = mailbox.to_owned();
        let query = format!(
            "(UID FLAGS RFC822.SIZE INTERNALDATE BODYSTRUCTURE BODY.PEEK[HEADER.FIELDS ({LIST_FIELDS})]<0.{MAX_HEADER_BYTES}>)"
        );
        self.run("imap UID FETCH (summaries)", move |s| {
            let (mailbox, set, query) = (mailbox.clone(), set.clone(), query.clone());
            Box::pin(async move {
                examine(s, &mailbox).await?;
                let fetches: Vec<async_imap::types::Fetch> =
                    s.uid_fetch(&set, &query).await?.try_collect().await?;
                Ok(fetches.iter().filter_map(summary_of).collect())
            })
        })
        .await
    }

    /// At most `max` bytes of the raw (still transfer-encoded) content of part `section` of
    /// message `uid`, with `BODY.PEEK`. `None` when the server has no such part.
    pub async fn part(
        &self,
        mailbox: &str,
        uid: u32,
        section: &[u32],
        max: u32,
    ) -> Result<Option<Vec<u8>>, ToolError> {
        let path: Vec<String> = section.iter().map(u32::to_string).collect();
        let path = path.join(".");
        let mailbox = mailbox.to_owned();
        let section = section.to_vec();
        self.run("imap UID FETCH (part)", move |s| {
            let (mailbox, path, section) = (mailbox.clone(), path.clone(), section.clone());
            Box::pin(async move {
                examine(s, &mailbox).await?;
                let query = format!("(UID BODY.PEEK[{path}]<0.{max}>)");
                let fetches: Vec<async_imap::types::Fetch> = s
                    .uid_fetch(uid.to_string(), &query)
                    .await?
                    .try_collect()
                    .await?;
                let wanted = async_imap::imap_proto::SectionPath::Part(section, None);
                Ok(fetches
                    .iter()
                    .find(|f| f.uid == Some(uid))
                    .and_then(|f| f.section(&wanted))
                    .map(<[u8]>::to_vec))
            })
        })
        .await
    }

    /// APPENDs `raw` to `mailbox` flagged `\Seen` (the copy of an approved send in the Sent
    /// mailbox), creating the mailbox once if the server asks for it. Only with a permit.
    pub async fn append(
        &self,
        _permit: &WritePermit<'_>,
        mailbox: &str,
        raw: &[u8],
    ) -> Result<(), ToolError> {
        let (mailbox, raw) = (mailbox.to_owned(), raw.to_vec());
        self.run("imap APPEND", move |s| {
            let (mailbox, raw) = (mailbox.clone(), raw.clone());
            Box::pin(async move {
                match s.append(&mailbox, Some("(\\Seen)"), None, &raw).await {
                    Ok(()) => Ok(()),
                    // `NO [TRYCREATE]` (as the answer, or instead of the literal's go-ahead: then
                    // async-imap says Append): the Sent mailbox does not exist yet.
                    Err(async_imap::error::Error::No(_) | async_imap::error::Error::Append) => {
                        s.create(&mailbox).await?;
                        s.append(&mailbox, Some("(\\Seen)"), None, &raw).await?;
                        Ok(())
                    }
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
    }
}

async fn greeting(client: &mut async_imap::Client<MailStream>) -> Result<(), OpError> {
    match client.read_response().await.map_err(io_error)? {
        Some(_) => Ok(()),
        None => Err(OpError::Imap(async_imap::error::Error::ConnectionLost)),
    }
}

async fn examine(s: &mut Session, mailbox: &str) -> Result<MailboxInfo, OpError> {
    match s.examine(mailbox).await {
        Ok(m) => Ok(MailboxInfo {
            uid_validity: m.uid_validity.unwrap_or(0),
            exists: m.exists,
        }),
        Err(async_imap::error::Error::No(_)) => Err(OpError::NotFound(mailbox.to_owned())),
        Err(e) => Err(e.into()),
    }
}

/// `1,5,7` (UIDs are few per call: a page, a thread).
pub fn uid_set(uids: &[u32]) -> String {
    uids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn summary_of(fetch: &async_imap::types::Fetch) -> Option<Summary> {
    let uid = fetch.uid?;
    let flags = fetch
        .flags()
        .filter_map(|f| {
            let text = match f {
                async_imap::types::Flag::Seen => "\\Seen".to_owned(),
                async_imap::types::Flag::Answered => "\\Answered".to_owned(),
                async_imap::types::Flag::Flagged => "\\Flagged".to_owned(),
                async_imap::types::Flag::Deleted => "\\Deleted".to_owned(),
                async_imap::types::Flag::Draft => "\\Draft".to_owned(),
                async_imap::types::Flag::Recent => "\\Recent".to_owned(),
                async_imap::types::Flag::Custom(c) => c.to_string(),
                _ => return None,
            };
            // Keywords are server or sender supplied: only plain atoms pass.
            (text.len() <= 64
                && text
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"\\$_-.".contains(&b)))
            .then_some(text)
        })
        .collect();
    Some(Summary {
        uid,
        flags,
        size: fetch.size.unwrap_or(0),
        internal_date: fetch.internal_date().map(|d| d.with_timezone(&chrono::Utc)),
        header: fetch.header().map(<[u8]>::to_vec).unwrap_or_default(),
        leaves: fetch
            .bodystructure()
            .map(structure::leaves)
            .unwrap_or_default(),
    })
}

//! The fake's IMAP side: commands parsed by imap-codec (a maintained IMAP grammar, literals and
//! LITERAL+ included), answered by hand from the store. It serves what a mail client needs to
//! read a support inbox and file a sent copy: CAPABILITY, NOOP, LOGIN, SELECT, EXAMINE, CREATE,
//! APPEND, SEARCH, FETCH (with UID forms) and LOGOUT. A non-PEEK body fetch in a mailbox opened
//! with SELECT sets `\Seen`, as a real server does, so a client that forgets PEEK is caught.
//! Anything else is answered BAD, never approximated.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::Utc;
use imap_codec::CommandCodec;
use imap_codec::decode::{CommandDecodeError, Decoder};
use imap_codec::imap_types::command::{Command, CommandBody};
use imap_codec::imap_types::core::LiteralMode;
use imap_codec::imap_types::fetch::{Macro, MacroOrMessageDataItemNames, MessageDataItemName};
use imap_codec::imap_types::flag::Flag;
use imap_codec::imap_types::mailbox::Mailbox;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::mime;
use super::render;
use super::search;
use super::store::{Store, mailbox_key};

const CAPABILITIES: &str = "IMAP4rev1 LITERAL+ UIDPLUS";
/// The largest command (an APPEND literal included) the fake buffers.
const MAX_COMMAND_BYTES: usize = 40 * 1024 * 1024;

struct Conn {
    store: Arc<Store>,
    password: String,
    login: Option<String>,
    selected: Option<(String, bool)>,
    generation: u64,
}

enum Next {
    Continue,
    Close,
}

fn mailbox_name(m: &Mailbox<'_>) -> String {
    match m {
        Mailbox::Inbox => "INBOX".to_owned(),
        Mailbox::Other(o) => mailbox_key(&String::from_utf8_lossy(o.as_ref())),
    }
}

fn flag_text(f: &Flag<'_>) -> String {
    f.to_string()
}

/// Serves one IMAP connection until LOGOUT, EOF, or the store's generation changes.
pub async fn serve(mut stream: TcpStream, store: Arc<Store>, password: String) {
    let generation = store.generation.load(Ordering::SeqCst);
    let mut conn = Conn {
        store,
        password,
        login: None,
        selected: None,
        generation,
    };
    let greeting = format!("* OK [CAPABILITY {CAPABILITIES}] care-mcp fake IMAP ready\r\n");
    if stream.write_all(greeting.as_bytes()).await.is_err() {
        return;
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut acknowledged: Option<usize> = None;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let decoded = CommandCodec::default().decode(&buf);
        match decoded {
            Ok((rest, command)) => {
                let used = buf.len() - rest.len();
                if conn.store.generation.load(Ordering::SeqCst) != conn.generation {
                    // The test dropped every connection: close without answering.
                    return;
                }
                let (out, next, stall) = conn.handle(command);
                buf.drain(..used);
                acknowledged = None;
                if stall {
                    // Half an answer, then nothing: the client must give up on its own.
                    let half = out.len() / 2;
                    let _ = stream.write_all(&out[..half]).await;
                    let _ = stream.flush().await;
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    return;
                }
                if stream.write_all(&out).await.is_err() {
                    return;
                }
                if matches!(next, Next::Close) {
                    return;
                }
                continue;
            }
            Err(CommandDecodeError::LiteralFound { length, mode, tag }) => {
                if usize::try_from(length).unwrap_or(usize::MAX) > MAX_COMMAND_BYTES {
                    let _ = stream
                        .write_all(format!("{} NO Literal too large\r\n", tag.inner()).as_bytes())
                        .await;
                    return;
                }
                if mode == LiteralMode::Sync && acknowledged != Some(buf.len()) {
                    acknowledged = Some(buf.len());
                    if stream
                        .write_all(b"+ Ready for literal data\r\n")
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
            Err(CommandDecodeError::Incomplete) => {}
            Err(CommandDecodeError::Failed) => {
                // Answer the unparsable line and drop it.
                let end = buf
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(buf.len(), |p| p + 1);
                let tag = buf[..end]
                    .split(|b| *b == b' ')
                    .next()
                    .filter(|t| !t.is_empty() && t.iter().all(u8::is_ascii_alphanumeric))
                    .map_or("*".to_owned(), |t| String::from_utf8_lossy(t).into_owned());
                buf.drain(..end);
                if stream
                    .write_all(format!("{tag} BAD Command not understood\r\n").as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
                continue;
            }
        }
        if buf.len() > MAX_COMMAND_BYTES {
            return;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

impl Conn {
    /// The answer to one command, what to do next, and whether to stall in it.
    fn handle(&mut self, command: Command<'_>) -> (Vec<u8>, Next, bool) {
        let tag = command.tag.inner().to_owned();
        let ok = |text: &str| format!("{tag} OK {text}\r\n").into_bytes();
        let no = |text: &str| format!("{tag} NO {text}\r\n").into_bytes();
        let bad = |text: &str| format!("{tag} BAD {text}\r\n").into_bytes();
        let authed = self.login.clone();
        match (command.body, authed) {
            (CommandBody::Capability, _) => {
                let mut out = format!("* CAPABILITY {CAPABILITIES}\r\n").into_bytes();
                out.extend(ok("CAPABILITY completed"));
                (out, Next::Continue, false)
            }
            (CommandBody::Noop, _) => (ok("NOOP completed"), Next::Continue, false),
            (CommandBody::Logout, _) => {
                let mut out = b"* BYE Logging out\r\n".to_vec();
                out.extend(ok("Logout completed"));
                (out, Next::Close, false)
            }
            (CommandBody::Login { username, password }, None) => {
                if password.declassify().as_ref() == self.password.as_bytes() {
                    let login = String::from_utf8_lossy(username.as_ref()).to_ascii_lowercase();
                    self.store.with_account(&login, |_| ());
                    self.store.logins.fetch_add(1, Ordering::SeqCst);
                    self.login = Some(login);
                    (
                        ok(&format!("[CAPABILITY {CAPABILITIES}] Logged in")),
                        Next::Continue,
                        false,
                    )
                } else {
                    (
                        no("[AUTHENTICATIONFAILED] Authentication failed."),
                        Next::Continue,
                        false,
                    )
                }
            }
            (_, None) => (bad("Log in first"), Next::Continue, false),
            (CommandBody::Select { mailbox }, Some(login)) => (
                self.open(&tag, &login, &mailbox_name(&mailbox), false),
                Next::Continue,
                false,
            ),
            (CommandBody::Examine { mailbox }, Some(login)) => (
                self.open(&tag, &login, &mailbox_name(&mailbox), true),
                Next::Continue,
                false,
            ),
            (CommandBody::Create { mailbox }, Some(login)) => {
                if self.store.create(&login, &mailbox_name(&mailbox)) {
                    (ok("Create completed"), Next::Continue, false)
                } else {
                    (no("[ALREADYEXISTS] Mailbox exists"), Next::Continue, false)
                }
            }
            (
                CommandBody::Append {
                    mailbox,
                    flags,
                    date,
                    message,
                },
                Some(login),
            ) => {
                let name = mailbox_name(&mailbox);
                let flags: BTreeSet<String> = flags.iter().map(flag_text).collect();
                let raw = message.data().to_vec();
                let at = date.map_or_else(Utc::now, |d| d.as_ref().with_timezone(&Utc));
                let appended = self.store.with_account(&login, |a| {
                    a.mailboxes
                        .get_mut(&name)
                        .map(|m| (m.uid_validity, m.add(raw, flags, at)))
                });
                match appended {
                    Some((validity, uid)) => (
                        ok(&format!("[APPENDUID {validity} {uid}] Append completed")),
                        Next::Continue,
                        false,
                    ),
                    None => (
                        no("[TRYCREATE] Mailbox doesn't exist"),
                        Next::Continue,
                        false,
                    ),
                }
            }
            (CommandBody::Search { criteria, uid, .. }, Some(login)) => (
                self.search(&tag, &login, &criteria, uid),
                Next::Continue,
                false,
            ),
            (
                CommandBody::Fetch {
                    sequence_set,
                    macro_or_item_names,
                    uid,
                },
                Some(login),
            ) => {
                let out = self.fetch(&tag, &login, &sequence_set, macro_or_item_names, uid);
                let stall = self.store.stall_next_fetch.swap(false, Ordering::SeqCst);
                (out, Next::Continue, stall)
            }
            (_, Some(_)) => (
                bad("Command not supported by the fake"),
                Next::Continue,
                false,
            ),
        }
    }

    fn open(&mut self, tag: &str, login: &str, name: &str, read_only: bool) -> Vec<u8> {
        let Some(mailbox) = self.store.mailbox(login, name) else {
            self.selected = None;
            return format!("{tag} NO [NONEXISTENT] Mailbox doesn't exist\r\n").into_bytes();
        };
        self.selected = Some((name.to_owned(), read_only));
        format!(
            "* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)\r\n\
             * OK [PERMANENTFLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft \\*)] Flags permitted.\r\n\
             * {} EXISTS\r\n* 0 RECENT\r\n\
             * OK [UIDVALIDITY {}] UIDs valid\r\n* OK [UIDNEXT {}] Predicted next UID\r\n\
             {tag} OK [{}] {} completed\r\n",
            mailbox.messages.len(),
            mailbox.uid_validity,
            mailbox.next_uid,
            if read_only { "READ-ONLY" } else { "READ-WRITE" },
            if read_only { "Examine" } else { "Select" },
        )
        .into_bytes()
    }

    fn search(
        &self,
        tag: &str,
        login: &str,
        criteria: &imap_codec::imap_types::search::SearchKey<'_>,
        uid: bool,
    ) -> Vec<u8> {
        let Some((name, _)) = &self.selected else {
            return format!("{tag} BAD No mailbox selected\r\n").into_bytes();
        };
        let Some(mailbox) = self.store.mailbox(login, name) else {
            return format!("{tag} NO Mailbox is gone\r\n").into_bytes();
        };
        let largest_seq = u32::try_from(mailbox.messages.len()).unwrap_or(u32::MAX);
        let largest_uid = mailbox.next_uid.saturating_sub(1);
        let mut hits = Vec::new();
        for (i, m) in mailbox.messages.iter().enumerate() {
            let seq = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let e = mime::parse(&m.raw);
            match search::matches(criteria, m, &e, seq, largest_seq, largest_uid) {
                Ok(true) => hits.push(if uid { m.uid } else { seq }),
                Ok(false) => {}
                Err(search::Unsupported) => {
                    return format!("{tag} BAD Search key not supported by the fake\r\n")
                        .into_bytes();
                }
            }
        }
        let list: String = hits.iter().map(|n| format!(" {n}")).collect();
        format!("* SEARCH{list}\r\n{tag} OK Search completed\r\n").into_bytes()
    }

    fn fetch(
        &self,
        tag: &str,
        login: &str,
        set: &imap_codec::imap_types::sequence::SequenceSet,
        items: MacroOrMessageDataItemNames<'_>,
        uid: bool,
    ) -> Vec<u8> {
        let Some((name, read_only)) = self.selected.clone() else {
            return format!("{tag} BAD No mailbox selected\r\n").into_bytes();
        };
        let mut items = match items {
            MacroOrMessageDataItemNames::Macro(m) => {
                let mut v = vec![
                    MessageDataItemName::Flags,
                    MessageDataItemName::InternalDate,
                    MessageDataItemName::Rfc822Size,
                ];
                if matches!(m, Macro::Full) {
                    v.push(MessageDataItemName::BodyStructure);
                }
                v
            }
            MacroOrMessageDataItemNames::MessageDataItemNames(v) => v,
        };
        if uid && !items.contains(&MessageDataItemName::Uid) {
            items.insert(0, MessageDataItemName::Uid);
        }
        let mut out = Vec::new();
        let store = Arc::clone(&self.store);
        let result = store.with_account(login, |account| {
            let mailbox = account.mailboxes.get_mut(&name)?;
            let largest_seq = u32::try_from(mailbox.messages.len()).unwrap_or(u32::MAX);
            let largest_uid = mailbox.next_uid.saturating_sub(1);
            for (i, m) in mailbox.messages.iter_mut().enumerate() {
                let seq = u32::try_from(i + 1).unwrap_or(u32::MAX);
                let wanted = if uid {
                    search::in_set(set, m.uid, largest_uid)
                } else {
                    search::in_set(set, seq, largest_seq)
                };
                if !wanted {
                    continue;
                }
                let e = mime::parse(&m.raw);
                let sets_seen = items.iter().any(|i| {
                    matches!(
                        i,
                        MessageDataItemName::BodyExt { peek: false, .. }
                            | MessageDataItemName::Rfc822
                    )
                });
                let changed = sets_seen && !read_only && m.flags.insert("\\Seen".to_owned());
                let flags_attr = |m: &super::store::StoredMessage| {
                    let flags: Vec<&str> = m.flags.iter().map(String::as_str).collect();
                    format!("FLAGS ({})", flags.join(" ")).into_bytes()
                };
                let mut attrs: Vec<Vec<u8>> = Vec::new();
                for item in &items {
                    attrs.push(match item {
                        MessageDataItemName::Uid => format!("UID {}", m.uid).into_bytes(),
                        MessageDataItemName::Flags => flags_attr(m),
                        MessageDataItemName::Rfc822Size => {
                            format!("RFC822.SIZE {}", m.raw.len()).into_bytes()
                        }
                        MessageDataItemName::InternalDate => format!(
                            "INTERNALDATE \"{}\"",
                            render::internal_date(m.internal_date)
                        )
                        .into_bytes(),
                        MessageDataItemName::BodyStructure => {
                            let mut v = b"BODYSTRUCTURE ".to_vec();
                            v.extend(render::bodystructure(&m.raw, &e));
                            v
                        }
                        MessageDataItemName::BodyExt {
                            section, partial, ..
                        } => {
                            let bytes = render::section_bytes(&m.raw, &e, section.as_ref())
                                .unwrap_or_default();
                            let (bytes, origin) = match partial {
                                Some((offset, length)) => {
                                    let start = usize::try_from(*offset)
                                        .unwrap_or(usize::MAX)
                                        .min(bytes.len());
                                    let end = start
                                        .saturating_add(
                                            usize::try_from(length.get()).unwrap_or(usize::MAX),
                                        )
                                        .min(bytes.len());
                                    (bytes[start..end].to_vec(), format!("<{offset}>"))
                                }
                                None => (bytes, String::new()),
                            };
                            let mut v = format!(
                                "BODY[{}]{origin} ",
                                render::section_name(section.as_ref())
                            )
                            .into_bytes();
                            v.extend(render::literal(&bytes));
                            v
                        }
                        MessageDataItemName::Rfc822 => {
                            let mut v = b"RFC822 ".to_vec();
                            v.extend(render::literal(&m.raw));
                            v
                        }
                        MessageDataItemName::Rfc822Header => {
                            let mut v = b"RFC822.HEADER ".to_vec();
                            v.extend(render::literal(&m.raw[e.header.clone()]));
                            v
                        }
                        _ => return None,
                    });
                }
                if changed && !items.contains(&MessageDataItemName::Flags) {
                    // The flag changed: the answer says so, as servers do.
                    attrs.push(flags_attr(m));
                }
                let mut line = format!("* {seq} FETCH (").into_bytes();
                line.extend(attrs.join(&b' '));
                line.extend_from_slice(b")\r\n");
                out.extend(line);
            }
            Some(())
        });
        match result {
            Some(()) => {
                out.extend(format!("{tag} OK Fetch completed\r\n").into_bytes());
                out
            }
            None => format!("{tag} BAD Fetch item not supported by the fake\r\n").into_bytes(),
        }
    }
}

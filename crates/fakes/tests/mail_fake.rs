//! The mail fake speaks the protocols as a real server does where the mail tests rely on it: a
//! body fetched without PEEK in a SELECTed mailbox becomes `\Seen` (so a client that forgot
//! PEEK would be caught), PEEK and EXAMINE change nothing, a wrong password is refused, APPEND
//! to a missing mailbox asks for TRYCREATE, an SMTP message needs AUTH and lands in the
//! recipient's INBOX, and unknown commands are BAD rather than guessed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use care_fakes::mail::{FAKE_PASSWORD, FakeMail, SUPPORT_ADDRESS, demo_seed};

struct Line {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Line {
    fn connect(url: &str) -> Line {
        let address = url.split("://").nth(1).unwrap();
        let stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Line {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    fn read_line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        line
    }

    /// Sends `command` tagged `tag`; every line up to and including the tagged answer.
    fn command(&mut self, tag: &str, command: &str) -> String {
        write!(self.writer, "{tag} {command}\r\n").unwrap();
        let mut out = String::new();
        loop {
            let line = self.read_line();
            assert!(!line.is_empty(), "connection closed after {out}");
            out.push_str(&line);
            if line.starts_with(&format!("{tag} ")) {
                return out;
            }
        }
    }
}

fn login(fake: &FakeMail) -> Line {
    let mut imap = Line::connect(fake.imap_url());
    assert!(imap.read_line().starts_with("* OK"));
    let answer = imap.command("a1", &format!("LOGIN {SUPPORT_ADDRESS} {FAKE_PASSWORD}"));
    assert!(answer.contains("a1 OK"), "{answer}");
    imap
}

fn seen(fake: &FakeMail) -> usize {
    fake.mailbox(SUPPORT_ADDRESS, "INBOX")
        .unwrap()
        .messages
        .iter()
        .filter(|m| m.flags.contains("\\Seen"))
        .count()
}

#[test]
fn peek_and_examine_change_nothing_and_a_plain_fetch_sets_seen() {
    let fake = FakeMail::start(demo_seed()).unwrap();
    let before = seen(&fake);
    let mut imap = login(&fake);
    assert!(imap.command("a2", "EXAMINE INBOX").contains("[READ-ONLY]"));
    let answer = imap.command("a3", "UID FETCH 1:* (UID BODY[TEXT])");
    assert!(answer.contains("a3 OK"), "{answer}");
    assert_eq!(seen(&fake), before, "EXAMINE is read-only");
    assert!(imap.command("a4", "SELECT INBOX").contains("[READ-WRITE]"));
    imap.command("a5", "UID FETCH 1:* (UID BODY.PEEK[])");
    assert_eq!(seen(&fake), before, "PEEK changes nothing");
    // Message 2 (the oldest is seeded as read).
    let answer = imap.command("a6", "FETCH 2 (BODY[])");
    assert!(answer.contains("FLAGS (\\Seen)"), "{answer}");
    assert_eq!(
        seen(&fake),
        before + 1,
        "a plain fetch in SELECT sets \\Seen"
    );
    assert!(
        imap.command("a7", "STORE 1 -FLAGS (\\Seen)")
            .contains("a7 BAD")
    );
    assert!(imap.command("a8", "LOGOUT").contains("* BYE"));
}

#[test]
fn logins_appends_and_unknown_commands() {
    let fake = FakeMail::start(demo_seed()).unwrap();
    let mut imap = Line::connect(fake.imap_url());
    imap.read_line();
    assert!(imap.command("b1", "SELECT INBOX").contains("b1 BAD"));
    assert!(
        imap.command("b2", &format!("LOGIN {SUPPORT_ADDRESS} wrong"))
            .contains("b2 NO [AUTHENTICATIONFAILED]")
    );
    imap.command("b3", &format!("LOGIN {SUPPORT_ADDRESS} {FAKE_PASSWORD}"));
    // LITERAL+: no continuation is asked for.
    let answer = imap.command("b4", "APPEND Archive {5+}\r\nhello");
    assert!(answer.contains("b4 NO [TRYCREATE]"), "{answer}");
    assert!(imap.command("b5", "CREATE Archive").contains("b5 OK"));
    let answer = imap.command("b6", "APPEND Archive (\\Seen) {5+}\r\nhello");
    assert!(answer.contains("b6 OK [APPENDUID"), "{answer}");
    assert_eq!(
        fake.mailbox(SUPPORT_ADDRESS, "Archive")
            .unwrap()
            .messages
            .len(),
        1
    );
    assert!(imap.command("b7", "IDLE").contains("b7 BAD"));
    imap.command("b8", "SELECT INBOX");
    let answer = imap.command("b9", "UID SEARCH SUBJECT \"invoice\"");
    assert!(answer.contains("* SEARCH "), "{answer}");
    assert!(
        imap.command("c1", "UID SEARCH KEYWORD x")
            .contains("c1 BAD")
    );
}

#[test]
fn smtp_needs_auth_and_delivers_to_the_recipients_inbox() {
    let fake = FakeMail::start(demo_seed()).unwrap();
    let mut smtp = Line::connect(fake.smtp_url());
    assert!(smtp.read_line().starts_with("220"));
    let send = |smtp: &mut Line, line: &str| {
        write!(smtp.writer, "{line}\r\n").unwrap();
        let mut out = String::new();
        loop {
            let l = smtp.read_line();
            out.push_str(&l);
            if l.len() < 4 || l.as_bytes()[3] == b' ' {
                return out;
            }
        }
    };
    assert!(send(&mut smtp, "EHLO test").contains("AUTH"));
    let refused = [
        send(&mut smtp, "MAIL FROM:<support@care.test>"),
        send(&mut smtp, "RCPT TO:<kim@example.com>"),
        send(&mut smtp, "DATA"),
    ];
    // mailin refuses a transaction before AUTH as out of sequence (503).
    assert!(refused.iter().all(|r| r.starts_with('5')), "{refused:?}");
    assert!(
        !refused[2].starts_with("354"),
        "no DATA before AUTH: {refused:?}"
    );
    let plain = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .encode(format!("\0{SUPPORT_ADDRESS}\0{FAKE_PASSWORD}"))
    };
    assert!(send(&mut smtp, &format!("AUTH PLAIN {plain}")).starts_with("235"));
    send(&mut smtp, "MAIL FROM:<support@care.test>");
    send(&mut smtp, "RCPT TO:<kim@example.com>");
    assert!(send(&mut smtp, "DATA").starts_with("354"));
    assert!(send(&mut smtp, "Subject: hi\r\n\r\n..dot-stuffed\r\n.").starts_with("250"));
    assert!(send(&mut smtp, "QUIT").starts_with("221"));
    let inbox = fake.mailbox("kim@example.com", "INBOX").unwrap();
    assert_eq!(inbox.messages.len(), 1);
    assert!(String::from_utf8_lossy(&inbox.messages[0].raw).contains("\r\n.dot-stuffed"));
    assert_eq!(fake.submissions().len(), 1);
}

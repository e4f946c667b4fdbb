//! The fake's SMTP side: the dialogue (EHLO, AUTH PLAIN/LOGIN, MAIL, RCPT, DATA with
//! dot-unstuffing, RSET, QUIT) is mailin's SMTP state machine and parser; the fake does the I/O
//! and, for each accepted message, records the submission and delivers a copy to every
//! recipient's INBOX in the store (the customer reads the reply over IMAP, as with Dovecot).

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use chrono::Utc;
use mailin::{Action, AuthMechanism, Handler, Response, SessionBuilder};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::store::{Store, Submission};

/// Longest line or message the fake accepts.
const MAX_MESSAGE_BYTES: usize = 40 * 1024 * 1024;

struct Delivery {
    store: Arc<Store>,
    password: String,
    login: Option<String>,
    from: String,
    recipients: Vec<String>,
    data: Vec<u8>,
}

impl Handler for Delivery {
    fn mail(&mut self, _ip: IpAddr, _domain: &str, from: &str) -> Response {
        self.from = from.to_owned();
        mailin::response::OK
    }

    fn data_start(&mut self, _domain: &str, from: &str, _is8bit: bool, to: &[String]) -> Response {
        if self.login.is_none() {
            return mailin::response::AUTHENTICATION_REQUIRED;
        }
        self.from = from.to_owned();
        self.recipients = to.iter().map(|t| t.to_ascii_lowercase()).collect();
        self.data.clear();
        mailin::response::OK
    }

    fn data(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if self.data.len() + buf.len() > MAX_MESSAGE_BYTES {
            return Err(std::io::Error::other("message too large"));
        }
        self.data.extend_from_slice(buf);
        Ok(())
    }

    fn data_end(&mut self) -> Response {
        if self.store.refuse_submissions.load(Ordering::SeqCst) {
            return mailin::response::TRANSACTION_FAILED;
        }
        let raw = std::mem::take(&mut self.data);
        for rcpt in &self.recipients {
            self.store.deliver(rcpt, raw.clone(), Utc::now());
        }
        self.store.submit(Submission {
            login: self.login.clone().unwrap_or_default(),
            mail_from: self.from.clone(),
            recipients: self.recipients.clone(),
            raw,
        });
        mailin::response::OK
    }

    fn auth_plain(&mut self, _authz: &str, authn: &str, password: &str) -> Response {
        self.check(authn, password)
    }

    fn auth_login(&mut self, username: &str, password: &str) -> Response {
        self.check(username, password)
    }
}

impl Delivery {
    fn check(&mut self, login: &str, password: &str) -> Response {
        if password == self.password {
            self.login = Some(login.to_ascii_lowercase());
            mailin::response::AUTH_OK
        } else {
            mailin::response::INVALID_CREDENTIALS
        }
    }
}

/// Serves one SMTP connection until QUIT or EOF.
pub async fn serve(stream: TcpStream, store: Arc<Store>, password: String) {
    let ip = stream
        .peer_addr()
        .map_or(IpAddr::from([127, 0, 0, 1]), |a| a.ip());
    let new_session = || {
        let handler = Delivery {
            store: Arc::clone(&store),
            password: password.clone(),
            login: None,
            from: String::new(),
            recipients: Vec::new(),
            data: Vec::new(),
        };
        let mut builder = SessionBuilder::new("care-mcp-fake");
        builder
            .enable_auth(AuthMechanism::Plain)
            .enable_auth(AuthMechanism::Login)
            // Loopback only: the fake never listens elsewhere.
            .insecure_enable_plaintext_auth();
        builder.build(ip, handler)
    };
    let mut session = new_session();
    let mut in_data = false;
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    if let Ok(greeting) = session.greeting().buffer()
        && write.write_all(&greeting).await.is_err()
    {
        return;
    }
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(MAX_MESSAGE_BYTES as u64)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let response = session.process(&line);
        let ends_data = in_data && (line == b".\r\n" || line == b".\n");
        if response.code == 354 {
            in_data = true;
        } else if ends_data {
            in_data = false;
            if response.is_error {
                // The transaction is over (RFC 5321 4.1.1.4) but mailin stays in DATA after a
                // refusal: start over, so the client's next command (QUIT, RSET) is a command.
                session = new_session();
            }
        }
        match response.action {
            Action::NoReply => continue,
            Action::Close => {
                if let Ok(bytes) = response.buffer() {
                    let _ = write.write_all(&bytes).await;
                }
                return;
            }
            Action::Reply | Action::UpgradeTls => {
                let Ok(bytes) = response.buffer() else { return };
                if write.write_all(&bytes).await.is_err() {
                    return;
                }
            }
        }
    }
}

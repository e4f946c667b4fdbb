//! The mail fake as one of the sandbox's upstreams: its role environment (the support account,
//! with the password file written beside it) and the messages it accepted for delivery, as
//! `sandbox show-sent` lists them.

use std::path::Path;

use super::FakeMail;
use crate::upstream::{ReceivedWrite, Upstream};

impl Upstream for FakeMail {
    fn name(&self) -> &'static str {
        "mail"
    }

    fn title(&self) -> &'static str {
        "Mail (IMAP + SMTP)"
    }

    fn address(&self) -> String {
        format!("{} {}", self.imap_url, self.smtp_url)
    }

    fn role_env(&self, dir: &Path) -> std::io::Result<Vec<(String, String)>> {
        let password = self.write_password(dir)?;
        Ok(self.env(&self.support, &password))
    }

    fn received_writes(&self) -> Vec<ReceivedWrite> {
        self.submissions()
            .into_iter()
            .map(|s| {
                let parsed = super::mime::parse(&s.raw);
                let subject = parsed
                    .field("Subject")
                    .map(super::mime::decode_words)
                    .unwrap_or_default();
                ReceivedWrite {
                    target: format!("{} -> {} ({subject})", s.mail_from, s.recipients.join(", ")),
                    text: body_text(&s.raw, &parsed),
                }
            })
            .collect()
    }
}

/// The message's text as a person reads it: a quoted-printable or base64 body decoded (what
/// lettre writes for non-ASCII text), otherwise the body as it is.
fn body_text(raw: &[u8], e: &super::mime::Entity) -> String {
    use base64::Engine as _;
    let body = &raw[e.body.clone()];
    let bytes = match e.encoding.as_str() {
        "base64" => {
            let compact: Vec<u8> = body
                .iter()
                .copied()
                .filter(|b| !b.is_ascii_whitespace())
                .collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .unwrap_or_else(|_| body.to_vec())
        }
        "quoted-printable" => quoted_printable(body),
        _ => body.to_vec(),
    };
    String::from_utf8_lossy(&bytes)
        .replace("\r\n", "\n")
        .trim_end_matches('\n')
        .to_owned()
}

fn quoted_printable(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'=' {
            if body.get(i + 1..i + 3) == Some(b"\r\n") {
                i += 3;
                continue;
            }
            if body.get(i + 1) == Some(&b'\n') {
                i += 2;
                continue;
            }
            if let Some(b) = body
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(body[i]);
        i += 1;
    }
    out
}

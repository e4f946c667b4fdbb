//! Where a mail server is and how the connection is protected: `imaps://` / `smtps://` (TLS from
//! the first byte), `imap://` / `smtp://` (STARTTLS, required), and plaintext only to a loopback
//! host (the tests' Dovecot and the sandbox's fake). A URL carries no credentials, path, query
//! or fragment: the account comes from `CARE_MAIL_USERNAME` and the password file.

/// How the connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// TLS from the first byte (`imaps`, `smtps`).
    Tls,
    /// Plain TCP upgraded with STARTTLS before anything else is said.
    StartTls,
    /// Plain TCP: only ever to a loopback host.
    Plain,
}

/// A parsed `CARE_IMAP_URL` or `CARE_SMTP_URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub security: Security,
}

/// Which protocol a URL is for: its two schemes and default ports.
#[derive(Debug, Clone, Copy)]
pub struct Protocol {
    pub tls_scheme: &'static str,
    pub tls_port: u16,
    pub starttls_scheme: &'static str,
    pub starttls_port: u16,
}

pub const IMAP: Protocol = Protocol {
    tls_scheme: "imaps",
    tls_port: 993,
    starttls_scheme: "imap",
    starttls_port: 143,
};

/// Submission: 465 with TLS, 587 with STARTTLS.
pub const SMTP: Protocol = Protocol {
    tls_scheme: "smtps",
    tls_port: 465,
    starttls_scheme: "smtp",
    starttls_port: 587,
};

fn is_loopback(host: &str) -> bool {
    matches!(host, "localhost" | "[::1]" | "::1") || host.starts_with("127.")
}

impl Endpoint {
    /// `None` when the URL is not one of the protocol's forms.
    pub fn parse(text: &str, protocol: Protocol) -> Option<Endpoint> {
        let url = url::Url::parse(text.trim()).ok()?;
        let host = url.host_str().filter(|h| !h.is_empty())?.to_owned();
        let bare = url.username().is_empty()
            && url.password().is_none()
            && matches!(url.path(), "" | "/")
            && url.query().is_none()
            && url.fragment().is_none();
        if !bare {
            return None;
        }
        let (security, default_port) = if url.scheme() == protocol.tls_scheme {
            (Security::Tls, protocol.tls_port)
        } else if url.scheme() == protocol.starttls_scheme {
            // Plaintext is allowed to loopback only; anywhere else the connection is upgraded.
            if is_loopback(&host) {
                (Security::Plain, protocol.starttls_port)
            } else {
                (Security::StartTls, protocol.starttls_port)
            }
        } else {
            return None;
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        Some(Endpoint {
            host,
            port: url.port().unwrap_or(default_port),
            security,
        })
    }

    /// `host:port` for connecting.
    pub fn address(&self) -> (String, u16) {
        (self.host.clone(), self.port)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn schemes_ports_and_plaintext_only_to_loopback() {
        let e = Endpoint::parse("imaps://mail.example.com", IMAP).unwrap();
        assert_eq!((e.port, e.security), (993, Security::Tls));
        let e = Endpoint::parse("imap://mail.example.com", IMAP).unwrap();
        assert_eq!((e.port, e.security), (143, Security::StartTls));
        let e = Endpoint::parse("imap://127.0.0.1:1143", IMAP).unwrap();
        assert_eq!((e.port, e.security), (1143, Security::Plain));
        let e = Endpoint::parse("smtp://smtp.example.com", SMTP).unwrap();
        assert_eq!((e.port, e.security), (587, Security::StartTls));
        let e = Endpoint::parse("smtps://smtp.example.com:2465", SMTP).unwrap();
        assert_eq!((e.port, e.security), (2465, Security::Tls));
        let e = Endpoint::parse("smtp://[::1]:2525", SMTP).unwrap();
        assert_eq!((e.host.as_str(), e.security), ("::1", Security::Plain));
        for bad in [
            "imaps://user:pw@mail.example.com",
            "imaps://mail.example.com/INBOX",
            "imaps://mail.example.com?x=1",
            "https://mail.example.com",
            "smtps://mail.example.com",
            "not a url",
        ] {
            assert!(Endpoint::parse(bad, IMAP).is_none(), "{bad}");
        }
        assert!(Endpoint::parse("imaps://mail.example.com", SMTP).is_none());
    }
}

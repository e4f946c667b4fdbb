//! `CARE_IMAP_*`, `CARE_SMTP_*` and `CARE_MAIL_*`, read with the configuration kit: every problem
//! collected by variable name, never a value. The password is read from a file nobody else may
//! read and re-read when the file changes (`care_core::rotation`); it is held unprintable, and
//! every value it takes is an outbound-scan pattern.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `CARE_IMAP_URL` | `imaps://host[:993]`, or `imap://host[:143]` (STARTTLS; plaintext only to loopback) | required |
//! | `CARE_SMTP_URL` | `smtps://host[:465]`, or `smtp://host[:587]` (STARTTLS; plaintext only to loopback) | required by roles holding `mail_send` |
//! | `CARE_MAIL_USERNAME` | the account's login, for IMAP and SMTP | required |
//! | `CARE_MAIL_PASSWORD_FILE` | path of a file holding its password (mode 600 or 640) | required |
//! | `CARE_MAIL_FROM` | the support address: From of every send, and whose replies count for the SLA | required |
//! | `CARE_MAIL_ALLOWED_RECIPIENT_DOMAINS` | domains a new message (and a honoured Reply-To) may go to | none: new messages are refused |
//! | `CARE_MAIL_SENT_MAILBOX` | where approved sends are appended | `Sent` |
//! | `CARE_LOCALES` | locales a send may declare | the shared default list |
//! | `CARE_MAIL_CONNECT_TIMEOUT_SECS` | TCP, TLS, greeting and login, 1..=120 | 10 |
//! | `CARE_MAIL_COMMAND_TIMEOUT_SECS` | one IMAP command or one SMTP submission, 1..=300 | 20 |
//! | `CARE_MAIL_IDLE_SECS` | an IMAP session unused this long is reopened, 1..=3600 | 60 |

use std::time::Duration;

use std::sync::Arc;

use care_core::env::{EnvReader, EnvSource};
use care_core::rotation::RotatingSecret;

use super::endpoint::{Endpoint, IMAP, SMTP};
use super::headers;
use crate::locale;

const NEEDED_BY: &str = "the mail tools of this role";
const SEND_NEEDED_BY: &str = "mail_send";
/// More domains than any support desk writes to first; keeps the card and the checks small.
const MAX_DOMAINS: usize = 50;

/// How long each step against a mail server may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailLimits {
    /// TCP, TLS, greeting and login.
    pub connect: Duration,
    /// One command and its whole answer.
    pub command: Duration,
    /// An IMAP session unused for this long is closed and reopened rather than reused.
    pub idle: Duration,
}

impl Default for MailLimits {
    fn default() -> Self {
        MailLimits {
            connect: Duration::from_secs(10),
            command: Duration::from_secs(20),
            idle: Duration::from_secs(60),
        }
    }
}

/// Parsed mail configuration.
#[derive(Debug, Clone)]
pub struct MailConfig {
    pub imap: Endpoint,
    /// `None` for a role that does not send (lead).
    pub smtp: Option<Endpoint>,
    pub username: String,
    /// Re-read when its file changes; unprintable; an outbound-scan pattern.
    pub password: Arc<RotatingSecret>,
    /// The support address, lower-cased.
    pub from: String,
    /// Lower-cased domains.
    pub allowed_domains: Vec<String>,
    pub sent_mailbox: String,
    pub locales: Vec<String>,
    pub limits: MailLimits,
}

impl MailConfig {
    /// Reads the configuration (and the password file); `None` when anything is wrong, the
    /// reasons recorded in `r`. `sends` says whether the role holds `mail_send`.
    pub fn read(r: &mut EnvReader<'_>, sends: bool) -> Option<MailConfig> {
        let imap_text = r.required("CARE_IMAP_URL", NEEDED_BY);
        let smtp_text = if sends {
            r.required("CARE_SMTP_URL", SEND_NEEDED_BY)
        } else {
            None
        };
        let username = r.required("CARE_MAIL_USERNAME", NEEDED_BY);
        let password = r.rotating_secret_file("CARE_MAIL_PASSWORD_FILE", Some(NEEDED_BY), one_line);
        let from = r.required("CARE_MAIL_FROM", NEEDED_BY);
        let mut ok = true;

        let imap = imap_text.and_then(|t| {
            let parsed = Endpoint::parse(&t, IMAP);
            if parsed.is_none() {
                r.problem("CARE_IMAP_URL must be imaps://host[:port] or imap://host[:port] (STARTTLS; plaintext only to a loopback host), without credentials or path");
            }
            parsed
        });
        let smtp = smtp_text.and_then(|t| {
            let parsed = Endpoint::parse(&t, SMTP);
            if parsed.is_none() {
                r.problem("CARE_SMTP_URL must be smtps://host[:port] or smtp://host[:port] (STARTTLS; plaintext only to a loopback host), without credentials or path");
                ok = false;
            }
            parsed
        });
        if username
            .as_deref()
            .is_some_and(|u| u.len() > 256 || u.chars().any(char::is_control))
        {
            r.problem("CARE_MAIL_USERNAME must be a login without control characters");
            ok = false;
        }
        let from = from.and_then(|f| {
            let f = f.to_ascii_lowercase();
            if headers::is_address(&f) {
                Some(f)
            } else {
                r.problem("CARE_MAIL_FROM must be a plain address like support@example.com");
                None
            }
        });
        let allowed_domains: Vec<String> = r
            .list(
                "CARE_MAIL_ALLOWED_RECIPIENT_DOMAINS",
                "a domain like example.com",
                headers::is_domain,
            )
            .into_iter()
            .map(|d| d.to_ascii_lowercase())
            .collect();
        if allowed_domains.len() > MAX_DOMAINS {
            r.problem(format!(
                "CARE_MAIL_ALLOWED_RECIPIENT_DOMAINS names more than {MAX_DOMAINS} domains"
            ));
            ok = false;
        }
        let sent_mailbox = r
            .optional("CARE_MAIL_SENT_MAILBOX")
            .unwrap_or_else(|| "Sent".to_owned());
        if !headers::is_mailbox_name(&sent_mailbox) {
            r.problem("CARE_MAIL_SENT_MAILBOX must be a mailbox name of printable ASCII");
            ok = false;
        }
        let locales = locale::read(r);
        let limits = MailLimits {
            connect: Duration::from_secs(u64::from(r.int_in(
                "CARE_MAIL_CONNECT_TIMEOUT_SECS",
                1..=120,
                10,
            ))),
            command: Duration::from_secs(u64::from(r.int_in(
                "CARE_MAIL_COMMAND_TIMEOUT_SECS",
                1..=300,
                20,
            ))),
            idle: Duration::from_secs(u64::from(r.int_in("CARE_MAIL_IDLE_SECS", 1..=3600, 60))),
        };

        match (imap, username, password, from, locales) {
            (Some(imap), Some(username), Some(password), Some(from), Some(locales))
                if ok && (smtp.is_some() || !sends) =>
            {
                Some(MailConfig {
                    imap,
                    smtp,
                    username,
                    password,
                    from,
                    allowed_domains,
                    sent_mailbox,
                    locales,
                    limits,
                })
            }
            _ => None,
        }
    }

    /// The configuration from `env` alone, every problem at once.
    pub fn from_env(env: &dyn EnvSource, sends: bool) -> Result<MailConfig, Vec<String>> {
        let mut r = EnvReader::new(env);
        let config = MailConfig::read(&mut r, sends);
        r.finish()?;
        config.ok_or_else(|| vec!["mail configuration incomplete".to_owned()])
    }

    /// True when `address`'s domain is one a message may be sent to.
    pub fn allows_recipient(&self, address: &str) -> bool {
        headers::domain_of(address).is_some_and(|d| {
            self.allowed_domains
                .iter()
                .any(|a| a.eq_ignore_ascii_case(d))
        })
    }

    /// The domain of the support address (for Message-IDs).
    pub fn from_domain(&self) -> &str {
        headers::domain_of(&self.from).unwrap_or("localhost")
    }
}

/// The password: the file's one line, without its line end.
fn one_line(text: &str) -> Result<String, &'static str> {
    let line = text.trim_end_matches(['\r', '\n']);
    if line.is_empty() || line.contains(['\r', '\n', '\0']) {
        Err("must hold one line: the password")
    } else {
        Ok(line.to_owned())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use care_core::env::MapEnv;
    use std::os::unix::fs::PermissionsExt;

    const VARS: [&str; 5] = [
        "CARE_IMAP_URL",
        "CARE_SMTP_URL",
        "CARE_MAIL_USERNAME",
        "CARE_MAIL_PASSWORD_FILE",
        "CARE_MAIL_FROM",
    ];

    #[test]
    fn missing_everything_names_every_variable_and_only_senders_need_smtp() {
        let problems = MailConfig::from_env(&MapEnv::default(), true).unwrap_err();
        for var in VARS {
            assert!(
                problems.iter().any(|p| p.starts_with(var)),
                "{var}: {problems:?}"
            );
        }
        let problems = MailConfig::from_env(&MapEnv::default(), false).unwrap_err();
        assert!(
            !problems.iter().any(|p| p.contains("CARE_SMTP_URL")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_full_configuration_is_read_and_the_password_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "sk-demo-mail-password-0001\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let env = MapEnv::of([
            ("CARE_IMAP_URL", "imaps://imap.example.com"),
            ("CARE_SMTP_URL", "smtp://smtp.example.com"),
            ("CARE_MAIL_USERNAME", "support@example.com"),
            ("CARE_MAIL_PASSWORD_FILE", file.to_str().unwrap()),
            ("CARE_MAIL_FROM", "Support@Example.com"),
            (
                "CARE_MAIL_ALLOWED_RECIPIENT_DOMAINS",
                "example.com, partner.test",
            ),
        ]);
        let config = MailConfig::from_env(&env, true).unwrap();
        assert_eq!(
            config.password.value_now().as_deref(),
            Some("sk-demo-mail-password-0001")
        );
        assert!(!format!("{config:?}").contains("sk-demo"));
        assert_eq!(config.from, "support@example.com");
        assert_eq!(config.sent_mailbox, "Sent");
        assert!(config.allows_recipient("a@EXAMPLE.com"));
        assert!(!config.allows_recipient("a@example.com.evil.test"));
        assert_eq!(config.from_domain(), "example.com");

        // A world-readable password file is refused, by name.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let problems = MailConfig::from_env(&env, true).unwrap_err();
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("CARE_MAIL_PASSWORD_FILE"))
        );
        assert!(!problems.iter().any(|p| p.contains("sk-demo")));
    }

    #[test]
    fn plaintext_to_a_remote_host_is_impossible() {
        let env = MapEnv::of([("CARE_IMAP_URL", "imap://user:pw@imap.example.com")]);
        let problems = MailConfig::from_env(&env, false).unwrap_err();
        assert!(problems.iter().any(|p| p.starts_with("CARE_IMAP_URL")));
        assert!(!problems.iter().any(|p| p.contains("pw@")));
    }
}

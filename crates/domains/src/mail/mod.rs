//! Mail: the support inbox over IMAP and the gated SMTP send (issue 10).
//!
//! # Layout
//! - [`config`]: `CARE_IMAP_*`, `CARE_SMTP_*`, `CARE_MAIL_*`; [`endpoint`]: their URLs.
//! - [`stream`]: TCP or TLS under an IMAP session; [`imap`]: the session (reused, reopened,
//!   bounded) and its read-only operations; [`smtp`]: submission; [`compose`]: the message.
//! - [`structure`]: BODYSTRUCTURE leaves; [`model`]: headers and parts decoded by the MIME
//!   parser and written out fenced; [`html`]: HTML bodies as text; [`headers`]: shapes of
//!   addresses, ids, mailbox names, and header-breaking characters.
//! - [`context`]: what the tools share, lookups by message id, the SLA feed.
//! - [`tools`]: the five tools.
//!
//! [`register`] is the domain's entry point (see `crate::DOMAINS`): called only for a role
//! holding mail tools (mail, lead); a role holding `mail_send` also needs the SMTP settings.

pub mod compose;
pub mod config;
pub mod context;
pub mod endpoint;
pub mod headers;
pub mod html;
pub mod imap;
pub mod model;
pub mod smtp;
pub mod stream;
pub mod structure;
pub mod tools;

use std::sync::Arc;

use care_core::catalog;
use care_core::env::EnvReader;
use care_core::pipeline::ExternalWriteTool;
use care_core::registrar::Registrar;

pub use config::MailConfig;
pub use context::MailContext;

/// Registers the mail tools: reads the configuration (problems go to `env`, by variable name;
/// then nothing is registered), declares the password as a secret, builds the clients.
pub fn register(registrar: &mut Registrar, env: &mut EnvReader<'_>) {
    let sends = catalog::lookup(<tools::send::MailSend as ExternalWriteTool>::NAME)
        .is_some_and(|e| e.held_by(registrar.role()));
    let Some(config) = MailConfig::read(env, sends) else {
        return;
    };
    registrar.rotating_secret(&config.password);
    let imap = match imap::ImapClient::new(
        config.imap.clone(),
        config.username.clone(),
        std::sync::Arc::clone(&config.password),
        config.limits,
    ) {
        Ok(client) => client,
        Err(e) => {
            env.problem(format!("the IMAP client could not be built: {e}"));
            return;
        }
    };
    let smtp = match &config.smtp {
        None => None,
        Some(endpoint) => match smtp::SmtpClient::new(
            endpoint.clone(),
            &config.username,
            &config.password,
            config.limits,
        ) {
            Ok(client) => Some(client),
            Err(e) => {
                env.problem(e.to_string());
                return;
            }
        },
    };
    let mail = Arc::new(MailContext {
        config,
        imap,
        smtp,
        tickets: registrar.tickets(),
    });
    let c = || Arc::clone(&mail);
    registrar.read(tools::list::MailList(c()));
    registrar.read(tools::read::MailRead(c()));
    registrar.read(tools::search::MailSearch(c()));
    registrar.read(tools::thread::MailThread(c()));
    if sends {
        registrar.write(tools::send::MailSend(c()));
    }
}

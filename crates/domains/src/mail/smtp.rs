//! The SMTP side: one submission per approved send, on a new connection (TLS, STARTTLS, or
//! plaintext to loopback only), authenticated with the account, bounded by the connect and
//! command limits under [`kit::deadline`](crate::kit::deadline). The only method that sends
//! takes the pipeline's permit. The password is the rotating credential's current value: a
//! rotation rebuilds the transport, and a submission refused for its credentials tells the
//! credential (a stale one is then dropped; see `care_core::rotation`).

use std::sync::{Arc, Mutex, PoisonError};

use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use care_core::env::{ExposeSecret, SecretString};
use care_core::error::{ErrorCode, ToolError};
use care_core::pipeline::WritePermit;
use care_core::rotation::RotatingSecret;

use super::config::MailLimits;
use super::endpoint::{Endpoint, Security};
use crate::kit::deadline;

/// The SMTP client of one account.
pub struct SmtpClient {
    /// The transport for the password generation it was built with.
    transport: Mutex<(u64, AsyncSmtpTransport<Tokio1Executor>)>,
    endpoint: Endpoint,
    username: String,
    password: Arc<RotatingSecret>,
    limits: MailLimits,
}

impl std::fmt::Debug for SmtpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpClient")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// Why the SMTP client could not be built at start.
#[derive(Debug, thiserror::Error)]
#[error("the SMTP client could not be built: {0}")]
pub struct SmtpSetupError(String);

impl SmtpClient {
    pub fn new(
        endpoint: Endpoint,
        username: &str,
        password: &Arc<RotatingSecret>,
        limits: MailLimits,
    ) -> Result<Self, SmtpSetupError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let current = password
            .current()
            .map_err(|_| SmtpSetupError("no password".to_owned()))?;
        let transport = transport(&endpoint, username, &current.value, limits)?;
        Ok(SmtpClient {
            transport: Mutex::new((current.generation, transport)),
            endpoint,
            username: username.to_owned(),
            password: Arc::clone(password),
            limits,
        })
    }

    /// The transport for the password in use now (rebuilt when the password rotated).
    fn transport(&self) -> Result<(u64, AsyncSmtpTransport<Tokio1Executor>), ToolError> {
        let password = self.password.current()?;
        let mut current = self
            .transport
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if current.0 != password.generation {
            let fresh = transport(&self.endpoint, &self.username, &password.value, self.limits)
                .map_err(|e| ToolError::new(ErrorCode::Internal).with_detail(e.to_string()))?;
            *current = (password.generation, fresh);
        }
        Ok(current.clone())
    }

    /// Submits `message` once. Only with the permit of a consumed approval for this send.
    pub async fn send(
        &self,
        _permit: &WritePermit<'_>,
        message: lettre::Message,
    ) -> Result<(), ToolError> {
        let (generation, transport) = self.transport()?;
        let bound = self.limits.connect + self.limits.command;
        let mut refused = false;
        let sent = deadline(
            &format!("smtp submission to {}", self.endpoint.host),
            bound,
            transport.send(message),
            |e| {
                refused = e
                    .status()
                    .is_some_and(|c| AUTH_REFUSED.contains(&u16::from(c)));
                if e.is_permanent() {
                    ErrorCode::UpstreamRejected
                } else {
                    ErrorCode::UpstreamUnavailable
                }
            },
        )
        .await
        .map(|_| ());
        if refused {
            self.password.refused(generation);
        }
        sent
    }
}

/// SMTP replies that refuse the credentials (RFC 4954: 535 invalid, 534 mechanism too weak,
/// 530 authentication required).
const AUTH_REFUSED: [u16; 3] = [530, 534, 535];

/// A transport that authenticates with `password`; it opens a connection per submission (lettre
/// is built without its pool), so nothing logged in with an old password outlives it.
fn transport(
    endpoint: &Endpoint,
    username: &str,
    password: &SecretString,
    limits: MailLimits,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, SmtpSetupError> {
    let builder = match endpoint.security {
        Security::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&endpoint.host)
            .map_err(|e| SmtpSetupError(e.to_string()))?,
        Security::StartTls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&endpoint.host)
            .map_err(|e| SmtpSetupError(e.to_string()))?,
        // Plaintext only ever to loopback (the endpoint refuses it elsewhere).
        Security::Plain => {
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(endpoint.host.clone())
        }
    };
    let transport = builder
        .port(endpoint.port)
        .credentials(Credentials::new(
            username.to_owned(),
            password.expose_secret().to_owned(),
        ))
        .timeout(Some(limits.command))
        .build();
    Ok(transport)
}

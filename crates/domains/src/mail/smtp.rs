//! The SMTP side: one submission per approved send, on a new connection (TLS, STARTTLS, or
//! plaintext to loopback only), authenticated with the account, bounded by the connect and
//! command limits under [`kit::deadline`](crate::kit::deadline). The only method that sends
//! takes the pipeline's permit.

use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use care_core::env::{ExposeSecret, SecretString};
use care_core::error::{ErrorCode, ToolError};
use care_core::pipeline::WritePermit;

use super::config::MailLimits;
use super::endpoint::{Endpoint, Security};
use crate::kit::deadline;

/// The SMTP client of one account.
pub struct SmtpClient {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    endpoint: Endpoint,
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
        password: &SecretString,
        limits: MailLimits,
    ) -> Result<Self, SmtpSetupError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let builder = match endpoint.security {
            Security::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&endpoint.host)
                .map_err(|e| SmtpSetupError(e.to_string()))?,
            Security::StartTls => {
                AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&endpoint.host)
                    .map_err(|e| SmtpSetupError(e.to_string()))?
            }
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
        Ok(SmtpClient {
            transport,
            endpoint,
            limits,
        })
    }

    /// Submits `message` once. Only with the permit of a consumed approval for this send.
    pub async fn send(
        &self,
        _permit: &WritePermit<'_>,
        message: lettre::Message,
    ) -> Result<(), ToolError> {
        let bound = self.limits.connect + self.limits.command;
        deadline(
            &format!("smtp submission to {}", self.endpoint.host),
            bound,
            self.transport.send(message),
            |e| {
                if e.is_permanent() {
                    ErrorCode::UpstreamRejected
                } else {
                    ErrorCode::UpstreamUnavailable
                }
            },
        )
        .await
        .map(|_| ())
    }
}

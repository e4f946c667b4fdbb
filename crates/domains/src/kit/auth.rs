//! How a client proves who it is to its upstream: a bearer token renewed on its own schedule
//! (App Store Connect's ES256 JWT implements [`Auth`] in its domain), or header pairs such as
//! Discourse's `Api-Key` / `Api-Username` ([`HeaderAuth`]), fixed or read from a rotating
//! credential file. Each request's [`Presented`] names the credential generations it used, so
//! a refusal reaches exactly the credential that was refused (see `care_core::rotation`).

use std::sync::Arc;

use reqwest::StatusCode;
use reqwest::header::{HeaderName, HeaderValue};

use care_core::env::{ExposeSecret, SecretString};
use care_core::error::{ErrorCode, ToolError};
use care_core::rotation::RotatingSecret;

/// What one request presents: its headers, and the rotating credentials (with the generation
/// used) they were made from.
#[derive(Debug, Default)]
pub struct Presented {
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub sources: Vec<(Arc<RotatingSecret>, u64)>,
    /// The statuses by which this upstream says "these credentials are not valid" (App Store
    /// Connect: 401; Discourse: 401, and 403 `invalid_access` for a wrong key).
    pub refusals: &'static [StatusCode],
}

impl Presented {
    /// Headers made from no rotating credential.
    pub fn fixed(headers: Vec<(HeaderName, HeaderValue)>) -> Self {
        Presented {
            headers,
            sources: Vec::new(),
            refusals: &[StatusCode::UNAUTHORIZED],
        }
    }

    /// The upstream answered `status`: when it is a refusal, every rotating credential used is
    /// told (a stale one is dropped; see `care_core::rotation`).
    pub fn answered(&self, status: StatusCode) {
        if self.refusals.contains(&status) {
            for (source, generation) in &self.sources {
                source.refused(*generation);
            }
        }
    }
}

/// Credentials added to every request of one client.
pub trait Auth: Send + Sync + std::fmt::Debug {
    /// What one request presents (asked for each request: a token may have been renewed, a
    /// credential file rotated). Values are marked sensitive so no log or debug output shows
    /// them.
    fn headers(&self) -> Result<Presented, ToolError>;

    /// The upstream answered 401: drop what is cached, so the next request authenticates anew.
    fn refused(&self) {}
}

/// No credentials (a public API).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAuth;

impl Auth for NoAuth {
    fn headers(&self) -> Result<Presented, ToolError> {
        Ok(Presented::fixed(Vec::new()))
    }
}

/// A header's value: fixed, or the current value of a rotating credential file.
#[derive(Debug, Clone)]
pub enum HeaderSecret {
    Fixed(SecretString),
    Rotating(Arc<RotatingSecret>),
}

impl From<SecretString> for HeaderSecret {
    fn from(value: SecretString) -> Self {
        HeaderSecret::Fixed(value)
    }
}

impl From<Arc<RotatingSecret>> for HeaderSecret {
    fn from(value: Arc<RotatingSecret>) -> Self {
        HeaderSecret::Rotating(value)
    }
}

/// Header pairs, e.g. `Api-Key` (rotating) and `Api-Username` (fixed).
pub struct HeaderAuth {
    pairs: Vec<(HeaderName, HeaderSecret)>,
    refusals: &'static [StatusCode],
}

impl std::fmt::Debug for HeaderAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeaderAuth")
            .field(
                "headers",
                &self
                    .pairs
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl HeaderAuth {
    /// `None` when a name is not a valid header name. A rotating value is reported refused on
    /// 401 only; see [`HeaderAuth::refused_by`].
    pub fn new<V: Into<HeaderSecret>>(pairs: Vec<(&str, V)>) -> Option<Self> {
        let pairs = pairs
            .into_iter()
            .map(|(name, value)| {
                HeaderName::from_bytes(name.as_bytes())
                    .ok()
                    .map(|n| (n, value.into()))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(HeaderAuth {
            pairs,
            refusals: &[StatusCode::UNAUTHORIZED],
        })
    }

    /// The statuses by which the upstream refuses these credentials.
    pub fn refused_by(mut self, statuses: &'static [StatusCode]) -> Self {
        self.refusals = statuses;
        self
    }
}

impl Auth for HeaderAuth {
    fn headers(&self) -> Result<Presented, ToolError> {
        let mut presented = Presented {
            refusals: self.refusals,
            ..Presented::default()
        };
        for (name, secret) in &self.pairs {
            let text = match secret {
                HeaderSecret::Fixed(value) => value.clone(),
                HeaderSecret::Rotating(source) => {
                    let credential = source.current()?;
                    presented
                        .sources
                        .push((Arc::clone(source), credential.generation));
                    credential.value
                }
            };
            let mut value = HeaderValue::from_str(text.expose_secret().trim()).map_err(|_| {
                ToolError::new(ErrorCode::UpstreamRejected)
                    .with_detail(format!("credential for {name} is not a header value"))
            })?;
            value.set_sensitive(true);
            presented.headers.push((name.clone(), value));
        }
        Ok(presented)
    }
}

/// A bearer token as a sensitive `Authorization` header.
pub fn bearer(token: &str) -> Result<(HeaderName, HeaderValue), ToolError> {
    let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
        ToolError::new(ErrorCode::UpstreamRejected).with_detail("token is not a header value")
    })?;
    value.set_sensitive(true);
    Ok((reqwest::header::AUTHORIZATION, value))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn header_pairs_are_sensitive_and_never_printed() {
        let auth = HeaderAuth::new(vec![
            ("Api-Key", SecretString::from("sk-demo-discourse-key")),
            ("Api-Username", SecretString::from("system")),
        ])
        .unwrap();
        let headers = auth.headers().unwrap().headers;
        assert_eq!(headers.len(), 2);
        assert!(headers.iter().all(|(_, v)| v.is_sensitive()));
        assert_eq!(headers[0].1, "sk-demo-discourse-key");
        assert!(!format!("{auth:?}").contains("sk-demo"));
        assert!(!format!("{:?}", headers[0].1).contains("sk-demo"));
        assert!(HeaderAuth::new(vec![("bad header", SecretString::from("x"))]).is_none());
    }
}

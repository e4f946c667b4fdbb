//! How a client proves who it is to its upstream: a bearer token renewed on its own schedule
//! (App Store Connect's ES256 JWT implements [`Auth`] in its domain), or fixed header pairs
//! such as Discourse's `Api-Key` / `Api-Username` ([`HeaderAuth`]).

use reqwest::header::{HeaderName, HeaderValue};

use care_core::env::{ExposeSecret, SecretString};
use care_core::error::{ErrorCode, ToolError};

/// Credentials added to every request of one client.
pub trait Auth: Send + Sync + std::fmt::Debug {
    /// The headers of one request (asked for each request: a token may have been renewed).
    /// Values are marked sensitive so no log or debug output shows them.
    fn headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ToolError>;

    /// The upstream answered 401: drop what is cached, so the next request authenticates anew.
    fn refused(&self) {}
}

/// No credentials (a public API).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAuth;

impl Auth for NoAuth {
    fn headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ToolError> {
        Ok(Vec::new())
    }
}

/// Fixed header pairs, e.g. `Api-Key` and `Api-Username`.
pub struct HeaderAuth {
    pairs: Vec<(HeaderName, SecretString)>,
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
    /// `None` when a name is not a valid header name.
    pub fn new(pairs: Vec<(&str, SecretString)>) -> Option<Self> {
        let pairs = pairs
            .into_iter()
            .map(|(name, value)| {
                HeaderName::from_bytes(name.as_bytes())
                    .ok()
                    .map(|n| (n, value))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(HeaderAuth { pairs })
    }
}

impl Auth for HeaderAuth {
    fn headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ToolError> {
        self.pairs
            .iter()
            .map(|(name, value)| {
                let mut value =
                    HeaderValue::from_str(value.expose_secret().trim()).map_err(|_| {
                        ToolError::new(ErrorCode::UpstreamRejected)
                            .with_detail(format!("credential for {name} is not a header value"))
                    })?;
                value.set_sensitive(true);
                Ok((name.clone(), value))
            })
            .collect()
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
        let headers = auth.headers().unwrap();
        assert_eq!(headers.len(), 2);
        assert!(headers.iter().all(|(_, v)| v.is_sensitive()));
        assert_eq!(headers[0].1, "sk-demo-discourse-key");
        assert!(!format!("{auth:?}").contains("sk-demo"));
        assert!(!format!("{:?}", headers[0].1).contains("sk-demo"));
        assert!(HeaderAuth::new(vec![("bad header", SecretString::from("x"))]).is_none());
    }
}

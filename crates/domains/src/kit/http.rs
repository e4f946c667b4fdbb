//! The one HTTP client wrapper every HTTP upstream uses: its [`Limits`] (connect and total
//! timeout, body cap, longest Retry-After worth waiting), no redirects (a credential never
//! follows one elsewhere), its [`Auth`] on every request (with a hook for 401), one mapping of
//! every failure to a fixed error code, and the vendor's error code kept for stderr only. A
//! refusal of the credentials reaches the rotating credential files they came from.
//!
//! Reads go through [`HttpClient::get`]. Writes go through [`HttpClient::write`], which takes
//! the pipeline's [`WritePermit`]: only the write pipeline makes one, after consuming an
//! approval for exactly that call, so a read tool cannot reach an upstream write.

use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use care_core::error::{ErrorCode, ToolError};
use care_core::pipeline::WritePermit;

use super::auth::Auth;
use super::limits::Limits;
use super::status::{VendorCode, WaitHint, code_of, retry_after};

/// Why a client could not be built at start.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0} is not a URL")]
    BaseUrl(&'static str),
    #[error("the HTTP client could not be built: {0}")]
    Http(String),
}

/// What one upstream client is made of.
#[derive(Debug)]
pub struct ClientSpec<A> {
    /// For logs: e.g. `app_store_connect`.
    pub name: &'static str,
    /// The variable the base URL came from (named in errors, never the value).
    pub base_url_variable: &'static str,
    pub base_url: String,
    pub limits: Limits,
    pub auth: A,
    pub vendor_code: VendorCode,
}

/// A client of one upstream.
#[derive(Debug)]
pub struct HttpClient {
    name: &'static str,
    http: reqwest::Client,
    base: Url,
    limits: Limits,
    auth: Box<dyn Auth>,
    vendor_code: VendorCode,
    wait_hint: Option<WaitHint>,
}

fn unavailable(detail: String) -> ToolError {
    ToolError::new(ErrorCode::UpstreamUnavailable).with_detail(detail)
}

impl HttpClient {
    pub fn new<A: Auth + 'static>(spec: ClientSpec<A>) -> Result<Self, ClientError> {
        let base =
            Url::parse(&spec.base_url).map_err(|_| ClientError::BaseUrl(spec.base_url_variable))?;
        // reqwest is built without a default crypto provider (no aws-lc): use ring, unless the
        // process already chose one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // The one place an HTTP client is built (clippy's disallowed-methods elsewhere).
        #[allow(clippy::disallowed_methods)]
        let builder = reqwest::Client::builder();
        let http = builder
            .timeout(spec.limits.total_timeout)
            .connect_timeout(spec.limits.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("care-mcp/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Http(e.to_string()))?;
        Ok(HttpClient {
            name: spec.name,
            http,
            base,
            limits: spec.limits,
            auth: Box::new(spec.auth),
            vendor_code: spec.vendor_code,
            wait_hint: None,
        })
    }

    /// Also reads how long to wait out a 429 from its body when it has no `Retry-After`
    /// header (Discourse's `extras.wait_seconds`); the same bound and single retry apply.
    pub fn with_wait_hint(mut self, hint: WaitHint) -> Self {
        self.wait_hint = Some(hint);
        self
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `base/segments...?query`; every segment is percent-encoded, so an id cannot change the
    /// path.
    pub fn url(&self, segments: &[&str], query: &[(&str, String)]) -> Result<Url, ToolError> {
        let mut url = self.base.clone();
        {
            let mut path = url.path_segments_mut().map_err(|()| {
                ToolError::new(ErrorCode::Internal).with_detail("base URL cannot hold a path")
            })?;
            path.pop_if_empty();
            for segment in segments {
                path.push(segment);
            }
        }
        if !query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in query {
                pairs.append_pair(k, v);
            }
        }
        Ok(url)
    }

    /// A read: `GET base/segments?query`, JSON answer (`Null` when empty).
    pub async fn get(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> Result<Value, ToolError> {
        let url = self.url(segments, query)?;
        self.send(Method::GET, url, None).await
    }

    /// A write, with the permit the pipeline issued for this call.
    pub async fn write(
        &self,
        _permit: &WritePermit<'_>,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> Result<Value, ToolError> {
        let url = self.url(segments, query)?;
        self.send(method, url, body).await
    }

    async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> Result<Value, ToolError> {
        let what = format!("{} {method} {}", self.name, url.path());
        let mut retried = false;
        loop {
            let mut request = self
                .http
                .request(method.clone(), url.clone())
                .header(reqwest::header::ACCEPT, "application/json");
            let presented = self.auth.headers()?;
            for (name, value) in &presented.headers {
                request = request.header(name, value);
            }
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = request.send().await.map_err(|e| {
                let kind = if e.is_timeout() {
                    "timed out"
                } else if e.is_connect() {
                    "connect failed"
                } else {
                    "request failed"
                };
                unavailable(format!("{what}: {kind}"))
            })?;
            let status = response.status();
            let limited = status == StatusCode::TOO_MANY_REQUESTS && !retried;
            let has_header = response
                .headers()
                .contains_key(reqwest::header::RETRY_AFTER);
            if limited
                && let Some(wait) = retry_after(response.headers(), self.limits.max_retry_after)
            {
                retried = true;
                tokio::time::sleep(wait).await;
                continue;
            }
            let bytes = read_bounded(response, self.limits.max_body_bytes)
                .await
                .map_err(|reason| unavailable(format!("{what}: {reason}")))?;
            // The header wins when present; without it, the body may say how long to wait.
            if limited
                && !has_header
                && let Some(wait) = self
                    .wait_hint
                    .and_then(|hint| hint(&bytes))
                    .map(std::time::Duration::from_secs)
                    .filter(|wait| *wait <= self.limits.max_retry_after)
            {
                retried = true;
                tokio::time::sleep(wait).await;
                continue;
            }
            if status.is_success() {
                if bytes.is_empty() {
                    return Ok(Value::Null);
                }
                return serde_json::from_slice(&bytes)
                    .map_err(|_| unavailable(format!("{what}: answer is not JSON")));
            }
            if status == StatusCode::UNAUTHORIZED {
                self.auth.refused();
            }
            presented.answered(status);
            let vendor = (self.vendor_code)(&bytes)
                .map(|c| format!(" ({c})"))
                .unwrap_or_default();
            let detail = format!("{what}: HTTP {}{vendor}", status.as_u16());
            return Err(ToolError::new(code_of(status)).with_detail(detail));
        }
    }
}

async fn read_bounded(
    mut response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, &'static str> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err("answer too large");
    }
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|_| "answer interrupted")? {
        if out.len() + chunk.len() > max {
            return Err("answer too large");
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

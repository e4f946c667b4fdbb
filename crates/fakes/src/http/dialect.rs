//! How an upstream speaks beyond its routes: which credentials it accepts, how it words a
//! refusal and an error, and which request headers are worth recording.

use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

/// What a fake tells the scaffold about its upstream; every method has a plain default, so a
/// fake without credentials implements none of them.
pub trait Dialect: Send + Sync + 'static {
    /// Checks the credentials a request carries (bearer token, API key headers...);
    /// `Err(reason)` refuses it. Runs on every request, and the verdict is recorded.
    fn authorize(&self, _request: &Parts) -> Result<(), String> {
        Ok(())
    }

    /// The upstream's answer to a request whose credentials were refused.
    fn refusal(&self, _reason: &str) -> Response {
        StatusCode::UNAUTHORIZED.into_response()
    }

    /// The upstream's answer for an injected failure of `status`: its usual error document, so
    /// the client under test parses what it would really get.
    fn failure(&self, status: StatusCode) -> Response {
        status.into_response()
    }

    /// Request headers kept on each [`RecordedRequest`](super::RecordedRequest), lower case.
    fn recorded_headers(&self) -> &'static [&'static str] {
        &[]
    }
}

/// A fake with no credentials and bare status answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Dialect for Plain {}

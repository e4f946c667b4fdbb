//! How App Store Connect speaks beyond its routes: an ES256 bearer token checked on every
//! request, 401 in Apple's words when it fails, and Apple's error document for injected failures.

use std::sync::{Arc, PoisonError, RwLock};

use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;

use super::documents::error_body;
use super::jwt::{JwtError, TokenVerifier};
use crate::http::Dialect;

#[derive(Debug)]
pub(crate) struct AscDialect {
    /// Shared with the handle, so a rotated key takes effect at once.
    pub verifier: Arc<RwLock<TokenVerifier>>,
}

impl Dialect for AscDialect {
    fn authorize(&self, request: &Parts) -> Result<(), String> {
        request
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(JwtError::Missing)
            .and_then(|token| {
                self.verifier
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .verify(token, Utc::now().timestamp())
            })
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn refusal(&self, _reason: &str) -> Response {
        let status = StatusCode::UNAUTHORIZED;
        let body = error_body(
            status,
            "NOT_AUTHORIZED",
            "Provide a properly configured and signed bearer token, and make sure that it has not expired.",
        );
        (status, axum::Json(body)).into_response()
    }

    fn failure(&self, status: StatusCode) -> Response {
        let body = error_body(status, "INJECTED", "An injected failure.");
        (status, axum::Json(body)).into_response()
    }

    fn recorded_headers(&self) -> &'static [&'static str] {
        &["content-type"]
    }
}

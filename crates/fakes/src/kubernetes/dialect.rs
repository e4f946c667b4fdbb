//! How the Kubernetes API server speaks beyond its routes: a bearer token (the service
//! account's) checked on every request, and every error as a `Status` document — the shape
//! kube decodes into `Error::Api`, rather than a decode error.

use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::http::Dialect;

#[derive(Debug)]
pub(crate) struct KubeDialect {
    pub token: std::sync::Arc<std::sync::RwLock<String>>,
}

/// The `reason` Kubernetes gives a status code.
pub fn reason_of(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

/// A `Status` document (kind Status, status Failure) for `status`.
pub fn status_body(status: StatusCode, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason_of(status),
        "code": status.as_u16(),
    })
}

pub fn status_response(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(status_body(status, message))).into_response()
}

impl Dialect for KubeDialect {
    fn authorize(&self, request: &Parts) -> Result<(), String> {
        let given = request
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or("no bearer token")?;
        let token = self
            .token
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if given == *token {
            Ok(())
        } else {
            Err("unknown bearer token".to_owned())
        }
    }

    fn refusal(&self, _reason: &str) -> Response {
        status_response(StatusCode::UNAUTHORIZED, "Unauthorized")
    }

    fn failure(&self, status: StatusCode) -> Response {
        status_response(status, "an injected failure")
    }

    fn recorded_headers(&self) -> &'static [&'static str] {
        &["content-type", "accept"]
    }
}

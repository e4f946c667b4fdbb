//! How Discourse speaks beyond its routes: the `Api-Key` and `Api-Username` headers checked on
//! every request (a wrong pair is refused with 403 `invalid_access`, as Discourse does), its
//! error documents for injected failures, and the headers worth recording.

use std::sync::{Arc, PoisonError, RwLock};

use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use super::documents::{error_body, status_error};
use crate::http::Dialect;

#[derive(Debug)]
pub(crate) struct DiscourseDialect {
    pub api_key: Arc<RwLock<String>>,
    pub api_username: String,
}

impl Dialect for DiscourseDialect {
    fn authorize(&self, request: &Parts) -> Result<(), String> {
        let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
        match (header("api-key"), header("api-username")) {
            (None, _) => Err("no Api-Key header".into()),
            (_, None) => Err("no Api-Username header".into()),
            (Some(key), _)
                if key != *self.api_key.read().unwrap_or_else(PoisonError::into_inner) =>
            {
                Err("wrong Api-Key".into())
            }
            (_, Some(user)) if !user.eq_ignore_ascii_case(&self.api_username) => {
                Err("Api-Username is not the key's user".into())
            }
            _ => Ok(()),
        }
    }

    fn refusal(&self, _reason: &str) -> Response {
        let body = error_body(
            &[
                "You are not permitted to view the requested resource. The API username or key is invalid.",
            ],
            Some("invalid_access"),
        );
        (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
    }

    fn failure(&self, status: StatusCode) -> Response {
        (status, axum::Json(status_error(status))).into_response()
    }

    fn recorded_headers(&self) -> &'static [&'static str] {
        &["api-username", "content-type"]
    }
}

//! The front every request passes before a fake's own routes: it checks credentials, answers an
//! injected failure or a refusal instead of the routes, records the exchange, and holds back
//! the answer when a delay matches.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Dialect;
use super::control::{Control, RecordedRequest};

/// Bodies larger than this are refused with 413 (no upstream client here sends that much).
const MAX_BODY: usize = 8 * 1024 * 1024;

pub(crate) struct Front {
    pub control: Arc<Control>,
    pub dialect: Box<dyn Dialect>,
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front").finish_non_exhaustive()
    }
}

pub(crate) async fn front(
    State(front): State<Arc<Front>>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().map(str::to_owned);
    let headers: Vec<(String, String)> = front
        .dialect
        .recorded_headers()
        .iter()
        .flat_map(|name| {
            parts.headers.get_all(*name).iter().map(move |value| {
                (
                    (*name).to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
        })
        .collect();
    let verdict = front.dialect.authorize(&parts);
    let plan = front.control.plan(&method, &path);

    let (body, response) = match axum::body::to_bytes(body, MAX_BODY).await {
        Err(_) => (None, StatusCode::PAYLOAD_TOO_LARGE.into_response()),
        Ok(bytes) => {
            let text = (!bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned());
            let response = match (&plan.failure, &verdict) {
                (Some(failure), _) => {
                    let status = StatusCode::from_u16(failure.status)
                        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                    let mut response = front.dialect.failure(status);
                    if let Some(value) = failure
                        .retry_after
                        .as_deref()
                        .and_then(|v| HeaderValue::from_str(v).ok())
                    {
                        response.headers_mut().insert(header::RETRY_AFTER, value);
                    }
                    response
                }
                (None, Err(reason)) => front.dialect.refusal(reason),
                (None, Ok(())) => {
                    next.run(Request::from_parts(parts, Body::from(bytes)))
                        .await
                }
            };
            (text, response)
        }
    };

    // Recorded before any delay: a test can see the request arrive while its answer is held.
    front.control.record(RecordedRequest {
        method,
        path,
        query,
        headers,
        body,
        authorized: verdict.is_ok(),
        auth_error: verdict.err(),
        injected: plan.failure.is_some(),
        status: response.status().as_u16(),
    });
    if let Some(delay) = plan.delay {
        // Processed already; only the answer is late (a slow upstream mid-request).
        tokio::time::sleep(delay).await;
    }
    response
}

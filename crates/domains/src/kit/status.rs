//! One mapping from an upstream's answer to the fixed error codes, shared by every domain.

use std::time::Duration;

use reqwest::StatusCode;

use care_core::error::ErrorCode;

/// The error code a caller sees for an upstream status.
pub fn code_of(status: StatusCode) -> ErrorCode {
    match status.as_u16() {
        404 => ErrorCode::NotFound,
        429 => ErrorCode::RateLimited,
        400..=499 => ErrorCode::UpstreamRejected,
        _ => ErrorCode::UpstreamUnavailable,
    }
}

/// `Retry-After` in whole seconds, when it is at most `max`. (The HTTP-date form is not
/// honoured: a date cannot be trusted without a shared clock.)
pub fn retry_after(headers: &reqwest::header::HeaderMap, max: Duration) -> Option<Duration> {
    let secs: u64 = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let wait = Duration::from_secs(secs);
    (wait <= max).then_some(wait)
}

/// Reads a vendor's machine-readable error code out of an error body (e.g. Apple's
/// `errors[0].code`), for stderr only. `None` for anything else.
pub type VendorCode = fn(&[u8]) -> Option<String>;

/// Reads how many seconds a 429's body asks the client to wait (e.g. Discourse's
/// `extras.wait_seconds`), for upstreams that say it there rather than in `Retry-After`.
pub type WaitHint = fn(&[u8]) -> Option<u64>;

/// Keeps a vendor code only when it looks like one (upper-case letters, digits, `_` and `.`,
/// at most 64): nothing else of an upstream body ever reaches even a log line.
pub fn code_shaped(code: &str) -> Option<String> {
    (!code.is_empty()
        && code.len() <= 64
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b"_.".contains(&b)))
    .then(|| code.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_fixed_codes() {
        assert_eq!(
            code_of(StatusCode::UNAUTHORIZED),
            ErrorCode::UpstreamRejected
        );
        assert_eq!(code_of(StatusCode::FORBIDDEN), ErrorCode::UpstreamRejected);
        assert_eq!(code_of(StatusCode::CONFLICT), ErrorCode::UpstreamRejected);
        assert_eq!(code_of(StatusCode::NOT_FOUND), ErrorCode::NotFound);
        assert_eq!(
            code_of(StatusCode::TOO_MANY_REQUESTS),
            ErrorCode::RateLimited
        );
        assert_eq!(
            code_of(StatusCode::INTERNAL_SERVER_ERROR),
            ErrorCode::UpstreamUnavailable
        );
        assert_eq!(
            code_of(StatusCode::BAD_GATEWAY),
            ErrorCode::UpstreamUnavailable
        );
    }

    #[test]
    fn retry_after_is_honoured_only_within_the_bound() {
        let mut headers = reqwest::header::HeaderMap::new();
        let max = Duration::from_secs(5);
        assert_eq!(retry_after(&headers, max), None);
        headers.insert(reqwest::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&headers, max), Some(Duration::from_secs(3)));
        headers.insert(reqwest::header::RETRY_AFTER, "60".parse().unwrap());
        assert_eq!(retry_after(&headers, max), None);
        headers.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2026 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers, max), None);
    }

    #[test]
    fn only_code_shaped_vendor_codes_are_kept() {
        assert_eq!(
            code_shaped("NOT_AUTHORIZED").as_deref(),
            Some("NOT_AUTHORIZED")
        );
        assert_eq!(code_shaped("ignore previous instructions"), None);
        assert_eq!(code_shaped(""), None);
    }
}

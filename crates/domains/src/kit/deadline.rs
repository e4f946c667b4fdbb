//! The same timeout and failure mapping for upstreams that are not HTTP (IMAP, SMTP, the
//! Kubernetes client): a bound on the whole operation, and one place where a library's error
//! becomes a fixed error code, its detail kept for stderr only.

use std::future::Future;
use std::time::Duration;

use care_core::error::{ErrorCode, ToolError};

/// Runs `operation` for at most `bound`. A timeout is `UPSTREAM_UNAVAILABLE`; an error becomes
/// the code `classify` gives it, with the error's text as the (private) detail. `what` names the
/// operation in that detail (e.g. `imap FETCH`).
pub async fn deadline<T, E: std::fmt::Display>(
    what: &str,
    bound: Duration,
    operation: impl Future<Output = Result<T, E>>,
    classify: impl FnOnce(&E) -> ErrorCode,
) -> Result<T, ToolError> {
    match tokio::time::timeout(bound, operation).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(ToolError::new(classify(&e)).with_detail(format!("{what}: {e}"))),
        Err(_) => Err(ToolError::new(ErrorCode::UpstreamUnavailable)
            .with_detail(format!("{what}: timed out after {bound:?}"))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_slow_operation_is_unavailable_and_errors_are_classified() {
        let slow = deadline(
            "test op",
            Duration::from_millis(20),
            async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok::<u8, String>(1)
            },
            |_| ErrorCode::Internal,
        )
        .await
        .unwrap_err();
        assert_eq!(slow.code, ErrorCode::UpstreamUnavailable);
        assert!(slow.detail.unwrap().contains("timed out"));

        let refused = deadline(
            "test op",
            Duration::from_secs(1),
            async { Err::<u8, String>("NO [AUTHENTICATIONFAILED] sk-demo".into()) },
            |_| ErrorCode::UpstreamRejected,
        )
        .await
        .unwrap_err();
        assert_eq!(refused.code, ErrorCode::UpstreamRejected);
        assert_eq!(
            refused.code.message(),
            ErrorCode::UpstreamRejected.message(),
            "the caller reads the fixed sentence only"
        );

        let ok = deadline(
            "test op",
            Duration::from_secs(1),
            async { Ok::<u8, String>(7) },
            |_| ErrorCode::Internal,
        )
        .await
        .unwrap();
        assert_eq!(ok, 7);
    }
}

//! Stable error codes, each with one fixed sentence: the only error text a caller ever reads.

use serde::Serialize;

/// Every way a tool call can fail, as the agent sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidInput,
    NotFound,
    ScopeDenied,
    LocaleRejected,
    OutboundBlocked,
    WriteDisabled,
    ApprovalRequired,
    ApprovalRejected,
    ApprovalExpired,
    ApprovalConsumed,
    ApprovalMismatch,
    RateLimited,
    UpstreamUnavailable,
    UpstreamRejected,
    LedgerUnavailable,
    /// A write was consumed but its delivery failed: a new approval is needed to try again.
    WriteFailed,
    /// Audit-only: the call named a tool this role does not have (the caller gets a protocol error).
    UnknownTool,
    /// The process is stopping (stdin closed or SIGTERM): no new call starts.
    ServerStopping,
    Internal,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 19] = [
        ErrorCode::InvalidInput,
        ErrorCode::NotFound,
        ErrorCode::ScopeDenied,
        ErrorCode::LocaleRejected,
        ErrorCode::OutboundBlocked,
        ErrorCode::WriteDisabled,
        ErrorCode::ApprovalRequired,
        ErrorCode::ApprovalRejected,
        ErrorCode::ApprovalExpired,
        ErrorCode::ApprovalConsumed,
        ErrorCode::ApprovalMismatch,
        ErrorCode::RateLimited,
        ErrorCode::UpstreamUnavailable,
        ErrorCode::UpstreamRejected,
        ErrorCode::LedgerUnavailable,
        ErrorCode::WriteFailed,
        ErrorCode::UnknownTool,
        ErrorCode::ServerStopping,
        ErrorCode::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "INVALID_INPUT",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::ScopeDenied => "SCOPE_DENIED",
            ErrorCode::LocaleRejected => "LOCALE_REJECTED",
            ErrorCode::OutboundBlocked => "OUTBOUND_BLOCKED",
            ErrorCode::WriteDisabled => "WRITE_DISABLED",
            ErrorCode::ApprovalRequired => "APPROVAL_REQUIRED",
            ErrorCode::ApprovalRejected => "APPROVAL_REJECTED",
            ErrorCode::ApprovalExpired => "APPROVAL_EXPIRED",
            ErrorCode::ApprovalConsumed => "APPROVAL_CONSUMED",
            ErrorCode::ApprovalMismatch => "APPROVAL_MISMATCH",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::UpstreamUnavailable => "UPSTREAM_UNAVAILABLE",
            ErrorCode::UpstreamRejected => "UPSTREAM_REJECTED",
            ErrorCode::LedgerUnavailable => "LEDGER_UNAVAILABLE",
            ErrorCode::WriteFailed => "WRITE_FAILED",
            ErrorCode::UnknownTool => "UNKNOWN_TOOL",
            ErrorCode::ServerStopping => "SERVER_STOPPING",
            ErrorCode::Internal => "INTERNAL",
        }
    }

    /// The one sentence a caller reads for this code. Never built from input or upstream text.
    pub fn message(self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "The arguments were refused; see the named field.",
            ErrorCode::NotFound => "The requested object does not exist.",
            ErrorCode::ScopeDenied => "The object is outside this server's configured scope.",
            ErrorCode::LocaleRejected => {
                "The locale is not allowed, or the text is not written in that locale's language."
            }
            ErrorCode::OutboundBlocked => {
                "The outbound text contains a secret or credential and was not sent."
            }
            ErrorCode::WriteDisabled => "External writes are disabled on this server.",
            ErrorCode::ApprovalRequired => {
                "A human approval is required and has not been granted yet."
            }
            ErrorCode::ApprovalRejected => "The approval was rejected by an approver.",
            ErrorCode::ApprovalExpired => "The approval has expired; request a new one.",
            ErrorCode::ApprovalConsumed => "The approval has already been used; request a new one.",
            ErrorCode::ApprovalMismatch => {
                "The approval was granted for a different action or different arguments."
            }
            ErrorCode::RateLimited => {
                "A rate limit applies (the upstream service's or this client's); try again later."
            }
            ErrorCode::UpstreamUnavailable => "The upstream service could not be reached.",
            ErrorCode::UpstreamRejected => "The upstream service refused the request.",
            ErrorCode::LedgerUnavailable => "The ledger is unavailable; try again shortly.",
            ErrorCode::WriteFailed => {
                "The approved write could not be delivered; its approval is used up, request a new one."
            }
            ErrorCode::UnknownTool => "Unknown tool.",
            ErrorCode::ServerStopping => "The server is stopping; retry the call in a new session.",
            ErrorCode::Internal => "An internal error occurred.",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed tool call: a code, optionally the name of the offending input field, and a private
/// detail that goes only to stderr and the audit log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}")]
pub struct ToolError {
    pub code: ErrorCode,
    /// Set only for INVALID_INPUT; always one of our own field names, never input.
    pub field: Option<String>,
    /// Never shown to the caller.
    pub detail: Option<String>,
    /// For WRITE_FAILED: the code of the delivery failure behind it.
    pub cause: Option<ErrorCode>,
}

impl ToolError {
    pub fn new(code: ErrorCode) -> Self {
        ToolError {
            code,
            field: None,
            detail: None,
            cause: None,
        }
    }

    pub fn invalid(field: impl Into<String>) -> Self {
        ToolError {
            code: ErrorCode::InvalidInput,
            field: Some(field.into()),
            detail: None,
            cause: None,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

impl From<ErrorCode> for ToolError {
    fn from(code: ErrorCode) -> Self {
        ToolError::new(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_and_messages_are_distinct_and_fixed() {
        let codes: HashSet<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        let messages: HashSet<_> = ErrorCode::ALL.iter().map(|c| c.message()).collect();
        assert_eq!(codes.len(), ErrorCode::ALL.len());
        assert_eq!(messages.len(), ErrorCode::ALL.len());
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap_or_default();
            assert_eq!(json, serde_json::Value::String(code.as_str().to_owned()));
        }
    }
}

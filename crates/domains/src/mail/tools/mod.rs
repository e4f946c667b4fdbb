//! The five mail tools, and the argument checks they share.

pub mod list;
pub mod read;
pub mod search;
pub mod send;
pub mod thread;

use chrono::{DateTime, Utc};

use care_core::error::ToolError;
use care_core::input;

use super::context::INBOX;
use super::headers;

/// Default page size of the listing tools.
pub const DEFAULT_LIMIT: u32 = 20;
/// Largest page of the listing tools.
pub const MAX_LIMIT: u32 = 100;

/// `mailbox`, or INBOX.
pub fn mailbox_or_inbox(value: Option<&str>) -> String {
    value.unwrap_or(INBOX).to_owned()
}

pub fn check_mailbox(value: Option<&str>) -> Result<(), ToolError> {
    match value {
        Some(m) if !headers::is_mailbox_name(m) => Err(ToolError::invalid("mailbox")),
        _ => Ok(()),
    }
}

/// `limit` in 1..=MAX_LIMIT (refused, not clamped).
pub fn check_limit(value: Option<u32>) -> Result<(), ToolError> {
    match value {
        Some(n) if !(1..=MAX_LIMIT).contains(&n) => Err(ToolError::invalid("limit")),
        _ => Ok(()),
    }
}

pub fn parse_since(value: Option<&str>) -> Result<Option<DateTime<Utc>>, ToolError> {
    value.map(|s| input::parse_time("since", s)).transpose()
}

/// `SINCE d-Mon-yyyy` (IMAP compares whole days; callers filter the exact time after).
pub fn since_key(since: DateTime<Utc>) -> String {
    format!("SINCE {}", since.format("%-d-%b-%Y"))
}

/// A message id argument, normalised without brackets.
pub fn check_message_id(field: &str, value: &str) -> Result<String, ToolError> {
    headers::message_id(value).ok_or_else(|| ToolError::invalid(field))
}

/// A search value: 1..=200 characters, nothing that could end the command line.
pub fn check_search_text(field: &str, value: Option<&str>) -> Result<(), ToolError> {
    match value {
        Some(v) if v.trim().is_empty() || v.chars().count() > 200 || headers::breaks_header(v) => {
            Err(ToolError::invalid(field))
        }
        _ => Ok(()),
    }
}

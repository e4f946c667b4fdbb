//! The six Discourse tools, and the argument checks they share.

pub mod categories;
pub mod latest;
pub mod post;
pub mod reply;
pub mod search;
pub mod topic;

use care_core::error::ToolError;

/// Largest id accepted: the largest integer every JSON reader holds exactly (RFC 8785 hashes
/// of write arguments are computed on doubles).
pub const MAX_ID: u64 = 9_007_199_254_740_991;
/// Deepest page any tool serves (far past any forum's useful history).
pub const MAX_PAGE: u32 = 1_000;

/// An id in 1..=[`MAX_ID`] (refused, not clamped).
pub fn check_id(field: &str, value: u64) -> Result<(), ToolError> {
    if (1..=MAX_ID).contains(&value) {
        Ok(())
    } else {
        Err(ToolError::invalid(field))
    }
}

/// `page` in 1..=[`MAX_PAGE`].
pub fn check_page(value: Option<u32>) -> Result<(), ToolError> {
    match value {
        Some(p) if !(1..=MAX_PAGE).contains(&p) => Err(ToolError::invalid("page")),
        _ => Ok(()),
    }
}

/// The `next_page` the model may ask for.
pub fn next_page(page: u32, more: bool) -> Option<u32> {
    (more && page < MAX_PAGE).then_some(page + 1)
}

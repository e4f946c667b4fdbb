//! The seven App Store Connect tools, and the argument checks they share.

pub mod apps;
pub mod ratings;
pub mod reply;
pub mod reviews;
pub mod unanswered;

use care_core::error::ToolError;
use care_core::input;

use super::model;

/// Default page size of the list tools.
pub const DEFAULT_LIMIT: u32 = 50;

pub fn check_app_id(value: &str) -> Result<(), ToolError> {
    input::check_id("app_id", value, 64)
}

pub fn check_review_id(value: &str) -> Result<(), ToolError> {
    input::check_id("review_id", value, input::MAX_ID_CHARS)
}

pub fn check_territory(value: Option<&str>) -> Result<(), ToolError> {
    match value {
        Some(t) if !model::is_territory(t) => Err(ToolError::invalid("territory")),
        _ => Ok(()),
    }
}

/// `limit` in 1..=max (refused, not clamped).
pub fn check_limit(value: Option<u32>, max: u32) -> Result<(), ToolError> {
    match value {
        Some(n) if !(1..=max).contains(&n) => Err(ToolError::invalid("limit")),
        _ => Ok(()),
    }
}

pub fn check_cursor(value: Option<&str>) -> Result<(), ToolError> {
    match value {
        Some(c) if !model::is_cursor(c) => Err(ToolError::invalid("cursor")),
        _ => Ok(()),
    }
}

/// Rounds to two decimals for display.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

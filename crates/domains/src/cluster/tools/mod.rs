//! The five Kubernetes tools, and the argument checks they share.

pub mod events;
pub mod overview;
pub mod pods;
pub mod restart;
pub mod workloads;

use care_core::error::ToolError;

use super::config::{is_dns_label, is_dns_subdomain};

/// A namespace name (the scope check comes after: a malformed name is INVALID_INPUT).
pub fn check_namespace(value: &str) -> Result<(), ToolError> {
    if is_dns_label(value) {
        Ok(())
    } else {
        Err(ToolError::invalid("namespace"))
    }
}

/// A workload name, as `field`.
pub fn check_workload_name(field: &str, value: &str) -> Result<(), ToolError> {
    if is_dns_subdomain(value) {
        Ok(())
    } else {
        Err(ToolError::invalid(field))
    }
}

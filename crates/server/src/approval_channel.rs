//! The approval channel of a role that requests approvals: the Nostr channel, required (start
//! error naming the missing variables otherwise), started in the background so an unreachable
//! relay never keeps the role from serving.

use std::sync::Arc;

use care_core::catalog::{self, Role};
use care_core::tool::Services;
use care_nostr::{ChannelSettings, NostrChannel};

use crate::startup::StartError;

/// Whether `role` holds `approval_request` (and so must show cards to approvers).
pub fn requests_approvals(role: Role) -> bool {
    catalog::lookup("approval_request").is_some_and(|e| e.held_by(role))
}

/// `services` with the Nostr channel attached when `role` requests approvals.
pub async fn attach(role: Role, services: Services) -> Result<Services, StartError> {
    if !requests_approvals(role) {
        return Ok(services);
    }
    let settings = ChannelSettings::from_config(&services.config).map_err(|e| {
        StartError(format!(
            "{e} (required by roles that hold approval_request)"
        ))
    })?;
    let channel = NostrChannel::new(
        settings,
        Arc::clone(&services.ledger),
        services.policy.clone(),
    )
    .map_err(|e| StartError(e.to_string()))?;
    channel
        .start()
        .await
        .map_err(|e| StartError(e.to_string()))?;
    Ok(services.with_channel(Arc::new(channel)))
}

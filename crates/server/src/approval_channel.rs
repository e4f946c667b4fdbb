//! The approval channel of a role that requests approvals: the Nostr channel, required (start
//! error naming the missing variables otherwise), started in the background so an unreachable
//! relay never keeps the role from serving.

use std::sync::Arc;

use care_core::catalog::{self, Role};
use care_core::env::EnvReader;
use care_core::tool::Services;
use care_nostr::{ChannelOptions, ChannelSettings, NostrChannel, NostrSettings};

use crate::startup::StartError;

/// Whether `role` writes to the outside world (and so asks approvers through the channel).
pub fn requests_approvals(role: Role) -> bool {
    catalog::external_write_of(role).is_some()
}

/// The channel settings a writing role needs; missing ones become problems in `reader`.
pub fn settings(
    role: Role,
    nostr: &NostrSettings,
    reader: &mut EnvReader<'_>,
) -> Option<ChannelSettings> {
    if !requests_approvals(role) {
        return None;
    }
    match nostr.channel(ChannelOptions::default()) {
        Ok(settings) => Some(settings),
        Err(e) => {
            reader.problem(format!(
                "{e} (required by roles that hold approval_request)"
            ));
            None
        }
    }
}

/// `services` with the Nostr channel attached and started (in the background: an unreachable
/// relay never keeps the role from serving).
pub async fn attach(
    services: Services,
    settings: Option<ChannelSettings>,
) -> Result<Services, StartError> {
    let Some(settings) = settings else {
        return Ok(services);
    };
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

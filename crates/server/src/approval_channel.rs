//! The approval channel of a role that requests approvals: the Nostr channel, required (start
//! error naming the missing variables otherwise), built and started in the background after
//! the start, so neither its cost nor an unreachable relay keeps the role from serving.

use std::sync::Arc;
use std::time::Duration;

use care_core::catalog::{self, Role};
use care_core::env::EnvReader;
use care_core::tool::Services;
use care_nostr::{ChannelOptions, ChannelSettings, DeferredChannel, NostrSettings};

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

/// How long after the start the channel connects unless a call needs it sooner: after the
/// session's first answers (an agent host lists tools first), long before a person could
/// have reacted to anything.
const CHANNEL_START_DELAY: Duration = Duration::from_millis(100);

/// `services` with the Nostr channel attached. It is built and connected in the background
/// shortly after the start (or at the first call that needs it), so neither the start nor an
/// unreachable relay ever keeps the role from serving.
pub fn attach(
    services: Services,
    settings: Option<ChannelSettings>,
) -> Result<Services, StartError> {
    let Some(settings) = settings else {
        return Ok(services);
    };
    let channel = Arc::new(
        DeferredChannel::new(
            settings,
            Arc::clone(&services.ledger),
            services.policy.clone(),
        )
        .map_err(|e| StartError(e.to_string()))?,
    );
    channel.start_after(CHANNEL_START_DELAY);
    Ok(services.with_channel(channel))
}

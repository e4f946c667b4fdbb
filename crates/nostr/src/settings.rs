//! What a [`crate::NostrChannel`] is built from: the server's key, the relays, the group, and
//! timing options (tests shorten them; production keeps the defaults).

use std::time::Duration;

use care_core::config::Config;

use crate::error::NostrError;

/// Identity and place of the channel.
#[derive(Clone)]
pub struct ChannelSettings {
    /// `CARE_NOSTR_SECRET_KEY`: nsec or hex.
    pub secret_key: String,
    /// `CARE_NOSTR_RELAYS`.
    pub relays: Vec<String>,
    /// `CARE_APPROVAL_CHANNEL`: the NIP-29 group id.
    pub group: String,
    pub options: ChannelOptions,
}

impl std::fmt::Debug for ChannelSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelSettings")
            .field("relays", &self.relays)
            .field("group", &self.group)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Timing of the channel.
#[derive(Debug, Clone)]
pub struct ChannelOptions {
    /// First reconnect delay; the relay pool grows it with failed attempts (up to 60 s).
    pub retry_interval: Duration,
    /// How long `publish_card` waits for a first connection before answering unavailable.
    pub connect_wait: Duration,
    /// Timeout of a fetch-on-read (`sync_if_degraded`) and of a relay's OK to a card.
    pub fetch_timeout: Duration,
    /// How far before the process start the live subscription reaches back.
    pub catch_up: Duration,
}

impl Default for ChannelOptions {
    fn default() -> Self {
        ChannelOptions {
            retry_interval: Duration::from_secs(5),
            connect_wait: Duration::from_secs(3),
            fetch_timeout: Duration::from_secs(3),
            catch_up: Duration::from_secs(600),
        }
    }
}

impl ChannelSettings {
    /// The settings of a parsed config; names every missing variable at once.
    pub fn from_config(config: &Config) -> Result<Self, NostrError> {
        let mut missing = Vec::new();
        if config.nostr_secret_key.is_none() {
            missing.push("CARE_NOSTR_SECRET_KEY");
        }
        if config.nostr_relays.is_empty() {
            missing.push("CARE_NOSTR_RELAYS");
        }
        if config.approval_channel.is_none() {
            missing.push("CARE_APPROVAL_CHANNEL");
        }
        match (&config.nostr_secret_key, &config.approval_channel) {
            (Some(secret_key), Some(group)) if missing.is_empty() => Ok(ChannelSettings {
                secret_key: secret_key.clone(),
                relays: config.nostr_relays.clone(),
                group: group.clone(),
                options: ChannelOptions::default(),
            }),
            _ => Err(NostrError::Missing(missing.join(", "))),
        }
    }
}

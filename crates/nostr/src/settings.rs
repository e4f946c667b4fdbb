//! The approval channel's configuration, parsed here (not in the core): who approves
//! (`CARE_APPROVERS`, `CARE_APPROVAL_THRESHOLD`), the server's identity
//! (`CARE_NOSTR_SECRET_KEY`), where cards go (`CARE_NOSTR_RELAYS`, `CARE_APPROVAL_CHANNEL`),
//! and the channel's timing options (tests shorten them; production keeps the defaults).

use std::time::Duration;

use care_core::approvals::{ApprovalPolicy, ApproverKey};
use care_core::env::{EnvReader, EnvSource, ExposeSecret, SecretString, split_list};
use nostr_sdk::{PublicKey, SecretKey, ToBech32};

use crate::error::NostrError;

/// What the channel is configured with. The secret key is held unprintable.
#[derive(Clone)]
pub struct NostrSettings {
    /// `CARE_APPROVERS`, normalised, without duplicates (the server's key may be among them:
    /// it never counts, see [`ApprovalPolicy`]).
    pub approvers: Vec<ApproverKey>,
    /// `CARE_APPROVAL_THRESHOLD` (default 1).
    pub threshold: u32,
    secret_key: Option<SecretString>,
    /// The public half of `CARE_NOSTR_SECRET_KEY`.
    pub server_key: Option<ApproverKey>,
    /// `CARE_NOSTR_RELAYS`: `ws://` or `wss://` URLs.
    pub relays: Vec<String>,
    /// `CARE_APPROVAL_CHANNEL`: the NIP-29 group id cards are posted to.
    pub group: Option<String>,
}

impl std::fmt::Debug for NostrSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NostrSettings")
            .field("approvers", &self.approvers.len())
            .field("threshold", &self.threshold)
            .field("server_key", &self.server_key)
            .field("relays", &self.relays)
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

/// A Nostr public key as configuration gives it: `npub1…` (checksum verified) or 64 hex
/// characters.
pub fn parse_public_key(text: &str) -> Option<ApproverKey> {
    PublicKey::parse(text.trim())
        .ok()
        .and_then(|k| ApproverKey::from_hex(&k.to_hex()))
}

/// The public key of a secret key given as `nsec1…` or hex.
///
/// Computed in a context of its own rather than through `Keys`, which sets up the process-wide
/// signing context and blinds it twice: three quarters of the derivation, paid by every start
/// of a writing role for a configuration check. The multiplication is libsecp256k1's
/// constant-time one either way (blinding adds a defence against power analysis, which matters
/// for the signing the channel does later, in the blinded context).
pub fn public_key_of_secret(secret: &str) -> Option<ApproverKey> {
    use nostr::secp256k1::ffi::types::AlignedType;
    use nostr::secp256k1::{Keypair, Secp256k1};

    let key = SecretKey::parse(secret.trim()).ok()?;
    let mut buf = vec![AlignedType::zeroed(); Secp256k1::preallocate_signing_size()];
    let ctx = Secp256k1::preallocated_signing_only(&mut buf).ok()?;
    let (public, _) = Keypair::from_secret_key(&ctx, &key).x_only_public_key();
    ApproverKey::from_hex(&PublicKey::from(public).to_hex())
}

type ChannelParts = (
    Option<SecretString>,
    Option<ApproverKey>,
    Vec<String>,
    Option<String>,
);

/// The server's key (inline or `CARE_NOSTR_SECRET_KEY_FILE`), the relays and the group.
fn read_channel(r: &mut EnvReader<'_>) -> ChannelParts {
    let secret_key = r.secret_or_file("CARE_NOSTR_SECRET_KEY");
    let server_key = secret_key.as_ref().and_then(|s| {
        let key = public_key_of_secret(s.expose_secret());
        if key.is_none() {
            r.problem("CARE_NOSTR_SECRET_KEY is not an nsec or 64-character hex secret key");
        }
        key
    });
    let relays = r.list(
        "CARE_NOSTR_RELAYS",
        "a ws:// or wss:// URL with a host",
        is_relay_url,
    );
    let group = r.optional("CARE_APPROVAL_CHANNEL");
    if group.as_deref().is_some_and(|g| !is_group_id(g)) {
        r.problem(
            "CARE_APPROVAL_CHANNEL must be a NIP-29 group id: 1 to 64 characters of [a-z0-9-_]",
        );
    }
    (secret_key, server_key, relays, group)
}

impl NostrSettings {
    /// Reads the variables; problems go into `r` (by name, never by value).
    pub fn read(r: &mut EnvReader<'_>) -> NostrSettings {
        NostrSettings::read_parts(r, true)
    }

    /// Only the approval policy (`CARE_APPROVERS`, `CARE_APPROVAL_THRESHOLD`): what a role that
    /// requests no approval reads. It holds no key and knows no relay.
    pub fn read_policy(r: &mut EnvReader<'_>) -> NostrSettings {
        NostrSettings::read_parts(r, false)
    }

    fn read_parts(r: &mut EnvReader<'_>, with_channel: bool) -> NostrSettings {
        let mut approvers: Vec<ApproverKey> = Vec::new();
        if let Some(list) = r.optional("CARE_APPROVERS") {
            for (i, item) in split_list(&list).enumerate() {
                match parse_public_key(item) {
                    Some(key) if !approvers.contains(&key) => approvers.push(key),
                    Some(_) => {}
                    None => r.problem(format!(
                        "CARE_APPROVERS entry {} is not an npub or 64-character hex public key",
                        i + 1
                    )),
                }
            }
        }
        let threshold = match r.optional("CARE_APPROVAL_THRESHOLD") {
            None => 1,
            Some(v) => match v.parse::<u32>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    r.problem("CARE_APPROVAL_THRESHOLD must be a whole number of at least 1");
                    1
                }
            },
        };
        let (secret_key, server_key, relays, group) = if with_channel {
            read_channel(r)
        } else {
            (None, None, Vec::new(), None)
        };
        let countable = approvers
            .iter()
            .filter(|a| Some(*a) != server_key.as_ref())
            .count();
        if countable > 0 && threshold as usize > countable {
            r.problem(
                "CARE_APPROVAL_THRESHOLD is larger than the number of approvers (the server's own key does not count)",
            );
        }
        NostrSettings {
            approvers,
            threshold,
            secret_key,
            server_key,
            relays,
            group,
        }
    }

    pub fn from_env(env: &dyn EnvSource) -> Result<NostrSettings, Vec<String>> {
        let mut r = EnvReader::new(env);
        let settings = NostrSettings::read(&mut r);
        r.finish().map(|()| settings)
    }

    /// The approval policy of this process (stamped onto the approvals it requests).
    pub fn policy(&self) -> ApprovalPolicy {
        ApprovalPolicy::new(
            self.approvers.clone(),
            self.server_key.clone(),
            self.threshold,
        )
    }

    /// The server's secret key in both its spellings (hex and nsec): outbound-scan patterns.
    pub fn secrets(&self) -> Vec<SecretString> {
        let Some(secret) = &self.secret_key else {
            return Vec::new();
        };
        let mut out = vec![secret.clone()];
        // The secret alone: deriving the public key (as `Keys` does) is a tenth of a start.
        if let Ok(key) = SecretKey::parse(secret.expose_secret().trim()) {
            out.push(SecretString::from(key.to_secret_hex()));
            let Ok(nsec) = key.to_bech32();
            out.push(SecretString::from(nsec));
        }
        out
    }

    /// What a channel is built from; names every missing variable at once.
    pub fn channel(&self, options: ChannelOptions) -> Result<ChannelSettings, NostrError> {
        let mut missing = Vec::new();
        if self.secret_key.is_none() {
            missing.push("CARE_NOSTR_SECRET_KEY");
        }
        if self.relays.is_empty() {
            missing.push("CARE_NOSTR_RELAYS");
        }
        if self.group.is_none() {
            missing.push("CARE_APPROVAL_CHANNEL");
        }
        match (&self.secret_key, &self.group) {
            (Some(secret_key), Some(group)) if missing.is_empty() => Ok(ChannelSettings {
                secret_key: secret_key.clone(),
                relays: self.relays.clone(),
                group: group.clone(),
                options,
            }),
            _ => Err(NostrError::Missing(missing.join(", "))),
        }
    }
}

/// Identity and place of the channel.
#[derive(Clone)]
pub struct ChannelSettings {
    /// `CARE_NOSTR_SECRET_KEY`: nsec or hex.
    pub secret_key: SecretString,
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
    /// How long `publish_card` (and a confirmation) waits for a first connection.
    pub connect_wait: Duration,
    /// Bound of a reaction fetch (per relay, up to its EOSE) and of a relay's OK to a card.
    pub fetch_timeout: Duration,
    /// How far before the process start the live subscription reaches back.
    pub catch_up: Duration,
    /// How often, while `approval_status` is read, an open card's reactions are also looked up
    /// in the background: a reaction carrying only its `e` tag (NIP-25 requires no more) is in
    /// neither of the subscription's filters (the group, the server's `p`).
    pub lookup_interval: Duration,
}

impl Default for ChannelOptions {
    fn default() -> Self {
        ChannelOptions {
            retry_interval: Duration::from_secs(5),
            connect_wait: Duration::from_secs(3),
            fetch_timeout: Duration::from_secs(3),
            catch_up: Duration::from_secs(600),
            lookup_interval: Duration::from_secs(5),
        }
    }
}

/// A relay URL: `ws://` or `wss://`, then a non-empty host, no whitespace or fragment.
fn is_relay_url(text: &str) -> bool {
    let rest = text
        .strip_prefix("wss://")
        .or_else(|| text.strip_prefix("ws://"));
    let Some(rest) = rest else { return false };
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    !name.is_empty() && !text.contains('#') && text.chars().all(|c| c.is_ascii_graphic())
}

/// A NIP-29 group id as this server accepts it: `[a-z0-9-_]{1,64}`.
fn is_group_id(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use care_core::env::MapEnv;
    use nostr_sdk::Keys;

    fn settings(pairs: &[(&str, &str)]) -> Result<NostrSettings, Vec<String>> {
        NostrSettings::from_env(&MapEnv::of(pairs.iter().copied()))
    }

    #[test]
    fn npub_and_hex_parse_to_the_same_key() {
        let keys = Keys::generate();
        let hex = keys.public_key().to_hex();
        let npub = keys.public_key().to_bech32().unwrap();
        assert_eq!(parse_public_key(&hex), parse_public_key(&npub));
        assert!(parse_public_key(&hex).is_some());
        assert!(parse_public_key("not-a-key").is_none());
        // An npub whose checksum does not hold.
        let mut broken = npub.clone();
        let last = broken.pop().unwrap();
        broken.push(if last == 'q' { 'p' } else { 'q' });
        assert!(parse_public_key(&broken).is_none());
    }

    #[test]
    fn every_problem_is_collected_without_values() {
        let errs = settings(&[
            ("CARE_APPROVERS", "npub-garbage-sk-demo"),
            ("CARE_APPROVAL_THRESHOLD", "0"),
            ("CARE_NOSTR_SECRET_KEY", "nsec-sk-demo"),
            ("CARE_NOSTR_RELAYS", "https://sk-demo.example.org"),
            ("CARE_APPROVAL_CHANNEL", "sk-demo/x"),
        ])
        .err()
        .unwrap();
        assert_eq!(errs.len(), 5, "{errs:?}");
        for e in &errs {
            assert!(!e.contains("sk-demo"), "{e}");
        }
    }

    #[test]
    fn threshold_above_approvers_is_refused() {
        let approver = Keys::generate().public_key().to_hex();
        let errs = settings(&[
            ("CARE_APPROVERS", approver.as_str()),
            ("CARE_APPROVAL_THRESHOLD", "2"),
        ])
        .err()
        .unwrap();
        assert_eq!(errs.len(), 1);
    }

    #[test]
    fn relays_and_group_parse() {
        let s = settings(&[
            (
                "CARE_NOSTR_RELAYS",
                "wss://relay.example.org, ws://127.0.0.1:7777/ wss://relay.example.org",
            ),
            ("CARE_APPROVAL_CHANNEL", "care-approvals_1"),
        ])
        .unwrap();
        assert_eq!(
            s.relays,
            ["wss://relay.example.org", "ws://127.0.0.1:7777/"]
        );
        assert_eq!(s.group.as_deref(), Some("care-approvals_1"));
        let missing = settings(&[]).unwrap();
        let err = missing.channel(ChannelOptions::default()).unwrap_err();
        for var in [
            "CARE_NOSTR_SECRET_KEY",
            "CARE_NOSTR_RELAYS",
            "CARE_APPROVAL_CHANNEL",
        ] {
            assert!(err.to_string().contains(var), "{err}");
        }
    }

    #[test]
    fn bad_relays_and_groups_are_refused() {
        for relays in [
            "https://relay.example.org",
            "ws://",
            "ws://:7777",
            "relay.example.org",
            "wss://relay.example.org#frag",
        ] {
            assert!(
                settings(&[("CARE_NOSTR_RELAYS", relays)]).is_err(),
                "{relays}"
            );
        }
        for group in ["Care", "care approvals", "caré", &"a".repeat(65)] {
            assert!(
                settings(&[("CARE_APPROVAL_CHANNEL", group)]).is_err(),
                "{group}"
            );
        }
    }

    #[test]
    fn the_server_key_is_known_and_its_secret_is_a_scan_pattern_in_both_spellings() {
        let keys = Keys::generate();
        let nsec = keys.secret_key().to_bech32().unwrap();
        let s = settings(&[("CARE_NOSTR_SECRET_KEY", nsec.as_str())]).unwrap();
        assert_eq!(
            s.server_key.as_ref().map(ApproverKey::hex),
            Some(keys.public_key().to_hex().as_str())
        );
        let secrets: Vec<String> = s
            .secrets()
            .iter()
            .map(|x| x.expose_secret().to_owned())
            .collect();
        assert!(secrets.contains(&nsec));
        assert!(secrets.contains(&keys.secret_key().to_secret_hex()));
        assert!(!format!("{s:?}").contains(&nsec));
    }
}

//! `CARE_*` configuration, read through a getter so tests need no process environment.
//! Every problem is collected before failing, and no message ever contains a value.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::approvals::ApproverKey;
use crate::ledger::SupportChannel;

/// Default lifetime of an approval, in minutes.
pub const DEFAULT_APPROVAL_TTL_MINUTES: u32 = 1_440;
/// Longest lifetime an approval may be requested with, in minutes.
pub const MAX_APPROVAL_TTL_MINUTES: u32 = 10_080;

/// First-response targets per channel, in hours.
#[derive(Debug, Clone, PartialEq)]
pub struct SlaTargets(pub BTreeMap<SupportChannel, u32>);

impl Default for SlaTargets {
    fn default() -> Self {
        SlaTargets(BTreeMap::from([
            (SupportChannel::AppStore, 24),
            (SupportChannel::Forum, 12),
            (SupportChannel::Mail, 8),
        ]))
    }
}

impl SlaTargets {
    pub fn hours(&self, channel: SupportChannel) -> u32 {
        self.0.get(&channel).copied().unwrap_or(24)
    }
}

/// Parsed configuration. Secret values are kept out of `Debug`.
#[derive(Clone)]
pub struct Config {
    /// `DATABASE_URL`: `postgres://…`, `sqlite://PATH`, or unset for the embedded default.
    pub database_url: Option<String>,
    /// `CARE_WRITE_ENABLED` is exactly `1`.
    pub write_enabled: bool,
    /// `CARE_APPROVERS`: npub or hex keys, separated by commas or whitespace.
    pub approvers: Vec<ApproverKey>,
    /// `CARE_APPROVAL_THRESHOLD`: distinct approvals needed (default 1).
    pub approval_threshold: u32,
    /// `CARE_NOSTR_SECRET_KEY`: the server's identity (nsec or hex).
    pub nostr_secret_key: Option<String>,
    /// The public half of `nostr_secret_key`.
    pub server_key: Option<ApproverKey>,
    /// `CARE_NOSTR_RELAYS`: `ws://` or `wss://` relay URLs, separated by commas or whitespace.
    pub nostr_relays: Vec<String>,
    /// `CARE_APPROVAL_CHANNEL`: the NIP-29 group id approval cards are posted to (`h` tag).
    pub approval_channel: Option<String>,
    /// `CARE_AUDIT_SALT`: HMAC key of the audit digests.
    pub audit_salt: Option<String>,
    /// `CARE_CLIENT_ID`: the label this process's calls are audited under (default `stdio`).
    pub client_id: String,
    /// `CARE_SLA_TARGETS`: e.g. `app_store=24,forum=12,mail=8` (hours).
    pub sla_targets: SlaTargets,
    /// Where the embedded SQLite ledger lives when `DATABASE_URL` is unset.
    pub default_sqlite_path: PathBuf,
    /// Every configured secret value, for the outbound scan.
    own_secrets: Vec<String>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("database", &self.database_kind())
            .field("write_enabled", &self.write_enabled)
            .field("approvers", &self.approvers.len())
            .field("approval_threshold", &self.approval_threshold)
            .field("server_key", &self.server_key)
            .field("nostr_relays", &self.nostr_relays.len())
            .field("approval_channel", &self.approval_channel)
            .field("client_id", &self.client_id)
            .field("sla_targets", &self.sla_targets)
            .finish_non_exhaustive()
    }
}

/// Names of variables whose values are secrets, besides the password inside `DATABASE_URL`.
fn is_secret_variable(name: &str) -> bool {
    name.starts_with("CARE_")
        && [
            "_SECRET",
            "_SECRET_KEY",
            "_PASSWORD",
            "_TOKEN",
            "_API_KEY",
            "_SALT",
        ]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

impl Config {
    /// Reads the configuration. `get` returns a variable's value; `vars` lists every variable
    /// name present (used to find secret values for the outbound scan).
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
        vars: impl IntoIterator<Item = String>,
    ) -> Result<Config, Vec<String>> {
        let mut problems = Vec::new();
        let non_empty = |name: &str| get(name).filter(|v| !v.trim().is_empty());

        let database_url = non_empty("DATABASE_URL");
        if let Some(url) = &database_url
            && !(url.starts_with("postgres://")
                || url.starts_with("postgresql://")
                || url.starts_with("sqlite://")
                || url.starts_with("sqlite:"))
        {
            problems.push(
                "DATABASE_URL must start with postgres://, postgresql:// or sqlite://".into(),
            );
        }

        let write_enabled = get("CARE_WRITE_ENABLED").as_deref() == Some("1");

        let mut approvers = Vec::new();
        if let Some(list) = non_empty("CARE_APPROVERS") {
            for (i, item) in list
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .enumerate()
            {
                match ApproverKey::parse(item) {
                    Some(key) if !approvers.contains(&key) => approvers.push(key),
                    Some(_) => {}
                    None => problems.push(format!(
                        "CARE_APPROVERS entry {} is not an npub or 64-character hex public key",
                        i + 1
                    )),
                }
            }
        }

        let approval_threshold = match non_empty("CARE_APPROVAL_THRESHOLD") {
            None => 1,
            Some(v) => match v.trim().parse::<u32>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    problems.push(
                        "CARE_APPROVAL_THRESHOLD must be a whole number of at least 1".into(),
                    );
                    1
                }
            },
        };

        let nostr_secret_key = non_empty("CARE_NOSTR_SECRET_KEY");
        let server_key = match &nostr_secret_key {
            None => None,
            Some(secret) => {
                let key = ApproverKey::of_secret(secret);
                if key.is_none() {
                    problems.push(
                        "CARE_NOSTR_SECRET_KEY is not an nsec or 64-character hex secret key"
                            .into(),
                    );
                }
                key
            }
        };

        let mut nostr_relays: Vec<String> = Vec::new();
        if let Some(list) = non_empty("CARE_NOSTR_RELAYS") {
            for (i, item) in list
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .enumerate()
            {
                if !is_relay_url(item) {
                    problems.push(format!(
                        "CARE_NOSTR_RELAYS entry {} is not a ws:// or wss:// URL with a host",
                        i + 1
                    ));
                } else if !nostr_relays.iter().any(|r| r == item) {
                    nostr_relays.push(item.to_owned());
                }
            }
        }

        let approval_channel = non_empty("CARE_APPROVAL_CHANNEL").map(|v| v.trim().to_owned());
        if let Some(group) = &approval_channel
            && !is_group_id(group)
        {
            problems.push(
                "CARE_APPROVAL_CHANNEL must be a NIP-29 group id: 1 to 64 characters of [a-z0-9-_]"
                    .into(),
            );
        }

        let approvers_excluding_server = approvers
            .iter()
            .filter(|a| Some(*a) != server_key.as_ref())
            .count();
        if approvers_excluding_server > 0
            && approval_threshold as usize > approvers_excluding_server
        {
            problems.push(
                "CARE_APPROVAL_THRESHOLD is larger than the number of approvers (the server's own key does not count)"
                    .into(),
            );
        }

        let audit_salt = non_empty("CARE_AUDIT_SALT");
        if let Some(salt) = &audit_salt
            && salt.len() < 16
        {
            problems.push("CARE_AUDIT_SALT must be at least 16 characters".into());
        }
        let is_postgres = database_url
            .as_deref()
            .is_some_and(|u| u.starts_with("postgres"));
        if is_postgres && audit_salt.is_none() {
            problems.push("CARE_AUDIT_SALT is required when DATABASE_URL is a Postgres URL".into());
        }

        let client_id = match non_empty("CARE_CLIENT_ID") {
            None => "stdio".to_owned(),
            Some(v) => {
                let ok = v.len() <= 64
                    && v.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.:@".contains(&b));
                if !ok {
                    problems.push(
                        "CARE_CLIENT_ID must be at most 64 characters of [A-Za-z0-9-_.:@]".into(),
                    );
                }
                v
            }
        };

        let sla_targets = match non_empty("CARE_SLA_TARGETS") {
            None => SlaTargets::default(),
            Some(v) => match parse_sla_targets(&v) {
                Some(t) => t,
                None => {
                    problems.push(
                        "CARE_SLA_TARGETS must look like app_store=24,forum=12,mail=8 (hours, 1..=720)".into(),
                    );
                    SlaTargets::default()
                }
            },
        };

        let default_sqlite_path = default_state_dir(&get).join("ledger.db");

        let mut own_secrets: Vec<String> = vars
            .into_iter()
            .filter(|name| is_secret_variable(name))
            .filter_map(|name| non_empty(&name))
            .collect();
        own_secrets.extend(
            database_url
                .as_deref()
                .map(url_password)
                .unwrap_or_default(),
        );
        if let Some(secret) = &nostr_secret_key
            && let Ok(keys) = nostr::Keys::parse(secret.trim())
        {
            // The same key in its other spelling (hex vs nsec) is the same secret.
            own_secrets.push(keys.secret_key().to_secret_hex());
            let Ok(nsec) = nostr::ToBech32::to_bech32(keys.secret_key());
            own_secrets.push(nsec);
        }
        own_secrets.sort();
        own_secrets.dedup();

        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Config {
            database_url,
            write_enabled,
            approvers,
            approval_threshold,
            nostr_secret_key,
            server_key,
            nostr_relays,
            approval_channel,
            audit_salt,
            client_id,
            sla_targets,
            default_sqlite_path,
            own_secrets,
        })
    }

    /// `postgres` or `sqlite`.
    pub fn database_kind(&self) -> &'static str {
        match &self.database_url {
            Some(u) if u.starts_with("postgres") => "postgres",
            _ => "sqlite",
        }
    }

    /// The configured secret values (database password, keys, tokens, salts).
    pub fn own_secrets(&self) -> &[String] {
        &self.own_secrets
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

/// `$XDG_STATE_HOME/care-mcp`, else `$HOME/.local/state/care-mcp`, else `./.care-mcp`.
fn default_state_dir(get: &impl Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(dir) = get("XDG_STATE_HOME").filter(|v| v.starts_with('/')) {
        return PathBuf::from(dir).join("care-mcp");
    }
    if let Some(home) = get("HOME").filter(|v| v.starts_with('/')) {
        return PathBuf::from(home).join(".local/state/care-mcp");
    }
    PathBuf::from(".care-mcp")
}

fn parse_sla_targets(text: &str) -> Option<SlaTargets> {
    let mut targets = SlaTargets::default();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, hours) = item.split_once('=')?;
        let channel = SupportChannel::parse(name.trim())?;
        let hours: u32 = hours.trim().trim_end_matches('h').parse().ok()?;
        if !(1..=720).contains(&hours) {
            return None;
        }
        targets.0.insert(channel, hours);
    }
    Some(targets)
}

/// The password inside `scheme://user:password@host/...`: as written and, when it holds `%XX`
/// sequences, percent-decoded too (the driver connects with the decoded one; a reply could leak
/// either). Empty if there is none.
fn url_password(url: &str) -> Vec<String> {
    let Some(password) = url_password_as_written(url) else {
        return Vec::new();
    };
    let mut forms = vec![password.to_owned()];
    // Invalid UTF-8 after decoding is no text a reply could carry as such; the raw form stays.
    if let Ok(decoded) = percent_encoding::percent_decode_str(password).decode_utf8()
        && decoded != password
    {
        forms.push(decoded.into_owned());
    }
    forms
}

fn url_password_as_written(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?']).next()?;
    let userinfo = authority.rsplit_once('@')?.0;
    let password = userinfo.split_once(':')?.1;
    (!password.is_empty()).then_some(password)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, Vec<String>> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let names: Vec<String> = map.keys().cloned().collect();
        Config::from_env(|k| map.get(k).cloned(), names)
    }

    const APPROVER_HEX: &str = "4646ae5047316b4230d0086c8acec687f00b1cd9d1dc634f6cb358ac0a9a8fff";

    #[test]
    fn defaults_are_the_embedded_dry_run() {
        let c = config(&[("HOME", "/home/demo")]).unwrap();
        assert!(!c.write_enabled);
        assert_eq!(c.database_kind(), "sqlite");
        assert_eq!(
            c.default_sqlite_path,
            PathBuf::from("/home/demo/.local/state/care-mcp/ledger.db")
        );
        assert_eq!(c.client_id, "stdio");
        assert_eq!(c.approval_threshold, 1);
        let c = config(&[("XDG_STATE_HOME", "/var/lib/x"), ("HOME", "/root")]).unwrap();
        assert_eq!(
            c.default_sqlite_path,
            PathBuf::from("/var/lib/x/care-mcp/ledger.db")
        );
    }

    #[test]
    fn write_switch_must_be_exactly_one() {
        for v in ["true", "yes", "01", " 1", "1 ", "on"] {
            assert!(
                !config(&[("CARE_WRITE_ENABLED", v)]).unwrap().write_enabled,
                "{v}"
            );
        }
        assert!(
            config(&[("CARE_WRITE_ENABLED", "1")])
                .unwrap()
                .write_enabled
        );
    }

    #[test]
    fn every_problem_is_collected_without_values() {
        let errs = config(&[
            ("DATABASE_URL", "postgres://care:sk-demo-dbpass@db/care"),
            ("CARE_APPROVERS", "npub-garbage-sk-demo"),
            ("CARE_APPROVAL_THRESHOLD", "0"),
            ("CARE_NOSTR_SECRET_KEY", "nsec-sk-demo"),
        ])
        .err()
        .unwrap();
        assert_eq!(errs.len(), 4, "{errs:?}");
        for e in &errs {
            assert!(!e.contains("sk-demo"), "{e}");
        }
    }

    #[test]
    fn threshold_above_approvers_is_refused() {
        let errs = config(&[
            ("CARE_APPROVERS", APPROVER_HEX),
            ("CARE_APPROVAL_THRESHOLD", "2"),
        ])
        .err()
        .unwrap();
        assert_eq!(errs.len(), 1);
    }

    #[test]
    fn own_secrets_include_the_database_password_and_secret_variables() {
        let c = config(&[
            (
                "DATABASE_URL",
                "postgres://care:sk-demo-dbpass@db:5432/care",
            ),
            ("CARE_AUDIT_SALT", "sk-demo-audit-salt-0000"),
            ("CARE_MAIL_PASSWORD", "sk-demo-mailpass"),
            ("CARE_WRITE_ENABLED", "1"),
        ])
        .unwrap();
        let s = c.own_secrets();
        assert!(s.contains(&"sk-demo-dbpass".to_owned()));
        assert!(s.contains(&"sk-demo-audit-salt-0000".to_owned()));
        assert!(s.contains(&"sk-demo-mailpass".to_owned()));
        assert!(!s.contains(&"1".to_owned()));
        assert!(!format!("{c:?}").contains("sk-demo"));
    }

    #[test]
    fn database_password_is_an_own_secret_decoded_and_as_written() {
        let c = config(&[
            (
                "DATABASE_URL",
                "postgres://care:p%40ss-w%2Frd-sk-demo@db/care",
            ),
            ("CARE_AUDIT_SALT", "sk-demo-audit-salt-0000"),
        ])
        .unwrap();
        let s = c.own_secrets();
        assert!(s.contains(&"p@ss-w/rd-sk-demo".to_owned()), "decoded");
        assert!(
            s.contains(&"p%40ss-w%2Frd-sk-demo".to_owned()),
            "as written"
        );
        // A plain password gives one form; a `%` that is no `%XX` sequence stays as written.
        assert_eq!(
            url_password("postgres://care:sk-demo-plain@db/care"),
            ["sk-demo-plain"]
        );
        assert_eq!(
            url_password("postgres://care:sk-demo-100%@db/care"),
            ["sk-demo-100%"]
        );
        assert!(url_password("postgres://care@db/care").is_empty());
        assert!(url_password("postgres://db/care").is_empty());
    }

    #[test]
    fn sla_targets_parse() {
        let c = config(&[("CARE_SLA_TARGETS", "mail=4, forum=6h")]).unwrap();
        assert_eq!(c.sla_targets.hours(SupportChannel::Mail), 4);
        assert_eq!(c.sla_targets.hours(SupportChannel::Forum), 6);
        assert_eq!(c.sla_targets.hours(SupportChannel::AppStore), 24);
        assert!(config(&[("CARE_SLA_TARGETS", "mail=0")]).is_err());
        assert!(config(&[("CARE_SLA_TARGETS", "phone=3")]).is_err());
    }

    #[test]
    fn nostr_relays_and_channel_parse() {
        let c = config(&[
            (
                "CARE_NOSTR_RELAYS",
                "wss://relay.example.org, ws://127.0.0.1:7777/ wss://relay.example.org",
            ),
            ("CARE_APPROVAL_CHANNEL", "care-approvals_1"),
        ])
        .unwrap();
        assert_eq!(
            c.nostr_relays,
            ["wss://relay.example.org", "ws://127.0.0.1:7777/"]
        );
        assert_eq!(c.approval_channel.as_deref(), Some("care-approvals_1"));
        let defaults = config(&[]).unwrap();
        assert!(defaults.nostr_relays.is_empty());
        assert!(defaults.approval_channel.is_none());
    }

    #[test]
    fn bad_relays_and_channel_are_refused_without_values() {
        for relays in [
            "https://relay.example.org",
            "ws://",
            "ws://:7777",
            "relay.example.org",
            "wss://relay.example.org#sk-demo",
        ] {
            let errs = config(&[("CARE_NOSTR_RELAYS", relays)]).err().unwrap();
            assert_eq!(errs.len(), 1, "{relays}: {errs:?}");
            assert!(!errs[0].contains("sk-demo") && !errs[0].contains("example"));
        }
        for group in [
            "Care",
            "care approvals",
            "caré",
            &"a".repeat(65),
            "sk-demo/x",
        ] {
            let errs = config(&[("CARE_APPROVAL_CHANNEL", group)]).err().unwrap();
            assert_eq!(errs.len(), 1, "{group}: {errs:?}");
            assert!(!errs[0].contains("sk-demo"));
        }
    }

    #[test]
    fn postgres_needs_an_audit_salt() {
        assert!(config(&[("DATABASE_URL", "postgres://db/care")]).is_err());
        assert!(
            config(&[
                ("DATABASE_URL", "postgres://db/care"),
                ("CARE_AUDIT_SALT", "sk-demo-0123456789abcdef")
            ])
            .is_ok()
        );
    }
}

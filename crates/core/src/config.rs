//! The core's `CARE_*` configuration (ledger, write switch, audit, client label, SLA targets)
//! and the secret values the outbound scan refuses. The Nostr channel's settings are read by
//! the Nostr crate, each domain's by its domain, all through [`crate::env`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::env::{EnvReader, EnvSource, ExposeSecret, SecretString};
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
    /// `CARE_AUDIT_SALT`: HMAC key of the audit digests.
    pub audit_salt: Option<SecretString>,
    /// `CARE_CLIENT_ID`: the label this process's calls are audited under (default `stdio`).
    pub client_id: String,
    /// `CARE_SLA_TARGETS`: e.g. `app_store=24,forum=12,mail=8` (hours).
    pub sla_targets: SlaTargets,
    /// Where the embedded SQLite ledger lives when `DATABASE_URL` is unset.
    pub default_sqlite_path: PathBuf,
    /// Every secret value found in the environment, for the outbound scan.
    own_secrets: Vec<SecretString>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("database", &self.database_kind())
            .field("write_enabled", &self.write_enabled)
            .field("client_id", &self.client_id)
            .field("sla_targets", &self.sla_targets)
            .field("own_secrets", &self.own_secrets.len())
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
    /// Reads the core's configuration from `env`; every problem at once, by variable name.
    pub fn from_env(env: &dyn EnvSource) -> Result<Config, Vec<String>> {
        let mut r = EnvReader::new(env);
        let config = Config::read(&mut r);
        r.finish().map(|()| config)
    }

    /// Reads into `r` (problems stay in `r`, so callers can add their own before finishing).
    pub fn read(r: &mut EnvReader<'_>) -> Config {
        let env = r.source();
        let database_url = r.optional("DATABASE_URL");
        if let Some(url) = &database_url
            && !(url.starts_with("postgres://")
                || url.starts_with("postgresql://")
                || url.starts_with("sqlite://")
                || url.starts_with("sqlite:"))
        {
            r.problem("DATABASE_URL must start with postgres://, postgresql:// or sqlite://");
        }
        let database_url = with_password_file(r, database_url);

        let write_enabled = r.flag("CARE_WRITE_ENABLED");

        let audit_salt = r.secret_or_file("CARE_AUDIT_SALT");
        if audit_salt
            .as_ref()
            .is_some_and(|s| s.expose_secret().len() < 16)
        {
            r.problem("CARE_AUDIT_SALT must be at least 16 characters");
        }
        let is_postgres = database_url
            .as_deref()
            .is_some_and(|u| u.starts_with("postgres"));
        if is_postgres && audit_salt.is_none() {
            r.problem(
                "CARE_AUDIT_SALT (or CARE_AUDIT_SALT_FILE) is required when DATABASE_URL is a Postgres URL",
            );
        }

        let client_id = match r.optional("CARE_CLIENT_ID") {
            None => "stdio".to_owned(),
            Some(v) => {
                let ok = v.len() <= 64
                    && v.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.:@".contains(&b));
                if !ok {
                    r.problem("CARE_CLIENT_ID must be at most 64 characters of [A-Za-z0-9-_.:@]");
                }
                v
            }
        };

        let sla_targets = match r.optional("CARE_SLA_TARGETS") {
            None => SlaTargets::default(),
            Some(v) => parse_sla_targets(&v).unwrap_or_else(|| {
                r.problem(
                    "CARE_SLA_TARGETS must look like app_store=24,forum=12,mail=8 (hours, 1..=720)",
                );
                SlaTargets::default()
            }),
        };

        let mut names = env.names();
        names.sort();
        // Read from the source, not through `r`: any secret-looking variable is a scan
        // pattern, declared configuration or not.
        let mut own_secrets: Vec<SecretString> = names
            .iter()
            .filter(|name| is_secret_variable(name))
            .filter_map(|name| env.var(name))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .map(SecretString::from)
            .collect();
        // A salt from its file is no variable of the walk above.
        own_secrets.extend(audit_salt.iter().cloned());
        for password in database_url
            .as_deref()
            .map(url_password)
            .unwrap_or_default()
        {
            own_secrets.push(SecretString::from(password));
        }

        Config {
            database_url,
            write_enabled,
            audit_salt,
            client_id,
            sla_targets,
            default_sqlite_path: default_state_dir(r).join("ledger.db"),
            own_secrets,
        }
    }

    /// `postgres` or `sqlite`.
    pub fn database_kind(&self) -> &'static str {
        match &self.database_url {
            Some(u) if u.starts_with("postgres") => "postgres",
            _ => "sqlite",
        }
    }

    /// The secret values found in the environment (database password, keys, tokens, salts).
    pub fn own_secrets(&self) -> &[SecretString] {
        &self.own_secrets
    }
}

/// `$XDG_STATE_HOME/care-mcp`, else `$HOME/.local/state/care-mcp`, else `./.care-mcp`.
fn default_state_dir(r: &mut EnvReader<'_>) -> PathBuf {
    if let Some(dir) = r.raw("XDG_STATE_HOME").filter(|v| v.starts_with('/')) {
        return PathBuf::from(dir).join("care-mcp");
    }
    if let Some(home) = r.raw("HOME").filter(|v| v.starts_with('/')) {
        return PathBuf::from(home).join(".local/state/care-mcp");
    }
    PathBuf::from(".care-mcp")
}

/// `DATABASE_URL` with the password of `CARE_DATABASE_PASSWORD_FILE` put in (percent-encoded),
/// so the URL itself can live in a ConfigMap and only the password in a Secret.
fn with_password_file(r: &mut EnvReader<'_>, url: Option<String>) -> Option<String> {
    const NAME: &str = "CARE_DATABASE_PASSWORD_FILE";
    let Some(password) = r.secret_file(NAME, None) else {
        return url;
    };
    let password = password.expose_secret().trim_end_matches(['\n', '\r']);
    let Some(text) = url else {
        r.problem(format!("{NAME} is set without DATABASE_URL"));
        return None;
    };
    let parsed = url::Url::parse(&text)
        .ok()
        .filter(|u| u.scheme().starts_with("postgres") && !u.username().is_empty());
    let Some(mut parsed) = parsed else {
        r.problem(format!(
            "{NAME} needs DATABASE_URL to be a postgres:// URL with a user name"
        ));
        return Some(text);
    };
    if parsed.password().is_some() {
        r.problem(format!(
            "DATABASE_URL holds a password and {NAME} is set: keep one"
        ));
        return Some(text);
    }
    if password.is_empty() || parsed.set_password(Some(password)).is_err() {
        r.problem(format!("{NAME} names a file without a password"));
        return Some(text);
    }
    Some(parsed.to_string())
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
    use crate::env::MapEnv;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, Vec<String>> {
        Config::from_env(&MapEnv::of(pairs.iter().copied()))
    }

    fn secrets(c: &Config) -> Vec<&str> {
        c.own_secrets().iter().map(|s| s.expose_secret()).collect()
    }

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
            ("DATABASE_URL", "mysql://care:sk-demo-dbpass@db/care"),
            ("CARE_AUDIT_SALT", "sk-demo-short"),
            ("CARE_CLIENT_ID", "sk-demo client"),
            ("CARE_SLA_TARGETS", "sk-demo=3"),
        ])
        .err()
        .unwrap();
        assert_eq!(errs.len(), 4, "{errs:?}");
        for e in &errs {
            assert!(!e.contains("sk-demo"), "{e}");
        }
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
        let s = secrets(&c);
        assert!(s.contains(&"sk-demo-dbpass"));
        assert!(s.contains(&"sk-demo-audit-salt-0000"));
        assert!(s.contains(&"sk-demo-mailpass"));
        assert!(!s.contains(&"1"));
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
        let s = secrets(&c);
        assert!(s.contains(&"p@ss-w/rd-sk-demo"), "decoded");
        assert!(s.contains(&"p%40ss-w%2Frd-sk-demo"), "as written");
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

    #[test]
    fn secrets_come_from_files_in_a_cluster() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o440)).unwrap();
            path.to_str().unwrap().to_owned()
        };
        let password = write("password", "sk-demo-p@ss/word\n");
        let salt = write("salt", "sk-demo-salt-0123456789\n");
        let c = config(&[
            ("DATABASE_URL", "postgres://care@db:5432/care"),
            ("CARE_DATABASE_PASSWORD_FILE", &password),
            ("CARE_AUDIT_SALT_FILE", &salt),
        ])
        .unwrap();
        assert_eq!(
            c.database_url.as_deref(),
            Some("postgres://care:sk-demo-p%40ss%2Fword@db:5432/care")
        );
        assert_eq!(
            c.audit_salt.as_ref().unwrap().expose_secret(),
            "sk-demo-salt-0123456789"
        );
        let s = secrets(&c);
        for expected in [
            "sk-demo-p@ss/word",
            "sk-demo-p%40ss%2Fword",
            "sk-demo-salt-0123456789",
        ] {
            assert!(s.contains(&expected), "{expected} not in {s:?}");
        }

        let errs = config(&[
            ("DATABASE_URL", "postgres://care:sk-demo-inline@db/care"),
            ("CARE_DATABASE_PASSWORD_FILE", &password),
            ("CARE_AUDIT_SALT_FILE", &salt),
        ])
        .err()
        .unwrap();
        assert!(errs[0].contains("keep one"), "{errs:?}");
        assert!(!errs[0].contains("sk-demo"), "{errs:?}");
        let errs = config(&[("CARE_DATABASE_PASSWORD_FILE", &password)])
            .err()
            .unwrap();
        assert!(errs[0].contains("without DATABASE_URL"), "{errs:?}");
    }
}

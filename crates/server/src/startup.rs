//! Builds one role's server from the environment: configuration (the core's, the approval
//! channel's and every needed domain's, all problems reported at once), ledger, audit salt,
//! services and the registry. Startup walks `care_domains::DOMAINS` for the role: a domain no
//! tool of the role needs is never constructed, and no tool name decides anything here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use care_core::catalog::{self, Role};
use care_core::config::Config;
use care_core::env::{EnvReader, ExposeSecret, ProcessEnv};
use care_core::gate::Gate;
use care_core::ledger::Ledger;
use care_core::ledger_tools;
use care_core::outbound::OutboundScanner;
use care_core::registrar::{Registrar, TicketPort};
use care_core::tool::{Registry, Services};
use care_core::variables;
use care_nostr::NostrSettings;

/// A reason the process cannot serve: printed as one line on stderr, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

/// `--role` beats `CARE_ROLE`; missing or unknown is a start error, and so is more than one
/// `--role` (only `serve --http` serves several).
pub fn resolve_role(flags: &[String]) -> Result<Role, StartError> {
    match flags {
        [] => one_role(None),
        [flag] => one_role(Some(flag)),
        _ => Err(StartError(
            "more than one --role: only `serve --http` serves several roles".into(),
        )),
    }
}

/// The roles `serve --http` serves: every `--role` given (duplicates once), else the one of
/// `CARE_ROLE`.
pub fn resolve_roles(flags: &[String]) -> Result<Vec<Role>, StartError> {
    if flags.is_empty() {
        return Ok(vec![one_role(None)?]);
    }
    let mut roles = Vec::new();
    for flag in flags {
        let role = one_role(Some(flag))?;
        if !roles.contains(&role) {
            roles.push(role);
        }
    }
    Ok(roles)
}

fn one_role(flag: Option<&str>) -> Result<Role, StartError> {
    let from_env = std::env::var("CARE_ROLE").ok().filter(|v| !v.is_empty());
    let name = flag.map(str::to_owned).or(from_env).ok_or_else(|| {
        StartError(
            "no role given: pass --role <lead|reviews|insight|community|mail|ops> or set CARE_ROLE"
                .into(),
        )
    })?;
    Role::parse(&name).ok_or_else(|| {
        StartError(
            "unknown role: expected one of lead, reviews, insight, community, mail, ops".into(),
        )
    })
}

fn refused(problems: Vec<String>) -> StartError {
    StartError(format!("configuration refused: {}", problems.join("; ")))
}

/// The core's configuration and the approval channel's settings (operator commands).
pub fn load_config() -> Result<(Config, NostrSettings), StartError> {
    let mut reader = EnvReader::new(&ProcessEnv);
    let config = Config::read(&mut reader);
    let nostr = NostrSettings::read(&mut reader);
    reader.finish().map_err(refused)?;
    Ok((config, nostr))
}

pub async fn open_ledger(config: &Config) -> Result<Arc<dyn Ledger>, StartError> {
    care_ledger::connect(config.database_url.as_deref(), &config.default_sqlite_path)
        .await
        .map_err(|e| StartError(e.to_string()))
}

/// The SQLite file a config points at, when it uses SQLite.
fn sqlite_path(config: &Config) -> Option<PathBuf> {
    match config.database_url.as_deref() {
        None => Some(config.default_sqlite_path.clone()),
        Some(url) if url.starts_with("sqlite:") => {
            let rest = url
                .trim_start_matches("sqlite://")
                .trim_start_matches("sqlite:");
            let path = rest.split('?').next().unwrap_or(rest);
            (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
        }
        Some(_) => None,
    }
}

/// `CARE_AUDIT_SALT`, or for the embedded default a salt generated once and kept beside the
/// database file (`<ledger>.audit-salt`, mode 0600) so digests stay comparable across runs.
fn audit_salt(config: &Config) -> Vec<u8> {
    if let Some(salt) = &config.audit_salt {
        return salt.expose_secret().as_bytes().to_vec();
    }
    match sqlite_path(config) {
        Some(db) => match kept_salt(&db) {
            Ok(salt) => salt,
            Err(err) => {
                tracing::warn!(error = %err, "audit salt file unusable; using a per-process salt");
                random_salt()
            }
        },
        None => random_salt(),
    }
}

/// The salt an existing audit trail was written with, for `audit verify`: the configured one,
/// or the embedded default's kept file. Never a new one: a fresh salt would verify nothing.
pub(crate) fn existing_audit_salt(config: &Config) -> Result<Vec<u8>, StartError> {
    if let Some(salt) = &config.audit_salt {
        return Ok(salt.expose_secret().as_bytes().to_vec());
    }
    let missing =
        || StartError("no audit salt: set CARE_AUDIT_SALT or CARE_AUDIT_SALT_FILE".into());
    let db = sqlite_path(config).ok_or_else(missing)?;
    let mut name = db.as_os_str().to_owned();
    name.push(".audit-salt");
    match std::fs::read(PathBuf::from(name)) {
        Ok(salt) if salt.len() >= 32 => Ok(salt),
        _ => Err(missing()),
    }
}

fn random_salt() -> Vec<u8> {
    hex::encode(care_core::entropy::kernel_bytes::<32>()).into_bytes()
}

fn kept_salt(db: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;

    let mut name = db.as_os_str().to_owned();
    name.push(".audit-salt");
    let path = PathBuf::from(name);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut file) => {
            let salt = random_salt();
            file.write_all(&salt)?;
            file.sync_all()?;
            Ok(salt)
        }
        // Another role process created it first (or an earlier run did): use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            for _ in 0..50 {
                let salt = std::fs::read(&path)?;
                if salt.len() >= 32 {
                    return Ok(salt);
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(std::io::Error::other("audit salt file is empty"))
        }
        Err(e) => Err(e),
    }
}

/// Everything a role needs to serve.
pub async fn build_gate(role: Role) -> Result<Gate, StartError> {
    let mut reader = EnvReader::new(&ProcessEnv);
    let config = Config::read(&mut reader);
    // A role that requests no approval holds no Nostr key and knows no relay.
    let nostr = if crate::approval_channel::requests_approvals(role) {
        NostrSettings::read(&mut reader)
    } else {
        NostrSettings::read_policy(&mut reader)
    };
    let ledger = match open_ledger(&config).await {
        Ok(ledger) => ledger,
        Err(e) => {
            reader.problem(e.0);
            return Err(reader
                .finish()
                .map_or_else(refused, |()| refused(Vec::new())));
        }
    };
    let mut registrar = Registrar::new(role, TicketPort::new(Arc::clone(&ledger)));
    care_domains::register_domains(&mut registrar, &mut reader);
    let channel = crate::approval_channel::settings(role, &nostr, &mut reader);
    // Every name read must be declared for this role: the Deployments are checked against
    // that list, so a reader that strays from it is a bug caught at the first start.
    let undeclared = variables::undeclared(role, reader.names_read());
    if !undeclared.is_empty() {
        return Err(StartError(format!(
            "role {role} read variables it does not declare in care_core::variables (a bug): {}",
            undeclared.join(", ")
        )));
    }
    reader.finish().map_err(refused)?;

    let config = Arc::new(config);
    let salt = audit_salt(&config);
    // Every secret this process holds is an outbound-scan pattern: its configuration's, the
    // approval channel's key, and every credential a domain loaded.
    let mut secrets: Vec<String> = config
        .own_secrets()
        .iter()
        .chain(nostr.secrets().iter())
        .map(|s| s.expose_secret().to_owned())
        .collect();
    secrets.extend(registrar.secret_values());
    let services = Services::new(Arc::clone(&config), Arc::clone(&ledger), &salt)
        .with_policy(nostr.policy())
        .with_scanner(OutboundScanner::new(secrets));
    let services = Arc::new(crate::approval_channel::attach(services, channel)?);

    let registered = registrar.finish(&services);
    let mut handlers = registered.handlers;
    handlers.extend(ledger_tools::all(&services, registered.planners));
    #[cfg(feature = "fault-injection")]
    let handlers = crate::handler::fault::inject(handlers);

    let registry = Registry::new(role, handlers).map_err(|e| StartError(e.to_string()))?;
    // Every implemented tool of the role must be served: a domain that forgot one is a bug
    // caught at start, not an "unknown tool" in production.
    if let Some(missing) = catalog::tools_of(role)
        .filter(|e| care_domains::is_implemented(e.domain))
        .find(|e| registry.get(e.name).is_none())
    {
        return Err(StartError(format!(
            "tool {} of role {role} was not registered by its domain",
            missing.name
        )));
    }
    Ok(Gate::new(registry, services))
}

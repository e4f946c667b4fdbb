//! Builds one role's server from the environment: config, ledger, audit salt, services and the
//! registry. Only the domains the role's tools need are constructed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use care_core::catalog::{self, Domain, Role};
use care_core::config::Config;
use care_core::gate::Gate;
use care_core::ledger::Ledger;
use care_core::ledger_tools;
use care_core::pipeline::WritePlanner;
use care_core::tool::{Registry, Services, ToolHandler};

/// A reason the process cannot serve: printed as one line on stderr, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

/// `--role` beats `CARE_ROLE`; missing or unknown is a start error.
pub fn resolve_role(flag: Option<&str>) -> Result<Role, StartError> {
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

pub fn load_config() -> Result<Config, StartError> {
    Config::from_env(
        |k| std::env::var(k).ok(),
        std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()),
    )
    .map_err(|problems| StartError(format!("configuration refused: {}", problems.join("; "))))
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
        return salt.as_bytes().to_vec();
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

fn random_salt() -> Vec<u8> {
    let bytes: [u8; 32] = rand::random();
    hex::encode(bytes).into_bytes()
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
    let config = Arc::new(load_config()?);
    let ledger = open_ledger(&config).await?;
    let salt = audit_salt(&config);
    let services = Services::new(config, ledger, &salt);
    // --- approval channel (issue 3) ---
    let services = Arc::new(crate::approval_channel::attach(role, services).await?);
    // --- end approval channel ---

    // Domain issues add their clients here, each behind `catalog::role_needs`, so a role never
    // constructs (or reads credentials for) a domain it holds no tool of.
    let mut planners: Vec<Arc<dyn WritePlanner>> = Vec::new();
    let mut handlers: Vec<Arc<dyn ToolHandler>> = Vec::new();
    // --- App Store Connect (issue 4) ---
    if catalog::role_needs(role, Domain::AppStoreConnect) {
        care_domains::asc::register(role, &services, &mut handlers, &mut planners)
            .map_err(|e| StartError(e.to_string()))?;
    }
    // --- end App Store Connect ---
    if catalog::role_needs(role, Domain::Ledger) || catalog::role_needs(role, Domain::Approvals) {
        handlers.extend(ledger_tools::all(&services, planners));
    }
    #[cfg(feature = "fault-injection")]
    let handlers = crate::handler::fault::inject(handlers);

    let registry = Registry::new(role, handlers).map_err(|e| StartError(e.to_string()))?;
    Ok(Gate::new(registry, services))
}

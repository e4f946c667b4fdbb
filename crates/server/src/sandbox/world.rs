//! The sandbox's running pieces (the relay and every upstream fake) and the files it writes:
//! keys, `mcp.json`, `sandbox.env`.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use care_core::catalog::Role;
use care_fakes::Upstream;
use care_nostr::relay::InProcessRelay;
use care_nostr::{Keys, ToBech32};
use serde_json::{Value, json};

use crate::startup::StartError;

/// The NIP-29 group the sandbox posts approval cards to.
pub const SANDBOX_CHANNEL: &str = "care-sandbox";

/// `$XDG_STATE_HOME/care-mcp/sandbox`, else `$HOME/.local/state/care-mcp/sandbox`.
pub fn default_dir() -> PathBuf {
    let base = std::env::var("XDG_STATE_HOME")
        .ok()
        .filter(|v| v.starts_with('/'))
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var("HOME")
                .ok()
                .filter(|v| v.starts_with('/'))
                .map(|h| PathBuf::from(h).join(".local/state"))
        })
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("care-mcp/sandbox")
}

/// Everything the sandbox runs; dropping it stops the relay and the fakes.
pub struct SandboxWorld {
    pub dir: PathBuf,
    pub relay: InProcessRelay,
    /// The upstream fakes (`care_fakes::start_demo_upstreams`), each in the roles' environment.
    pub upstreams: Vec<Box<dyn Upstream>>,
    pub approver_key_file: PathBuf,
    /// The environment every role process (and the approvals CLI) gets.
    pub env: BTreeMap<String, String>,
    pub binary: PathBuf,
}

impl std::fmt::Debug for SandboxWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxWorld")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn io(context: &str) -> impl Fn(std::io::Error) -> StartError + '_ {
    move |e| StartError(format!("sandbox: {context}: {e}"))
}

/// Reads a key kept from an earlier run, or generates and keeps a new one (mode 0600).
fn kept_keys(path: &Path) -> Result<Keys, StartError> {
    if let Ok(text) = std::fs::read_to_string(path) {
        return Keys::parse(text.trim()).map_err(|_| {
            StartError(format!(
                "sandbox: {} is not a Nostr secret key",
                path.display()
            ))
        });
    }
    let keys = Keys::generate();
    let Ok(nsec) = keys.secret_key().to_bech32();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io("cannot write a key file"))?;
    writeln!(file, "{nsec}").map_err(io("cannot write a key file"))?;
    Ok(keys)
}

fn write_private(path: &Path, text: &str) -> Result<(), StartError> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(io("cannot write a file"))?;
    file.write_all(text.as_bytes())
        .map_err(io("cannot write a file"))
}

impl SandboxWorld {
    pub async fn start(dir: &Path) -> Result<SandboxWorld, StartError> {
        std::fs::create_dir_all(dir).map_err(io("cannot create the sandbox directory"))?;
        let dir = dir
            .canonicalize()
            .map_err(io("cannot resolve the sandbox directory"))?;
        let binary = std::env::current_exe().map_err(io("cannot find the care-mcp binary"))?;

        let server = kept_keys(&dir.join("server.nsec"))?;
        let approver = kept_keys(&dir.join("approver.nsec"))?;
        let approver_key_file = dir.join("approver.nsec");

        let relay = InProcessRelay::start(None)
            .await
            .map_err(|e| StartError(format!("sandbox: relay did not start: {e}")))?;
        let upstreams =
            care_fakes::start_demo_upstreams().map_err(|e| StartError(format!("sandbox: {e}")))?;

        let Ok(server_nsec) = server.secret_key().to_bech32();
        let Ok(approver_npub) = approver.public_key().to_bech32();
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        env.insert(
            "DATABASE_URL".into(),
            format!("sqlite://{}", dir.join("ledger.db").display()),
        );
        env.insert("CARE_WRITE_ENABLED".into(), "1".into());
        env.insert("CARE_APPROVERS".into(), approver_npub);
        env.insert("CARE_NOSTR_SECRET_KEY".into(), server_nsec);
        env.insert("CARE_NOSTR_RELAYS".into(), relay.url().to_owned());
        env.insert("CARE_APPROVAL_CHANNEL".into(), SANDBOX_CHANNEL.into());
        for upstream in &upstreams {
            let vars = upstream.role_env(&dir).map_err(|e| {
                StartError(format!(
                    "sandbox: cannot write the files of the {} fake: {e}",
                    upstream.name()
                ))
            })?;
            env.extend(vars);
        }
        let world = SandboxWorld {
            dir,
            relay,
            upstreams,
            approver_key_file,
            env,
            binary,
        };
        world.write_files()?;
        Ok(world)
    }

    /// The running fake of type `T` (for steps about one upstream, such as the demo's review).
    pub fn upstream<T: Upstream>(&self) -> Option<&T> {
        care_fakes::upstream::find(&self.upstreams)
    }

    /// The standard `mcpServers` configuration, one entry per role.
    pub fn mcp_config(&self) -> Value {
        let servers: serde_json::Map<String, Value> = Role::ALL
            .iter()
            .map(|role| {
                let mut env = self.env.clone();
                env.insert("CARE_CLIENT_ID".into(), format!("sandbox-{role}"));
                (
                    format!("care-{role}"),
                    json!({
                        "command": self.binary.display().to_string(),
                        "args": ["--role", role.as_str()],
                        "env": env,
                    }),
                )
            })
            .collect();
        json!({ "mcpServers": servers })
    }

    fn write_files(&self) -> Result<(), StartError> {
        let config = serde_json::to_string_pretty(&self.mcp_config()).unwrap_or_default();
        // The config holds the sandbox's throwaway server key: readable by its owner only.
        write_private(&self.dir.join("mcp.json"), &format!("{config}\n"))?;
        let env: String = self.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        write_private(&self.dir.join("sandbox.env"), &env)
    }

    /// A `care-mcp` command with the sandbox environment (and nothing inherited but PATH/HOME).
    pub fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.binary);
        cmd.env_clear();
        for var in ["PATH", "HOME", "RUST_LOG"] {
            if let Ok(v) = std::env::var(var) {
                cmd.env(var, v);
            }
        }
        cmd.envs(&self.env);
        cmd
    }

    /// What `care-mcp sandbox` prints for a person.
    pub fn instructions(&self) -> String {
        let dir = self.dir.display();
        format!(
            "care-mcp sandbox is running (Ctrl-C stops it).\n\
             \n  directory:        {dir}\
             \n  ledger:           {dir}/ledger.db (SQLite)\
             \n  approval relay:   {relay} (group {SANDBOX_CHANNEL}){fakes}\
             \n  MCP config:       {dir}/mcp.json (one entry per role)\
             \n  approver key:     {key}\
             \n\nPoint an MCP client at {dir}/mcp.json, or paste:\n\n{config}\n\n\
             To approve or reject a request, with the sandbox environment:\n\n  \
             set -a; . {dir}/sandbox.env; set +a\n  \
             {bin} approvals approve <approval_id> --key-file {key}\n  \
             {bin} approvals reject <approval_id> --key-file {key}\n\n\
             What the fakes received: {bin} sandbox show-sent --dir {dir}\n",
            relay = self.relay.url(),
            fakes = self.fake_lines(),
            key = self.approver_key_file.display(),
            bin = self.binary.display(),
            config = serde_json::to_string_pretty(&self.mcp_config()).unwrap_or_default(),
        )
    }

    /// One `  <name> fake:  <url>` line per upstream, aligned with the other lines.
    fn fake_lines(&self) -> String {
        self.upstreams
            .iter()
            .map(|u| {
                let label = format!("{} fake:", u.name());
                format!("\n  {label:<18}{} ({})", u.address(), u.title())
            })
            .collect()
    }
}

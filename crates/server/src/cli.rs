//! Command-line surface: `care-mcp --role R` serves; subcommands are for operators.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "care-mcp",
    version,
    about = "Governed MCP server for customer care and operations"
)]
pub struct Cli {
    /// The role to serve (lead, reviews, insight, community, mail, ops). Beats CARE_ROLE.
    /// `serve --http` takes it more than once, to serve several roles on one port.
    #[arg(long, global = true)]
    pub role: Vec<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (the default), or over Streamable HTTP with `--http`.
    Serve(ServeArgs),
    /// HTTP clients: each has a role, a call ceiling and a bearer token (its digest is stored
    /// in the ledger, so every replica sharing the ledger sees the same clients).
    Clients {
        #[command(subcommand)]
        action: ClientsCommand,
    },
    /// Print the role's tool manifest as JSON: what `tools/list` serves (descriptions, input and
    /// output schemas, annotations) with each tool's domain, kind and capability labels.
    Tools,
    /// Inspect the approval ledger; approve or reject as an approver; verify evidence.
    Approvals {
        #[command(subcommand)]
        action: ApprovalsCommand,
    },
    /// The audit trail: why each call was allowed or refused, and whether the record was
    /// edited (every row is chained to the one before it by a keyed hash).
    Audit {
        #[command(subcommand)]
        action: AuditCommand,
    },
    /// Nostr keys for approvers and for the server.
    Keys {
        #[command(subcommand)]
        action: KeysCommand,
    },
    /// The product on this machine with no accounts: in-process relay, upstream fakes,
    /// throwaway keys, SQLite ledger, and an MCP client configuration for every role.
    #[cfg(feature = "sandbox")]
    Sandbox {
        /// Where keys, ledger and configuration live (default: the state dir's sandbox/;
        /// with --demo: a fresh temporary directory).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// Run the scripted walk-through as an MCP client and exit 0 only if every step passes.
        #[arg(long)]
        demo: bool,
        #[command(subcommand)]
        action: Option<SandboxCommand>,
    },
}

#[cfg(feature = "sandbox")]
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// List the writes the sandbox's upstream fakes received.
    ShowSent {
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
}

/// How `serve` serves. Without `--http`, stdio and none of the other options apply.
#[derive(Debug, Default, clap::Args)]
pub struct ServeArgs {
    /// Serve MCP over Streamable HTTP on ADDR:PORT (at /mcp; probes at /healthz, /readyz).
    /// A non-loopback address needs --tls-cert/--tls-key or --behind-tls-proxy.
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<std::net::SocketAddr>,
    /// PEM certificate chain for HTTPS (with --tls-key).
    #[arg(long, requires = "tls_key", requires = "http")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key for HTTPS (with --tls-cert).
    #[arg(long, requires = "tls_cert", requires = "http")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Plain HTTP on a non-loopback address: a TLS-terminating proxy or ingress is in front.
    #[arg(long, requires = "http", conflicts_with = "tls_cert")]
    pub behind_tls_proxy: bool,
    /// A Host (name or name:port) requests may carry, besides the loopback names; repeatable.
    /// Other Host headers are refused (DNS rebinding).
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,
    /// A browser Origin (scheme://host:port) allowed to call; repeatable. Requests carrying any
    /// other Origin are refused; requests without one (non-browser clients) pass.
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    pub allowed_origins: Vec<String>,
    /// Seconds a session (Mcp-Session-Id) may sit idle before it is closed.
    #[arg(long, default_value_t = crate::http::DEFAULT_SESSION_IDLE_SECS, requires = "http")]
    pub session_idle_secs: u64,
    /// No sessions: every request stands alone (any replica can answer any request).
    #[arg(long, requires = "http")]
    pub stateless: bool,
}

#[derive(Debug, Subcommand)]
pub enum ClientsCommand {
    /// Add a client with the role given by --role; prints its token once, on stdout.
    Add {
        name: String,
        /// Calls per sliding 60-second window (default 600).
        #[arg(long)]
        rate: Option<u32>,
    },
    /// Every client: name, role, ceiling, created, rotated, revoked.
    List,
    /// Revoke a client: its token stops working on the next request, on every replica.
    Revoke { name: String },
    /// Replace a client's token (the old one stops working); prints the new one once.
    Rotate { name: String },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Audit rows, newest first: id, time, role, client, session, tool, outcome, decision.
    List {
        /// Only rows at or after this time: RFC 3339, or an age such as 30m, 12h, 7d.
        #[arg(long)]
        since: Option<String>,
        /// Only calls of this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only this outcome (ok, dry_run, intent, error).
        #[arg(long)]
        outcome: Option<String>,
        /// Only this session (the label `audit list` shows).
        #[arg(long)]
        session: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// One row with everything it records: the rules, the answer's size, the approval trail,
    /// its place in its chain.
    Show { id: i64 },
    /// Checks every row against its chain (needs the audit salt); names each edited,
    /// deleted, inserted or reordered row and exits 1 if there is any.
    Verify,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Print a new keypair: nsec (secret), npub and hex public key.
    Generate,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Recent approvals, newest first.
    List {
        /// Only approvals in this state.
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// One approval with its decisions.
    Show { id: String },
    /// Approve: sign and publish the reaction a Nostr app would (`+` on the card).
    Approve {
        id: String,
        /// File holding the approver's secret key (nsec or hex, one line, mode 600).
        #[arg(long)]
        key_file: std::path::PathBuf,
    },
    /// Reject: sign and publish a `-` reaction on the card.
    Reject {
        id: String,
        /// File holding the approver's secret key (nsec or hex, one line, mode 600).
        #[arg(long)]
        key_file: std::path::PathBuf,
    },
    /// Re-verify every stored decision's signed evidence offline; exits 1 if any fails.
    Verify { id: String },
}

/// No subcommand means `serve` over stdio.
impl Default for Command {
    fn default() -> Self {
        Command::Serve(ServeArgs::default())
    }
}

/// The command line; or, when the binary runs under a wrapper's name (`care-mcp-<role>`, a
/// link in the container image, which has no shell for the script wrappers), serving that
/// role with every argument ignored, as the script wrappers do.
pub fn parse() -> Result<Cli, clap::Error> {
    if let Some(role) = std::env::args_os()
        .next()
        .and_then(|arg0| wrapper_role(&arg0))
    {
        return Ok(Cli {
            role: vec![role],
            command: None,
        });
    }
    Cli::try_parse()
}

/// `care-mcp-ops` (any directory) → `ops`. An unknown suffix is returned too: the start then
/// refuses it as an unknown role instead of serving something else.
fn wrapper_role(arg0: &std::ffi::OsStr) -> Option<String> {
    let name = std::path::Path::new(arg0).file_name()?.to_str()?;
    name.strip_prefix("care-mcp-").map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::wrapper_role;
    use std::ffi::OsStr;

    #[test]
    fn the_program_name_names_the_role() {
        let role = |arg0: &str| wrapper_role(OsStr::new(arg0));
        assert_eq!(role("/usr/local/bin/care-mcp-ops").as_deref(), Some("ops"));
        assert_eq!(role("care-mcp-reviews").as_deref(), Some("reviews"));
        assert_eq!(role("care-mcp-nobody").as_deref(), Some("nobody"));
        assert_eq!(role("/usr/local/bin/care-mcp"), None);
        assert_eq!(role("/opt/care-mcp-ops/care-mcp"), None);
    }
}

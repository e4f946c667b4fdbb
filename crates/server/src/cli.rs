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
    #[arg(long, global = true)]
    pub role: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (the default).
    Serve,
    /// Print the role's tool manifest as JSON: what `tools/list` serves (descriptions, input and
    /// output schemas, annotations) with each tool's domain, kind and capability labels.
    Tools,
    /// Inspect the approval ledger; approve or reject as an approver; verify evidence.
    Approvals {
        #[command(subcommand)]
        action: ApprovalsCommand,
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

/// The command line; or, when the binary runs under a wrapper's name (`care-mcp-<role>`, a
/// link in the container image, which has no shell for the script wrappers), serving that
/// role with every argument ignored, as the script wrappers do.
pub fn parse() -> Result<Cli, clap::Error> {
    if let Some(role) = std::env::args_os()
        .next()
        .and_then(|arg0| wrapper_role(&arg0))
    {
        return Ok(Cli {
            role: Some(role),
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

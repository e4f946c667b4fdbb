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
    /// Print the role's tool manifest (names, kind, capability labels, annotations) as JSON.
    Tools,
    /// Inspect the approval ledger.
    Approvals {
        #[command(subcommand)]
        action: ApprovalsCommand,
    },
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
}

pub fn parse() -> Result<Cli, clap::Error> {
    Cli::try_parse()
}

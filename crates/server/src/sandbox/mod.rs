//! `care-mcp sandbox`: the whole product on one machine with no accounts. Starts, on loopback,
//! an in-process Nostr relay with an approval channel and every upstream fake of `care_fakes`
//! (App Store Connect, Discourse, the IMAP + SMTP mail fake, a Kubernetes API server),
//! generates throwaway keys (server, approver, the fakes' own) in a sandbox directory, uses the
//! embedded SQLite ledger there, and writes an MCP client configuration with one entry per role.
//!
//! Built only with the `sandbox` cargo feature: a production binary carries no fakes and no
//! in-process relay, so nothing in it can stand in for a real upstream or a real approver.

mod client;
pub mod demo;
mod show_sent;
mod world;

pub use show_sent::{record_sent, show_sent};
pub use world::{SandboxWorld, default_dir};

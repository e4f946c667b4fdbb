//! Roles, the tool catalog, the registration gate, the write pipeline and every shape that
//! crosses a boundary of care-mcp (error codes, result envelope, fence, audit, ledger trait).
//!
//! # Layout
//! - [`catalog`]: the 31-row role table, declared once.
//! - [`clients`]: HTTP clients' tokens (minted, digested, compared in constant time) and their store trait.
//! - [`error`]: stable error codes with one fixed sentence each.
//! - [`envelope`]: `{ok, data}` / `{ok, error}` results.
//! - [`input`]: strict argument parsing (unknown fields refused, fields named, values never echoed).
//! - [`schema`]: portable input schemas (optional means absent, never null) and their check.
//! - [`fence`]: `<user_content>` encoding of third-party text.
//! - [`display`]: escaping of text shown to people (approval cards, operator CLI).
//! - [`canonical`]: the canonical JSON encoding behind payload hashes and audit digests.
//! - [`outbound`]: the secret scan every external write passes.
//! - [`ledger`]: the ledger trait and its row types (implemented by `care-ledger`).
//! - [`approvals`]: approver keys and the decision policy in front of the ledger.
//! - [`approval_channel`]: the approval channel trait (cards out, signed decisions in).
//! - [`tool`]: read / ledger-write / external-write tool traits and the registry.
//! - [`ledger_tools`]: the tools that need no upstream (KPI, CSAT, SLA, approvals).
//! - [`pipeline`]: the one path an external write can take.
//! - [`gate`]: the call path every `tools/call` takes (lookup, panic containment, audit).
//! - [`audit`]: audit events, written in batches by one chained writer per process.
//! - [`audit_chain`]: the keyed hash chain over audit rows and its verification.
//! - [`awake`]: the thread kept awake for a moment while an answer is due.
//! - [`decision`]: the rules a call passed or was refused by, for its audit row.
//! - [`env`]: typed reading of configuration (problems by name, secrets unprintable).
//! - [`config`]: the core's `CARE_*` configuration.
//! - [`variables`]: every variable each role reads, declared once.
//! - [`rotation`]: credentials from `*_FILE` variables, re-read when their file changes.
//! - [`registrar`]: what a domain registers (tools, secrets) and the ticket port it gets.

pub mod approval_channel;
pub mod approvals;
pub mod audit;
pub mod audit_chain;
pub mod awake;
pub mod canonical;
pub mod catalog;
pub mod clients;
pub mod config;
pub mod decision;
pub mod display;
pub mod entropy;
pub mod env;
pub mod envelope;
pub mod error;
pub mod fence;
pub mod gate;
pub mod input;
pub mod ledger;
pub mod ledger_tools;
pub mod outbound;
pub mod pipeline;
pub mod registrar;
pub mod rotation;
pub mod schema;
#[cfg(feature = "test-support")]
pub mod testkit;
pub mod tool;
pub mod variables;

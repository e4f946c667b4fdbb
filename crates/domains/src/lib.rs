//! The upstream domains of care-mcp: for each service, its client and its tools. No rmcp, no
//! sqlx: tools reach the ledger only through `care_core`'s `Ledger` trait and reach the
//! outside world only through their own client.
//!
//! # Layout
//! - [`asc`]: App Store Connect (reviews, ratings and the gated review reply).

pub mod asc;

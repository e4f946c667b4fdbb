//! Fakes of the upstream services care-mcp talks to, served over real HTTP on loopback: shared
//! by the test suites and the sandbox (`care-mcp sandbox`), so both exercise the same behaviour.
//!
//! # Layout
//! - [`asc`]: a verifying App Store Connect fake (ES256 JWTs checked with the public key on
//!   every request, JSON:API shapes and paging, recorded requests, injectable failures), a
//!   seeded demo data set and throwaway `.p8` keys.

pub mod asc;

//! The upstream kit: what every domain's client is built from, so a new domain is a small,
//! uniform addition. [`http::HttpClient`] for HTTP upstreams (limits, no redirects, one
//! status-to-code mapping, Retry-After, authentication, writes only with a permit),
//! [`deadline::deadline`] for the others (IMAP, SMTP, Kubernetes), [`auth`] for credentials,
//! [`html_text`] for third-party HTML read as text in bounded time, [`cut`] for a stranger's
//! text cut to a length.
//! Configuration is read with `care_core::env`; registration goes through
//! `care_core::registrar`.
//!
//! # The rule every domain follows
//! An upstream client's write methods take the pipeline's `WritePermit` as an argument, and
//! its raw send is private. Only the write pipeline makes a permit, after consuming an approval
//! for exactly that call: a read tool cannot reach an upstream write, by construction. No code
//! outside this kit builds an HTTP client (clippy `disallowed-methods`, see `clippy.toml`).

pub mod auth;
pub mod cut;
pub mod deadline;
pub mod html_text;
pub mod http;
pub mod limits;
pub mod status;

pub use auth::{Auth, HeaderAuth, HeaderSecret, NoAuth, Presented};
pub use deadline::deadline;
pub use http::{ClientError, ClientSpec, HttpClient};
pub use limits::Limits;

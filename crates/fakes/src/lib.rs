//! Fakes of the upstream services care-mcp talks to, served over real HTTP on loopback: shared
//! by the test suites and the sandbox (`care-mcp sandbox`), so both exercise the same behaviour.
//!
//! # Layout
//! - [`http`]: the scaffold every HTTP fake stands on — a loopback server on its own thread
//!   and runtime, and a front that checks credentials, injects failures, records requests and
//!   delays answers before the fake's own routes.
//! - [`upstream`]: the [`Upstream`] trait the sandbox and the test harnesses iterate over, and
//!   [`start_demo_upstreams`], the list of fakes they start.
//! - [`asc`]: a verifying App Store Connect fake (ES256 JWTs checked with the public key on
//!   every request, JSON:API shapes and paging), a seeded demo data set and throwaway `.p8`
//!   keys.
//! - [`discourse`]: a verifying Discourse fake (`Api-Key` / `Api-Username` on every request,
//!   topic lists, topic views and post streams, search, categories, replies with Discourse's
//!   refusals and rate limits), with a demo forum holding hostile posts and a private message.
//! - [`kubernetes`]: a fake Kubernetes API server for the real `kube::Client`: the namespaced
//!   RBAC of `deploy/`, `Status` errors, the restart patch with `dryRun=All`, and every request
//!   for a Secret or ConfigMap kept against the client.
//! - [`mail`]: an IMAP and SMTP fake (imap-codec and mailin parse the protocols) with one store
//!   behind both, seeded with a support inbox (some of it hostile).

pub mod asc;
pub mod discourse;
pub mod http;
pub mod kubernetes;
pub mod mail;
pub mod upstream;

pub use upstream::{ReceivedWrite, StartFailed, Upstream, start_demo_upstreams};

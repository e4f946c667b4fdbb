//! The upstream domains of care-mcp: for each service, its client and its tools, built on the
//! shared upstream [`kit`]. No rmcp, no sqlx: a domain reaches the ledger only through the
//! ticket port its registrar hands out, and the outside world only through its own client.
//!
//! # Layout
//! - [`kit`]: the upstream kit (HTTP client with limits and permits, deadline, auth).
//! - [`asc`]: App Store Connect (reviews, ratings and the gated review reply).
//! - [`discourse`]: the community forum (topics, search and the gated forum reply).
//! - [`cluster`]: Kubernetes (namespace-scoped status and the gated workload restart).
//! - [`mail`]: the support mailbox (IMAP reads, the gated SMTP send).
//! - [`locale`]: the locale gate the domains' replies share.
//!
//! # Adding a domain
//! A new domain is a module here, one row in [`DOMAINS`], and its fake in `care-fakes`:
//! - `<domain>/config.rs`: its `CARE_<DOMAIN>_*` variables, read with `care_core::env`
//!   (secrets as `SecretString`, secret files permission-checked, URLs https unless loopback);
//! - `<domain>/client.rs`: an [`kit::HttpClient`] (or a client bounded by [`kit::deadline`]),
//!   its reads public, its writes taking `&WritePermit` (the rule in [`kit`]);
//! - `<domain>/tools/<tool>.rs`: one file per tool; a read implements
//!   `care_core::tool::ReadTool`, an external write `care_core::pipeline::ExternalWriteTool`
//!   (its `plan` says what would be sent, the card's title, target and facts, and the checked
//!   facts re-verified before the write; its `apply` gets the permit);
//! - `<domain>/mod.rs`: `register(registrar, env)`: read the config, declare its secrets,
//!   register the tools.
//!
//! A new read tool touches its tool file and one `registrar.read(...)` line; a new external
//! write its tool file, one `registrar.write(...)` line and, on the client, one method taking
//! the permit. The catalog row already exists in `care_core::catalog`.

pub mod asc;
pub mod cluster;
pub mod discourse;
pub mod kit;
pub mod locale;
pub mod mail;

use care_core::catalog::{self, Domain};
use care_core::env::EnvReader;
use care_core::registrar::Registrar;

/// One upstream domain: which catalog domain it serves, and how it registers.
#[derive(Debug, Clone, Copy)]
pub struct DomainEntry {
    pub domain: Domain,
    pub register: fn(&mut Registrar, &mut EnvReader<'_>),
}

/// Every implemented upstream domain. Startup walks this list for the role being served.
pub const DOMAINS: &[DomainEntry] = &[
    DomainEntry {
        domain: Domain::AppStoreConnect,
        register: asc::register,
    },
    DomainEntry {
        domain: Domain::Discourse,
        register: discourse::register,
    },
    DomainEntry {
        domain: Domain::Kubernetes,
        register: cluster::register,
    },
    DomainEntry {
        domain: Domain::Mailbox,
        register: mail::register,
    },
];

/// Registers every domain the role holds a tool of (no other domain is constructed: no
/// client, no credentials read). Problems go to `env`.
pub fn register_domains(registrar: &mut Registrar, env: &mut EnvReader<'_>) {
    let role = registrar.role();
    for entry in DOMAINS
        .iter()
        .filter(|entry| catalog::role_needs(role, entry.domain))
    {
        (entry.register)(registrar, env);
    }
}

/// Whether the tools of `domain` are implemented: the ledger and approval tools (in the core)
/// and every domain in [`DOMAINS`].
pub fn is_implemented(domain: Domain) -> bool {
    matches!(domain, Domain::Ledger | Domain::Approvals)
        || DOMAINS.iter().any(|entry| entry.domain == domain)
}

//! App Store Connect: reviews, ratings and the gated review reply (issue 4).
//!
//! # Layout
//! - [`config`]: `CARE_ASC_*` and `CARE_LOCALES`.
//! - [`token`]: ES256 API tokens, cached and renewed.
//! - [`client`]: the HTTP transport and its error mapping; [`api`]: the endpoints, typed.
//! - [`model`]: JSON:API documents in, fenced JSON out.
//! - [`context`]: what the tools share, and the scope rules (app allowlist, review → app).
//! - [`locale`]: the locale gate of replies (shared: `crate::locale`).
//! - [`tools`]: the seven tools.
//!
//! [`register`] is the domain's one entry point (see `crate::DOMAINS`): the server calls it only
//! for a role holding App Store Connect tools; it reads the configuration (a missing or bad one
//! stops the start with the reasons, never the values) and registers the tools.

pub mod api;
pub mod client;
pub mod config;
pub mod context;
pub mod model;
pub mod token;
pub mod tools;

/// The locale gate, shared with the other domains that send replies.
pub use crate::locale;

use std::sync::Arc;

use care_core::env::EnvReader;
use care_core::registrar::Registrar;

pub use config::AscConfig;
pub use context::AscContext;

/// Registers the seven tools: reads the configuration (problems go to `env`, by variable name;
/// then nothing is registered), declares the `.p8` key as a secret, builds the client.
pub fn register(registrar: &mut Registrar, env: &mut EnvReader<'_>) {
    let Some(config) = AscConfig::read(env) else {
        return;
    };
    registrar.rotating_secret(&config.private_key);
    let client = match client::AscClient::new(&config) {
        Ok(client) => client,
        Err(e) => {
            env.problem(format!("App Store Connect client refused: {e}"));
            return;
        }
    };
    let asc = Arc::new(AscContext::new(config, client, registrar.tickets()));
    let c = || Arc::clone(&asc);
    registrar.read(tools::apps::AppsList(c()));
    registrar.read(tools::reviews::ReviewsList(c()));
    registrar.read(tools::reviews::ReviewGet(c()));
    registrar.read(tools::reviews::ReviewResponseGet(c()));
    registrar.read(tools::ratings::RatingsSummary(c()));
    registrar.read(tools::unanswered::ReviewsUnanswered(c()));
    registrar.write(tools::reply::ReviewReply::new(c()));
}

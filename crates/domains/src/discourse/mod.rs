//! Discourse: the community forum's topics, posts, search and categories, and the gated forum
//! reply (issue 9).
//!
//! # Layout
//! - [`config`]: `CARE_DISCOURSE_*` (and `CARE_LOCALES`, shared with the review reply).
//! - [`client`]: the HTTP transport (`Api-Key` / `Api-Username`), its 429 and error reading;
//!   [`api`]: the endpoints, typed.
//! - [`model`]: Discourse's JSON in, fenced JSON out; [`text`]: post HTML as plain text.
//! - [`context`]: what the tools share: scope (no private messages, the category allowlist),
//!   who speaks for the company, and the forum's SLA tickets.
//! - [`tools`]: the six tools.
//!
//! [`register`] is the domain's one entry point (see `crate::DOMAINS`): the server calls it only
//! for a role holding Discourse tools; it reads the configuration (a missing or bad one stops
//! the start with the reasons, never the values) and registers the tools.

pub mod api;
pub mod client;
pub mod config;
pub mod context;
pub mod model;
pub mod text;
pub mod tools;

use std::sync::Arc;

use care_core::env::EnvReader;
use care_core::registrar::Registrar;

pub use config::DiscourseConfig;
pub use context::DiscourseContext;

/// Registers the six tools: reads the configuration (problems go to `env`, by variable name;
/// then nothing is registered), declares the API key as a secret, builds the client.
pub fn register(registrar: &mut Registrar, env: &mut EnvReader<'_>) {
    let Some(config) = DiscourseConfig::read(env) else {
        return;
    };
    registrar.rotating_secret(&config.api_key);
    let client = match client::DiscourseClient::new(&config) {
        Ok(client) => client,
        Err(e) => {
            env.problem(format!("Discourse client refused: {e}"));
            return;
        }
    };
    let forum = Arc::new(DiscourseContext::new(config, client, registrar.tickets()));
    let c = || Arc::clone(&forum);
    registrar.read(tools::latest::LatestTopics(c()));
    registrar.read(tools::topic::TopicGet(c()));
    registrar.read(tools::search::Search(c()));
    registrar.read(tools::categories::Categories(c()));
    registrar.read(tools::post::PostGet(c()));
    registrar.write(tools::reply::PostReply(c()));
}

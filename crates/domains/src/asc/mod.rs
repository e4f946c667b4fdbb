//! App Store Connect: reviews, ratings and the gated review reply (issue 4).
//!
//! # Layout
//! - [`config`]: `CARE_ASC_*` and `CARE_LOCALES`.
//! - [`token`]: ES256 API tokens, cached and renewed.
//! - [`client`]: the HTTP transport and its error mapping; [`api`]: the endpoints, typed.
//! - [`model`]: JSON:API documents in, fenced JSON out.
//! - [`context`]: what the tools share, and the scope rules (app allowlist, review → app).
//! - [`locale`]: the locale gate of replies.
//! - [`tools`]: the seven tools.
//!
//! [`register`] is the one entry point of the server: it runs only for a role holding App
//! Store Connect tools, reads the configuration (a missing or bad one stops the start with the
//! reasons, never the values), and adds the tools and the reply's planner.

pub mod api;
pub mod client;
pub mod config;
pub mod context;
pub mod locale;
pub mod model;
pub mod token;
pub mod tools;

use std::sync::Arc;

use care_core::catalog::{self, Role};
use care_core::pipeline::{ExternalWrite, WritePlanner};
use care_core::tool::{Read, Services, ToolHandler};

pub use config::AscConfig;
pub use context::AscContext;

/// Why the App Store Connect tools could not be built; printed at start, exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum AscStartError {
    #[error("App Store Connect configuration refused: {}", .0.join("; "))]
    Config(Vec<String>),
    #[error("App Store Connect client refused: {0}")]
    Client(#[from] client::ClientError),
}

/// Reads the configuration from the process environment and registers the tools.
pub fn register(
    role: Role,
    services: &Arc<Services>,
    handlers: &mut Vec<Arc<dyn ToolHandler>>,
    planners: &mut Vec<Arc<dyn WritePlanner>>,
) -> Result<(), AscStartError> {
    let config = AscConfig::from_env(|k| std::env::var(k).ok()).map_err(AscStartError::Config)?;
    register_with(role, config, services, handlers, planners)
}

/// Registers the seven tools built on `config`; the reply joins `planners` only for a role
/// that holds it (so `approval_request` can check its arguments).
pub fn register_with(
    role: Role,
    config: AscConfig,
    services: &Arc<Services>,
    handlers: &mut Vec<Arc<dyn ToolHandler>>,
    planners: &mut Vec<Arc<dyn WritePlanner>>,
) -> Result<(), AscStartError> {
    let client = client::AscClient::new(&config)?;
    let asc = Arc::new(AscContext::new(config, client, Arc::clone(services)));
    let c = || Arc::clone(&asc);
    handlers.push(Arc::new(Read(tools::apps::AppsList(c()))));
    handlers.push(Arc::new(Read(tools::reviews::ReviewsList(c()))));
    handlers.push(Arc::new(Read(tools::reviews::ReviewGet(c()))));
    handlers.push(Arc::new(Read(tools::reviews::ReviewResponseGet(c()))));
    handlers.push(Arc::new(Read(tools::ratings::RatingsSummary(c()))));
    handlers.push(Arc::new(Read(tools::unanswered::ReviewsUnanswered(c()))));
    let reply = Arc::new(ExternalWrite::new(
        tools::reply::ReviewReply::new(c()),
        Arc::clone(services),
    ));
    if catalog::external_write_of(role).is_some_and(|e| e.name == "asc_review_reply") {
        planners.push(reply.clone());
    }
    handlers.push(reply);
    Ok(())
}

//! The scaffold every HTTP fake stands on: a loopback server on its own thread and runtime,
//! and a front that every request passes before the fake's routes — credential check (by the
//! fake's [`Dialect`]), injected [`Failure`]s, recording ([`RecordedRequest`]) and delays.
//!
//! A fake supplies only its upstream's routes and state (an axum [`Router`](axum::Router))
//! and, if the upstream checks credentials or words errors its own way, a [`Dialect`]:
//!
//! ```no_run
//! use axum::Router;
//! use axum::routing::get;
//! use care_fakes::http::{FakeServer, Plain};
//!
//! let server = FakeServer::start("hello", Plain, |_base_url| {
//!     Router::new().route("/hello", get(|| async { "hi" }))
//! })?;
//! let url = format!("{}/hello", server.base_url());
//! # Ok::<(), care_fakes::http::ServeError>(())
//! ```

mod control;
mod dialect;
mod front;
pub mod query;
mod server;

pub use control::{Failure, RecordedRequest};
pub use dialect::{Dialect, Plain};
pub use server::{FakeServer, ServeError};

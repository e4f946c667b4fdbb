//! One face for every upstream fake, so the sandbox, `sandbox show-sent` and the test harnesses
//! iterate over the fakes instead of naming each; and the list of fakes they all start.

use std::any::Any;
use std::path::Path;

use crate::http::FakeServer;

/// A running fake of one upstream service.
pub trait Upstream: Any + Send + Sync + std::fmt::Debug {
    /// A short, stable name (`asc`, `discourse`, `kubernetes`): labels and file names.
    fn name(&self) -> &'static str;

    /// What a person calls the upstream ("App Store Connect").
    fn title(&self) -> &'static str;

    /// Where the fake listens, for a person: the HTTP fake's base URL, or the URLs of a fake
    /// that speaks other protocols (space-separated).
    fn address(&self) -> String {
        self.server()
            .map(|s| s.base_url().to_owned())
            .unwrap_or_default()
    }

    /// The HTTP fake (base URL, recorded requests, injected failures and delays), when the
    /// upstream speaks HTTP; `None` for the mail fake (IMAP and SMTP).
    fn server(&self) -> Option<&FakeServer> {
        None
    }

    /// The `CARE_*` environment a role needs to use this fake. Writes the files the variables
    /// point at (key files) into `dir`, so call it once per directory and keep the result.
    fn role_env(&self, dir: &Path) -> std::io::Result<Vec<(String, String)>>;

    /// The writes the fake accepted so far, in order, for a person to read.
    fn received_writes(&self) -> Vec<ReceivedWrite>;
}

impl dyn Upstream {
    /// This fake as its concrete type, for tests and demo steps about one upstream.
    pub fn downcast_ref<T: Upstream>(&self) -> Option<&T> {
        (self as &dyn Any).downcast_ref::<T>()
    }
}

/// The first fake of type `T` among `upstreams`.
pub fn find<T: Upstream>(upstreams: &[Box<dyn Upstream>]) -> Option<&T> {
    upstreams.iter().find_map(|u| u.downcast_ref::<T>())
}

/// One write a fake accepted, as `sandbox show-sent` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedWrite {
    /// What the write went to, in the upstream's words (`rev-en-001 -> resp-fake-0001`).
    pub target: String,
    /// The text the write carried, verbatim: agent-written, so escape it before showing it.
    pub text: String,
}

/// Why the fakes did not start.
#[derive(Debug, thiserror::Error)]
#[error("the {upstream} fake did not start: {reason}")]
pub struct StartFailed {
    pub upstream: &'static str,
    pub reason: String,
}

/// Every upstream fake with its demo data, scoped as the sandbox and the server tests use it.
/// A new fake joins both by being added here.
pub fn start_demo_upstreams() -> Result<Vec<Box<dyn Upstream>>, StartFailed> {
    let asc = crate::asc::FakeAsc::start(crate::asc::demo_seed())
        .map_err(|e| StartFailed {
            upstream: "asc",
            reason: e.to_string(),
        })?
        .in_scope(&crate::asc::DEMO_SCOPE);
    let discourse = crate::discourse::FakeDiscourse::start(crate::discourse::demo_seed())
        .map_err(|e| StartFailed {
            upstream: "discourse",
            reason: e.to_string(),
        })?
        .in_scope(&crate::discourse::DEMO_CATEGORY_SCOPE);
    let mail = crate::mail::FakeMail::start(crate::mail::demo_seed()).map_err(|e| StartFailed {
        upstream: "mail",
        reason: e.to_string(),
    })?;
    Ok(vec![
        Box::new(asc),
        Box::new(discourse),
        Box::new(mail),
        Box::new(crate::kubernetes::start_demo()?),
    ])
}

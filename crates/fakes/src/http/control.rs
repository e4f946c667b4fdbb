//! What a test controls and reads on a running fake, shared between the HTTP task and the
//! handle: the log of requests, the failures to inject and the answers to hold back.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// One request as the fake saw it, and what it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// The headers the fake's [`Dialect`](super::Dialect) keeps (lower-case names), in order.
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// The credentials passed the fake's own check (checked on every request, injected
    /// failures included, so a test can see what a retry carried).
    pub authorized: bool,
    /// Why the credentials were refused, when they were.
    pub auth_error: Option<String>,
    /// The answer was an injected [`Failure`], not the fake's own.
    pub injected: bool,
    /// The status the fake answered.
    pub status: u16,
}

impl RecordedRequest {
    /// The value of a kept header (`name` in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A failure to answer instead of the fake's own behaviour, for requests matching it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Only this method (`GET`, `POST`...); any method when `None`.
    pub method: Option<String>,
    /// Requests whose path starts with this.
    pub path_prefix: String,
    pub status: u16,
    /// The `Retry-After` header to send, verbatim.
    pub retry_after: Option<String>,
    /// How many requests it applies to; every matching request when `None`.
    pub times: Option<u32>,
}

impl Failure {
    /// `status` for every request under `path_prefix`.
    pub fn status(path_prefix: &str, status: u16) -> Failure {
        Failure {
            method: None,
            path_prefix: path_prefix.to_owned(),
            status,
            retry_after: None,
            times: None,
        }
    }

    /// Only the next `n` matching requests.
    pub fn times(mut self, n: u32) -> Failure {
        self.times = Some(n);
        self
    }

    pub fn retry_after(mut self, value: &str) -> Failure {
        self.retry_after = Some(value.to_owned());
        self
    }

    pub fn method(mut self, method: &str) -> Failure {
        self.method = Some(method.to_owned());
        self
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m == method) && path.starts_with(&self.path_prefix)
    }
}

/// Matching requests are answered `by` later than they would be.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Delay {
    method: String,
    path_prefix: String,
    by: Duration,
}

#[derive(Debug, Default)]
struct Inner {
    requests: Vec<RecordedRequest>,
    failures: Vec<Failure>,
    delays: Vec<Delay>,
}

/// What the front of a request needs to know before the fake's routes run.
#[derive(Debug)]
pub(crate) struct Plan {
    pub failure: Option<Failure>,
    pub delay: Option<Duration>,
}

/// Shared between the HTTP task and the handle; every method takes the lock briefly.
#[derive(Debug, Default)]
pub(crate) struct Control {
    inner: Mutex<Inner>,
}

impl Control {
    /// A panic elsewhere while holding the lock leaves the data usable (it is a fake).
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes one use of the first failure (in injection order) matching the request, and the
    /// first delay matching it.
    pub fn plan(&self, method: &str, path: &str) -> Plan {
        let mut inner = self.lock();
        let delay = inner
            .delays
            .iter()
            .find(|d| d.method == method && path.starts_with(&d.path_prefix))
            .map(|d| d.by);
        let index = inner.failures.iter().position(|f| f.matches(method, path));
        let failure = index.map(|index| {
            let failure = inner.failures[index].clone();
            if let Some(times) = &mut inner.failures[index].times {
                *times = times.saturating_sub(1);
                if *times == 0 {
                    inner.failures.remove(index);
                }
            }
            failure
        });
        Plan { failure, delay }
    }

    pub fn record(&self, request: RecordedRequest) {
        self.lock().requests.push(request);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    pub fn clear_requests(&self) {
        self.lock().requests.clear();
    }

    pub fn inject(&self, failure: Failure) {
        self.lock().failures.push(failure);
    }

    pub fn clear_failures(&self) {
        self.lock().failures.clear();
    }

    pub fn delay(&self, method: &str, path_prefix: &str, by: Duration) {
        self.lock().delays.push(Delay {
            method: method.to_owned(),
            path_prefix: path_prefix.to_owned(),
            by,
        });
    }

    pub fn clear_delays(&self) {
        self.lock().delays.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_apply_in_injection_order_and_wear_out() {
        let control = Control::default();
        control.inject(Failure::status("/a", 503).times(2));
        control.inject(Failure::status("/", 500).method("POST"));
        let status =
            |method: &str, path: &str| control.plan(method, path).failure.map(|f| f.status);
        assert_eq!(status("POST", "/a/1"), Some(503), "first injected wins");
        assert_eq!(status("GET", "/a"), Some(503));
        assert_eq!(status("POST", "/a"), Some(500), "the 503 is used up");
        assert_eq!(status("GET", "/a"), None, "the 500 is POST only");
        assert_eq!(status("POST", "/b"), Some(500), "no count: every time");
        control.clear_failures();
        assert_eq!(status("POST", "/b"), None);
    }

    #[test]
    fn a_delay_matches_method_and_prefix() {
        let control = Control::default();
        control.delay("POST", "/slow", Duration::from_millis(5));
        assert_eq!(
            control.plan("POST", "/slow/1").delay,
            Some(Duration::from_millis(5))
        );
        assert_eq!(control.plan("GET", "/slow/1").delay, None);
        assert_eq!(control.plan("POST", "/fast").delay, None);
        control.clear_delays();
        assert_eq!(control.plan("POST", "/slow/1").delay, None);
    }
}

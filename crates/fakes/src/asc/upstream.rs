//! The App Store Connect fake as one of the sandbox's upstreams: its role environment (with the
//! `.p8` written beside it) and the replies it accepted, as `sandbox show-sent` lists them.

use std::path::Path;

use super::{FakeAsc, KeyError};
use crate::http::FakeServer;
use crate::upstream::{ReceivedWrite, Upstream};

impl Upstream for FakeAsc {
    fn name(&self) -> &'static str {
        "asc"
    }

    fn title(&self) -> &'static str {
        "App Store Connect"
    }

    fn server(&self) -> Option<&FakeServer> {
        Some(&self.server)
    }

    /// `CARE_ASC_*` for the fake's scope, with the key written as `dir/AuthKey_<KEY_ID>.p8`.
    fn role_env(&self, dir: &Path) -> std::io::Result<Vec<(String, String)>> {
        let key_file = self.key.write_p8(dir).map_err(|e| match e {
            KeyError::Io(e) => e,
            other => std::io::Error::other(other),
        })?;
        let scope: Vec<&str> = self.scope.iter().map(String::as_str).collect();
        Ok(self.env(&key_file, &scope))
    }

    fn received_writes(&self) -> Vec<ReceivedWrite> {
        self.sent_replies()
            .into_iter()
            .map(|reply| ReceivedWrite {
                target: format!(
                    "{} -> {}{}",
                    reply.review_id,
                    reply.response_id,
                    if reply.replaced {
                        " (replaced the earlier response)"
                    } else {
                        ""
                    }
                ),
                text: reply.body,
            })
            .collect()
    }
}

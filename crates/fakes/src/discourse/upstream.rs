//! The Discourse fake as one of the sandbox's upstreams: its role environment (with the API key
//! written beside it) and the replies it accepted, as `sandbox show-sent` lists them.

use std::path::Path;

use super::FakeDiscourse;
use crate::http::FakeServer;
use crate::upstream::{ReceivedWrite, Upstream};

impl Upstream for FakeDiscourse {
    fn name(&self) -> &'static str {
        "discourse"
    }

    fn title(&self) -> &'static str {
        "Discourse"
    }

    fn server(&self) -> Option<&FakeServer> {
        Some(&self.server)
    }

    /// `CARE_DISCOURSE_*` for the fake's scope, with the key written as `dir/discourse-api-key`.
    fn role_env(&self, dir: &Path) -> std::io::Result<Vec<(String, String)>> {
        let key_file = self.write_key_file(dir)?;
        Ok(self.env(&key_file, self.scope.as_deref()))
    }

    fn received_writes(&self) -> Vec<ReceivedWrite> {
        self.sent_posts()
            .into_iter()
            .map(|post| ReceivedWrite {
                target: format!(
                    "topic {} -> post {} (#{}){}",
                    post.topic_id,
                    post.post_id,
                    post.post_number,
                    post.reply_to_post_number
                        .map(|n| format!(", in reply to #{n}"))
                        .unwrap_or_default()
                ),
                text: post.raw,
            })
            .collect()
    }
}

//! What every Discourse tool shares: the config, the client, the SLA ticket port, and the rules
//! of scope — private messages are never read or written, and with `CARE_DISCOURSE_CATEGORY_IDS`
//! set, a topic outside those categories is `SCOPE_DENIED` (the answer never names the list).
//! Also who speaks for the company (the API user, and posters Discourse flags as staff), whether
//! a topic has had the company's answer, and the forum channel of `sla_status` fed from that.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use care_core::decision::{self, Rule};
use care_core::error::{ErrorCode, ToolError};
use care_core::ledger::SupportChannel;
use care_core::registrar::TicketPort;

use super::api::POSTS_PER_PAGE;
use super::client::DiscourseClient;
use super::config::DiscourseConfig;
use super::model::{Category, PUBLIC_ARCHETYPE, Post, Topic, TopicSummary};

/// How long the category list is reused (names and slugs change rarely).
const CATEGORY_TTL: Duration = Duration::from_secs(300);
/// Topics one listing may open to learn whether the company answered them (the list alone
/// names only a few posters and none as staff).
pub const MAX_RESOLVED_PER_CALL: usize = 10;
/// Remembered verdicts; beyond this the map is cleared (it is only a cache).
const MAX_VERDICTS: usize = 10_000;

/// Whether the company has answered a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// The company started the topic: nobody is waiting for it.
    OpenedByCompany,
    /// A post by the company after the first, at this time when known.
    Yes(Option<DateTime<Utc>>),
    No,
}

impl Answered {
    pub fn as_bool(self) -> bool {
        !matches!(self, Answered::No)
    }
}

/// Shared by the six tools of one process.
#[derive(Debug)]
pub struct DiscourseContext {
    pub config: DiscourseConfig,
    pub client: DiscourseClient,
    /// The only part of the ledger this domain uses: forum tickets for `sla_status`.
    pub tickets: TicketPort,
    categories: Mutex<Option<(Instant, Vec<Category>)>>,
    /// Usernames Discourse flagged as staff in posts or participants this process has read.
    staff: Mutex<HashSet<String>>,
    /// topic id → (last post number when judged, verdict).
    verdicts: Mutex<HashMap<u64, (u64, Answered)>>,
}

fn scope_denied(detail: &str) -> ToolError {
    ToolError::new(ErrorCode::ScopeDenied).with_detail(detail.to_owned())
}

impl DiscourseContext {
    pub fn new(config: DiscourseConfig, client: DiscourseClient, tickets: TicketPort) -> Self {
        DiscourseContext {
            config,
            client,
            tickets,
            categories: Mutex::new(None),
            staff: Mutex::new(HashSet::new()),
            verdicts: Mutex::new(HashMap::new()),
        }
    }

    /// SCOPE_DENIED unless `category_id` is in scope.
    pub fn require_category(&self, category_id: Option<u64>) -> Result<(), ToolError> {
        if self.config.allows_category(category_id) {
            decision::passed(Rule::Scope);
            Ok(())
        } else {
            Err(scope_denied("category not in CARE_DISCOURSE_CATEGORY_IDS"))
        }
    }

    /// SCOPE_DENIED for a private message or a topic outside the categories in scope.
    pub fn require_in_scope(&self, topic: &TopicSummary) -> Result<(), ToolError> {
        if topic.archetype != PUBLIC_ARCHETYPE {
            return Err(scope_denied("not a public topic (private message)"));
        }
        self.require_category(topic.category_id)
    }

    /// A public topic in scope (listed and filtered), never a private message.
    pub fn in_scope(&self, topic: &TopicSummary) -> bool {
        self.require_in_scope(topic).is_ok()
    }

    /// The topic `topic_id` with its first chunk of posts, if it is in scope.
    pub async fn topic_in_scope(&self, topic_id: u64) -> Result<Topic, ToolError> {
        let topic = self.client.topic(topic_id).await?;
        self.require_in_scope(&topic.summary)?;
        self.learn(&topic.posts);
        self.learn_names(&topic.staff_participants);
        Ok(topic)
    }

    /// Post number `n` of `topic`: from its first chunk, else fetched by id from the part of
    /// the post stream where it can be (a post's place in the stream is at most its number,
    /// less the deleted posts before it). NOT_FOUND when it is not there.
    pub async fn post_numbered(&self, topic: &Topic, n: u64) -> Result<Post, ToolError> {
        if let Some(post) = topic.posts.iter().find(|p| p.post_number == n) {
            return Ok(post.clone());
        }
        let not_found = || ToolError::new(ErrorCode::NotFound).with_detail("no such post number");
        if n > topic
            .summary
            .highest_post_number
            .max(topic.stream.len() as u64)
        {
            return Err(not_found());
        }
        let end = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(topic.stream.len());
        let start = end.saturating_sub(2 * POSTS_PER_PAGE);
        let ids = &topic.stream[start..end];
        let posts = self.client.posts(topic.summary.id, ids).await?;
        self.learn(&posts);
        posts
            .into_iter()
            .find(|p| p.post_number == n)
            .ok_or_else(not_found)
    }

    /// Every category of the forum (cached for a few minutes).
    pub async fn categories(&self) -> Result<Vec<Category>, ToolError> {
        if let Some((at, list)) = self
            .categories
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            && at.elapsed() < CATEGORY_TTL
        {
            return Ok(list.clone());
        }
        let list = self.client.categories().await?;
        *self
            .categories
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((Instant::now(), list.clone()));
        Ok(list)
    }

    /// The names of categories by id, best effort (an unreachable category list leaves names
    /// out; the ids are still there).
    pub async fn category_names(&self) -> HashMap<u64, String> {
        match self.categories().await {
            Ok(list) => list.into_iter().map(|c| (c.id, c.name)).collect(),
            Err(err) => {
                tracing::warn!(detail = ?err.detail, "category names unavailable");
                HashMap::new()
            }
        }
    }

    /// Whether `username` speaks for the company: the API user, or flagged as staff.
    pub fn is_company(&self, username: &str, staff_flag: bool) -> bool {
        staff_flag
            || username.eq_ignore_ascii_case(&self.config.api_username)
            || self
                .staff
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&username.to_ascii_lowercase())
    }

    /// Remembers the staff among the authors of `posts`.
    pub fn learn(&self, posts: &[Post]) {
        let names: Vec<String> = posts
            .iter()
            .filter(|p| p.staff)
            .map(|p| p.username.clone())
            .collect();
        self.learn_names(&names);
    }

    fn learn_names(&self, names: &[String]) {
        let mut staff = self.staff.lock().unwrap_or_else(PoisonError::into_inner);
        if staff.len() + names.len() > MAX_VERDICTS {
            staff.clear();
        }
        staff.extend(names.iter().map(|n| n.to_ascii_lowercase()));
    }

    /// Whether the company answered a topic, judged from a topic view (its first chunk of posts
    /// and the participants Discourse flags as staff).
    pub fn answered_in(&self, topic: &Topic) -> Answered {
        let s = &topic.summary;
        let first = topic.posts.iter().find(|p| p.post_number == 1);
        let opener_is_company = match first {
            Some(p) => self.is_company(&p.username, p.staff),
            None => s
                .author
                .as_deref()
                .is_some_and(|a| self.is_company(a, false)),
        };
        let verdict = if opener_is_company {
            Answered::OpenedByCompany
        } else if let Some(reply) = topic.posts.iter().find(|p| {
            p.post_number > 1
                && !p.deleted
                && matches!(p.post_type, 1 | 2)
                && self.is_company(&p.username, p.staff)
        }) {
            Answered::Yes(reply.created_at)
        } else if topic.staff_participants.iter().any(|name| {
            s.author
                .as_deref()
                .is_none_or(|a| !a.eq_ignore_ascii_case(name))
        }) || s
            .last_poster
            .as_deref()
            .is_some_and(|p| self.is_company(p, false))
        {
            // Posted beyond the first chunk of posts: the time is not known here.
            Answered::Yes(None)
        } else {
            Answered::No
        };
        self.remember(s, verdict);
        verdict
    }

    /// Whether the company answered a topic, as far as a topic list shows it (the posters it
    /// names, the verdicts this process remembers); `None` when the list cannot tell.
    pub fn answered_listed(&self, s: &TopicSummary) -> Option<Answered> {
        if s.author
            .as_deref()
            .is_some_and(|a| self.is_company(a, false))
        {
            return Some(Answered::OpenedByCompany);
        }
        if s.highest_post_number.max(s.posts_count) <= 1 {
            return Some(Answered::No);
        }
        if s.other_posters
            .iter()
            .chain(s.last_poster.iter())
            .any(|p| self.is_company(p, false))
        {
            return Some(Answered::Yes(None));
        }
        self.verdicts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&s.id)
            .filter(|(highest, _)| *highest == s.highest_post_number)
            .map(|(_, verdict)| *verdict)
    }

    fn remember(&self, s: &TopicSummary, verdict: Answered) {
        let mut verdicts = self.verdicts.lock().unwrap_or_else(PoisonError::into_inner);
        if verdicts.len() >= MAX_VERDICTS {
            verdicts.clear();
        }
        verdicts.insert(s.id, (s.highest_post_number, verdict));
    }

    /// Feeds `sla_status`: a topic nobody from the company has answered is an open ticket of
    /// the forum channel (from its creation); an answered one has had its first response.
    /// Best effort: a ledger failure is logged and the read it came with still answers.
    pub async fn feed_ticket(&self, s: &TopicSummary, verdict: Answered, now: DateTime<Utc>) {
        let Some(created) = s.created_at else {
            return;
        };
        let reference = s.id.to_string();
        let result = match verdict {
            Answered::OpenedByCompany => return,
            Answered::No => {
                self.tickets
                    .open(SupportChannel::Forum, &reference, created)
                    .await
            }
            Answered::Yes(at) => {
                let at = at.or(s.last_posted_at).unwrap_or(now).max(created);
                match self
                    .tickets
                    .open(SupportChannel::Forum, &reference, created)
                    .await
                {
                    Ok(()) => {
                        self.tickets
                            .answered(SupportChannel::Forum, &reference, at)
                            .await
                    }
                    Err(e) => Err(e),
                }
            }
        };
        if let Err(err) = result {
            tracing::warn!(error = %err, "forum ticket not recorded");
        }
    }
}

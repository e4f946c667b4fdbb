//! A world for the approval-channel tests: a real relay over real websockets (in process, or
//! the one `CARE_TEST_NOSTR_RELAY` names), a SQLite ledger, an in-process gate with a recording
//! write tool standing in for `asc_review_reply`, a `NostrChannel`, and keys made at run time.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod proxy;

use std::sync::Arc;
use std::time::Duration;

use care_core::approvals::ApprovalPolicy;
use care_core::catalog::Role;
use care_core::config::Config;
use care_core::env::MapEnv;
use care_core::gate::{Gate, GateAnswer};
use care_core::ledger::{ApprovalStatus, Ledger};
use care_core::ledger_tools;
use care_core::pipeline::{ExternalWrite, WritePlanner};
pub use care_core::testkit::{Recorder, RecordingWrite, Sent};
use care_core::tool::{Registry, Services, ToolHandler};
use care_nostr::apply::Judge;
use care_nostr::gatekeeper::{KnownApprovers, RefusalLog};
use care_nostr::reaction::build_reaction;
use care_nostr::{ChannelOptions, NostrChannel, NostrSettings};
use chrono::Utc;
use nostr_relay_builder::prelude::{
    Event, EventId, JsonUtil, Keys, LocalRelay, MemoryDatabase, MemoryDatabaseOptions,
    NostrDatabase, RelayBuilder, ToBech32,
};
use serde_json::{Map, Value, json};

/// Names an independent relay (e.g. nostr-rs-relay) to run the suite against instead of the
/// in-process one. Tests that must stop, restart or plant into the relay stay in process.
pub const EXTERNAL_RELAY_VAR: &str = "CARE_TEST_NOSTR_RELAY";

/// How long a test waits for a reaction to move a row or a connection to come back (the
/// pool's reconnect delay carries up to 3 s of jitter).
pub const DEADLINE: Duration = Duration::from_secs(15);

pub fn external_relay() -> Option<String> {
    std::env::var(EXTERNAL_RELAY_VAR)
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// A relay this test controls: in process, with its database at hand.
#[derive(Debug, Clone)]
pub struct TestRelay {
    pub relay: LocalRelay,
    pub database: MemoryDatabase,
    pub url: String,
    pub port: u16,
}

impl TestRelay {
    pub async fn start() -> TestRelay {
        let database = MemoryDatabase::with_opts(MemoryDatabaseOptions {
            events: true,
            max_events: None,
        });
        TestRelay::start_on(free_port(), database).await
    }

    /// A relay on `port` over `database` (a restart keeps what the relay stored).
    pub async fn start_on(port: u16, database: MemoryDatabase) -> TestRelay {
        let builder = RelayBuilder::default()
            .port(port)
            .database(database.clone());
        let relay = LocalRelay::new(builder);
        relay.run().await.expect("relay starts");
        let url = relay.url().await.to_string();
        TestRelay {
            relay,
            database,
            url,
            port,
        }
    }

    /// Stores `event` without the relay's checks and pushes it to live subscribers: how a
    /// relay that accepts anything would serve a forged event.
    pub async fn plant(&self, event: &Event) {
        self.database.save_event(event).await.expect("planted");
        self.relay.notify_event(event.clone());
    }
}

/// A loopback port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// How a world is set up.
#[derive(Debug, Clone)]
pub struct Setup {
    pub approvers: usize,
    pub threshold: u32,
    /// List the server's own key among the approvers too (it must still never count).
    pub server_listed: bool,
    pub write_enabled: bool,
    /// `None`: an in-process relay (or the external one); `Some(url)`: exactly this relay.
    pub relay_url: Option<String>,
    pub options: ChannelOptions,
    /// Route the server's connection through a [`proxy::Proxy`] the test can cut (the
    /// approvers still reach the relay directly). In-process relay only.
    pub via_proxy: bool,
    /// How far this process's clock is off (the ledger's clock must decide approval time).
    pub clock_skew: chrono::Duration,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            approvers: 2,
            threshold: 1,
            server_listed: false,
            write_enabled: true,
            relay_url: None,
            options: fast_options(),
            via_proxy: false,
            clock_skew: chrono::Duration::zero(),
        }
    }
}

/// Timings for tests: quick reconnects, short waits.
pub fn fast_options() -> ChannelOptions {
    ChannelOptions {
        retry_interval: Duration::from_millis(200),
        connect_wait: Duration::from_millis(500),
        fetch_timeout: Duration::from_secs(2),
        catch_up: Duration::from_secs(600),
        lookup_interval: Duration::from_millis(250),
    }
}

/// What a restarted server shares with the first one: approvers, ledger, configuration.
type SameServer = (Vec<Keys>, Arc<dyn Ledger>, MapEnv, String);

pub struct World {
    pub relay: Option<TestRelay>,
    /// Where approvers publish (the relay itself).
    pub relay_url: String,
    /// Between the server and the relay, when the setup asked for one.
    pub proxy: Option<proxy::Proxy>,
    pub server: Keys,
    pub approvers: Vec<Keys>,
    pub stranger: Keys,
    pub group: String,
    pub ledger: Arc<dyn Ledger>,
    pub policy: ApprovalPolicy,
    pub channel: NostrChannel,
    pub gate: Gate,
    pub recorder: Arc<Recorder>,
    /// The configuration the first server was started with (restarts share it).
    pub env: MapEnv,
    /// The ledger's URL (the first server's, shared by restarts).
    pub db_url: String,
    pub known: KnownApprovers,
    pub refusals: RefusalLog,
    _dir: tempfile::TempDir,
}

/// A fresh NIP-29 group id per test, so tests sharing a relay never see each other's cards.
fn fresh_group() -> String {
    let bytes: [u8; 8] = rand::random();
    format!("care-test-{}", hex::encode(bytes))
}

impl World {
    pub async fn new(setup: Setup) -> World {
        let relay = match (&setup.relay_url, external_relay()) {
            (Some(_), _) | (None, Some(_)) => None,
            (None, None) => Some(TestRelay::start().await),
        };
        let relay_url = setup
            .relay_url
            .clone()
            .or_else(external_relay)
            .unwrap_or_else(|| relay.as_ref().unwrap().url.clone());
        let proxy = match (&relay, setup.via_proxy) {
            (Some(relay), true) => Some(proxy::Proxy::start(relay.port).await),
            _ => None,
        };
        let server_url = proxy
            .as_ref()
            .map_or_else(|| relay_url.clone(), proxy::Proxy::url);
        let mut world = World::build(
            setup,
            relay,
            relay_url,
            server_url,
            Keys::generate(),
            fresh_group(),
            None,
        )
        .await;
        world.proxy = proxy;
        world
    }

    /// A second server process on the same ledger, keys and group (a restart).
    pub async fn restarted(&self, options: ChannelOptions) -> World {
        self.restarted_with(Setup {
            options,
            ..Setup::default()
        })
        .await
    }

    /// Another server process on the same ledger, relay and group whose configuration lists
    /// other approvers and another threshold (writes enabled).
    pub async fn other_process(&self, listed: &[&Keys], threshold: u32) -> World {
        let listed: Vec<String> = listed.iter().map(|k| k.public_key().to_hex()).collect();
        let env = MapEnv::of([
            ("CARE_APPROVERS", listed.join(",")),
            ("CARE_APPROVAL_THRESHOLD", threshold.to_string()),
            (
                "CARE_NOSTR_SECRET_KEY",
                self.server.secret_key().to_bech32().unwrap(),
            ),
            ("CARE_NOSTR_RELAYS", self.relay_url.clone()),
            ("CARE_APPROVAL_CHANNEL", self.group.clone()),
            ("CARE_WRITE_ENABLED", "1".to_owned()),
        ]);
        World::build(
            Setup::default(),
            self.relay.clone(),
            self.relay_url.clone(),
            self.relay_url.clone(),
            self.server.clone(),
            self.group.clone(),
            Some((
                self.approvers.clone(),
                Arc::clone(&self.ledger),
                env,
                self.db_url.clone(),
            )),
        )
        .await
    }

    /// A restart with its own setup (write switch, clock skew, options; the approvers,
    /// ledger and configuration stay the first server's).
    pub async fn restarted_with(&self, setup: Setup) -> World {
        World::build(
            setup,
            self.relay.clone(),
            self.relay_url.clone(),
            self.relay_url.clone(),
            self.server.clone(),
            self.group.clone(),
            Some((
                self.approvers.clone(),
                Arc::clone(&self.ledger),
                self.env.clone(),
                self.db_url.clone(),
            )),
        )
        .await
    }

    async fn build(
        setup: Setup,
        relay: Option<TestRelay>,
        relay_url: String,
        server_url: String,
        server: Keys,
        group: String,
        same: Option<SameServer>,
    ) -> World {
        let (url, dir) = care_ledger::test_support::temp_sqlite();
        let (approvers, ledger, env, db_url) = match same {
            Some((approvers, ledger, env, db_url)) => (approvers, ledger, env, db_url),
            None => {
                let approvers: Vec<Keys> = (0..setup.approvers).map(|_| Keys::generate()).collect();
                let mut listed: Vec<String> = approvers
                    .iter()
                    .map(|k| k.public_key().to_bech32().unwrap())
                    .collect();
                if setup.server_listed {
                    listed.push(server.public_key().to_hex());
                }
                let env = MapEnv::of([
                    ("DATABASE_URL", url.clone()),
                    ("CARE_APPROVERS", listed.join(",")),
                    ("CARE_APPROVAL_THRESHOLD", setup.threshold.to_string()),
                    (
                        "CARE_NOSTR_SECRET_KEY",
                        server.secret_key().to_bech32().unwrap(),
                    ),
                    ("CARE_NOSTR_RELAYS", server_url),
                    ("CARE_APPROVAL_CHANNEL", group.clone()),
                    (
                        "CARE_WRITE_ENABLED",
                        if setup.write_enabled { "1" } else { "0" }.to_owned(),
                    ),
                ]);
                let ledger = care_ledger::connect(Some(&url), std::path::Path::new("/nonexistent"))
                    .await
                    .unwrap();
                (approvers, ledger, env, url)
            }
        };
        let config = Arc::new(Config::from_env(&env).unwrap());
        let nostr = NostrSettings::from_env(&env).unwrap();
        let skew = setup.clock_skew;
        let services = Services::new(
            Arc::clone(&config),
            Arc::clone(&ledger),
            b"sk-demo-salt-0001",
        )
        .with_policy(nostr.policy())
        .with_clock(Arc::new(move || Utc::now() + skew));
        let policy = services.policy.clone();
        let settings = nostr.channel(setup.options.clone()).unwrap();
        let channel = NostrChannel::new(settings, Arc::clone(&ledger), policy.clone()).unwrap();
        channel.start().await.unwrap();
        let services = Arc::new(services.with_channel(Arc::new(channel.clone())));
        let recorder = Arc::new(Recorder::default());
        let write = Arc::new(ExternalWrite::new(
            RecordingWrite(Arc::clone(&recorder)),
            Arc::clone(&services),
        ));
        let mut handlers: Vec<Arc<dyn ToolHandler>> =
            ledger_tools::all(&services, vec![write.clone() as Arc<dyn WritePlanner>]);
        handlers.push(write);
        let registry = Registry::new(Role::Reviews, handlers).unwrap();
        let known = KnownApprovers::new(policy.for_new_rows().approvers());
        World {
            relay,
            relay_url,
            proxy: None,
            stranger: Keys::generate(),
            server,
            approvers,
            group,
            ledger,
            policy,
            channel,
            gate: Gate::new(registry, services),
            recorder,
            known,
            refusals: RefusalLog::default(),
            env,
            db_url,
            _dir: dir,
        }
    }

    /// What the handler needs besides the ledger, as this process's channel has it.
    pub fn judge(&self) -> Judge<'_> {
        Judge {
            policy: &self.policy,
            known: &self.known,
            refusals: &self.refusals,
        }
    }

    pub async fn wait_live(&self) {
        assert!(
            self.channel.wait_live(DEADLINE).await,
            "the channel never caught up with {}",
            self.relay_url
        );
    }

    pub async fn call(&self, tool: &str, arguments: Value) -> Result<Value, String> {
        let arguments: Map<String, Value> = arguments.as_object().unwrap().clone();
        match self.gate.call(tool, Some(arguments)).await {
            GateAnswer::UnknownTool => panic!("{tool} unknown"),
            GateAnswer::Result {
                envelope, is_error, ..
            } => {
                if is_error {
                    Err(envelope["error"]["code"].as_str().unwrap().to_owned())
                } else {
                    Ok(envelope["data"].clone())
                }
            }
        }
    }

    /// `approval_request` for a reply with `body`; returns (approval id, card event id).
    pub async fn request(&self, body: &str) -> (String, EventId) {
        self.request_with(body, json!({})).await
    }

    pub async fn request_with(&self, body: &str, extra: Value) -> (String, EventId) {
        let mut arguments = json!({"action": "asc_review_reply", "arguments": reply_args(body)});
        for (k, v) in extra.as_object().unwrap() {
            arguments[k] = v.clone();
        }
        let data = self.call("approval_request", arguments).await.unwrap();
        assert_eq!(data["status"], "pending", "{data}");
        let card = EventId::from_hex(data["card_event_id"].as_str().unwrap()).unwrap();
        (data["approval_id"].as_str().unwrap().to_owned(), card)
    }

    /// The write tool, called with the approved arguments.
    pub async fn send(&self, body: &str, approval_id: &str) -> Result<Value, String> {
        let mut a = reply_args(body);
        a["approval_id"] = json!(approval_id);
        self.call("asc_review_reply", a).await
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.recorder.sent()
    }

    /// `approval_status` as the agent sees it.
    pub async fn status(&self, id: &str) -> String {
        let data = self
            .call("approval_status", json!({"approval_id": id}))
            .await
            .unwrap();
        data["status"].as_str().unwrap().to_owned()
    }

    /// Polls `approval_status` until it answers `want` (fails the test after [`DEADLINE`]).
    pub async fn wait_status(&self, id: &str, want: &str) {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let now = self.status(id).await;
            if now == want {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{id} stayed {now}, expected {want}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn ledger_status(&self, id: &str) -> ApprovalStatus {
        self.ledger.approval(id).await.unwrap().unwrap().status
    }

    /// Signs and publishes the reaction an approver's app would send.
    pub async fn react(&self, keys: &Keys, card: EventId, content: &str) -> Event {
        self.react_ago(keys, card, content, 0).await
    }

    /// The same, dated `seconds` in the past (made before a later process started).
    pub async fn react_ago(
        &self,
        keys: &Keys,
        card: EventId,
        content: &str,
        seconds: u64,
    ) -> Event {
        let at = nostr_relay_builder::prelude::Timestamp::now().as_secs() - seconds;
        let event = nostr_relay_builder::prelude::EventBuilder::new(
            nostr_relay_builder::prelude::Kind::Reaction,
            content,
        )
        .tags([
            nostr_relay_builder::prelude::Tag::event(card),
            nostr_relay_builder::prelude::Tag::public_key(self.server.public_key()),
            nostr_relay_builder::prelude::Tag::custom(
                nostr_relay_builder::prelude::TagKind::h(),
                [self.group.as_str()],
            ),
        ])
        .custom_created_at(nostr_relay_builder::prelude::Timestamp::from_secs(at))
        .sign_with_keys(keys)
        .unwrap();
        self.publish(&event).await;
        event
    }

    /// Approves or rejects as `care-mcp approvals approve|reject` does.
    pub async fn decide_like_the_cli(
        &self,
        keys: &Keys,
        card: EventId,
        decision: care_core::ledger::Decision,
    ) -> Event {
        let event = build_reaction(
            keys,
            card,
            Some(self.server.public_key()),
            Some(&self.group),
            decision,
        )
        .unwrap();
        self.publish(&event).await;
        event
    }

    pub async fn publish(&self, event: &Event) {
        care_nostr::publish::publish(
            std::slice::from_ref(&self.relay_url),
            event,
            Duration::from_secs(5),
        )
        .await
        .expect("the relay accepts the event");
    }

    /// The card as a third party reads it back from the relay.
    pub async fn card_on_relay(&self, card: EventId) -> Option<Event> {
        care_nostr::publish::fetch(
            std::slice::from_ref(&self.relay_url),
            card,
            Duration::from_secs(5),
        )
        .await
        .unwrap()
    }

    /// Waits until every reaction published before this call was processed: a sentinel
    /// approval, approved after them on the same relay, is seen approved (each relay's
    /// messages are applied in order).
    pub async fn settle(&self) {
        self.settle_with(&[&self.approvers[0]]).await;
    }

    /// [`World::settle`] for a process whose policy needs these approvers' approvals.
    pub async fn settle_with(&self, approvers: &[&Keys]) {
        let (id, card) = self.request("sentinel").await;
        for keys in approvers {
            self.react(keys, card, "+").await;
        }
        self.wait_status(&id, "approved").await;
    }
}

/// Moves an approval's expiry to its creation time: by the ledger's clock it has lapsed.
pub async fn expire_now(w: &World, id: &str) {
    let changed = care_ledger::test_support::execute(
        &w.db_url,
        &format!("UPDATE approvals SET expires_at = created_at WHERE id = '{id}'"),
    )
    .await
    .unwrap();
    assert_eq!(changed, 1);
}

pub fn reply_args(body: &str) -> Value {
    json!({"review_id": "rev-123", "body": body, "locale": "en-US"})
}

/// `event` with its content changed and id and signature kept: a forgery.
pub fn forged(event: &Event, content: &str) -> Event {
    let mut value: Value = serde_json::from_str(&event.as_json()).unwrap();
    value["content"] = json!(content);
    Event::from_json(value.to_string()).unwrap()
}

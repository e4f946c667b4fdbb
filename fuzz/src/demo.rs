//! The world the gate-driving targets share: a runtime whose panics abort (a panic anywhere is
//! a finding, even one a task boundary or the gate would contain), the demo fakes as upstreams,
//! a SQLite ledger in a scratch directory, and a role's real gate built as `care-mcp` builds it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use care_core::approvals::{ApprovalPolicy, ApproverKey};
use care_core::catalog::Role;
use care_core::config::Config;
use care_core::env::{EnvReader, ExposeSecret, MapEnv};
use care_core::gate::Gate;
use care_core::ledger::Ledger;
use care_core::ledger_tools;
use care_core::outbound::OutboundScanner;
use care_core::registrar::{Registrar, TicketPort};
use care_core::tool::{Registry, Services};

/// What a target keeps alive for the whole run.
pub struct Demo {
    pub runtime: tokio::runtime::Runtime,
    /// The environment every role reads (ledger URL, audit salt, the fakes' variables).
    pub env: MapEnv,
    pub ledger_url: String,
    pub upstreams: Vec<Box<dyn care_fakes::Upstream>>,
}

/// Starts the demo world under `TMPDIR/care-fuzz-<tag>-<pid>` (scripts/fuzz points TMPDIR at a
/// directory it removes afterwards).
pub fn start(tag: &str) -> Demo {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("panic: {info}");
        std::process::abort();
    }));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let dir: PathBuf = std::env::temp_dir().join(format!("care-fuzz-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let upstreams = care_fakes::start_demo_upstreams().expect("the demo fakes start");
    let ledger_url = format!("sqlite://{}", dir.join("ledger.db").display());
    let mut vars: HashMap<String, String> = HashMap::new();
    vars.insert("DATABASE_URL".into(), ledger_url.clone());
    vars.insert(
        "CARE_AUDIT_SALT".into(),
        "sk-demo-fuzz-salt-0123456789abcdef".into(),
    );
    for upstream in &upstreams {
        vars.extend(upstream.role_env(&dir).expect("fake's files"));
    }
    Demo {
        runtime,
        env: MapEnv(vars),
        ledger_url,
        upstreams,
    }
}

impl Demo {
    /// The ledger at [`Demo::ledger_url`].
    pub async fn ledger(&self) -> Arc<dyn Ledger> {
        care_ledger::connect(Some(&self.ledger_url), std::path::Path::new("/nonexistent"))
            .await
            .expect("SQLite ledger")
    }

    /// `role`'s gate over `ledger`: its domains registered from the environment, the ledger
    /// tools, the outbound scan knowing every own secret, one approver.
    pub async fn gate(&self, role: Role, ledger: &Arc<dyn Ledger>) -> Gate {
        let mut reader = EnvReader::new(&self.env);
        let config = Arc::new(Config::read(&mut reader));
        let mut registrar = Registrar::new(role, TicketPort::new(Arc::clone(ledger)));
        care_domains::register_domains(&mut registrar, &mut reader);
        if let Err(problems) = reader.finish() {
            panic!("the fuzz environment is incomplete for {role}: {problems:?}");
        }
        let mut secrets: Vec<String> = config
            .own_secrets()
            .iter()
            .map(|s| s.expose_secret().to_owned())
            .collect();
        secrets.extend(registrar.secret_values());
        let approver = "1111111111111111111111111111111111111111111111111111111111111111";
        let policy =
            ApprovalPolicy::new(vec![ApproverKey::from_hex(approver).expect("hex")], None, 1);
        let services = Arc::new(
            Services::new(config, Arc::clone(ledger), b"sk-demo-fuzz-salt")
                .with_policy(policy)
                .with_scanner(OutboundScanner::new(secrets)),
        );
        let registered = registrar.finish(&services);
        let mut handlers = registered.handlers;
        handlers.extend(ledger_tools::all(&services, registered.planners));
        Gate::new(Registry::new(role, handlers).expect("registry"), services)
    }
}

//! The server's start-up in process, shared by the domain test harnesses: the core's
//! configuration and a domain's registration read from one environment, the outbound scanner
//! with every secret, one approver, the ledger tools, and the role's registry behind a real
//! `Gate` — what `care-mcp` builds, minus the approval channel (approvals are decided here
//! directly through the policy).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use care_core::approvals::{ApprovalPolicy, ApproverKey};
use care_core::catalog::Role;
use care_core::config::Config;
use care_core::env::{EnvReader, ExposeSecret, MapEnv};
use care_core::gate::Gate;
use care_core::ledger::{Decision, Ledger};
use care_core::ledger_tools;
use care_core::outbound::OutboundScanner;
use care_core::pipeline::WritePlanner;
use care_core::registrar::{Registrar, TicketPort};
use care_core::tool::{Registry, Services};

/// A throwaway approver key (no one's key).
pub const APPROVER: &str = "1111111111111111111111111111111111111111111111111111111111111111";
/// The server's own key (never an approver).
pub const SERVER: &str = "3333333333333333333333333333333333333333333333333333333333333333";

/// What a harness gets: the gate a client would call, and the ledger and services behind it.
pub struct InProcess {
    pub gate: Gate,
    pub ledger: Arc<dyn Ledger>,
    pub services: Arc<Services>,
    /// The external writes the role holds (for checks outside `approval_request`).
    pub planners: Vec<Arc<dyn WritePlanner>>,
}

/// Builds `role` from `env` (which names the ledger in `DATABASE_URL` and the audit salt in
/// `CARE_AUDIT_SALT`), registering what `register` registers.
pub async fn build(
    role: Role,
    env: &MapEnv,
    register: impl FnOnce(&mut Registrar, &mut EnvReader<'_>),
) -> InProcess {
    let url = env
        .0
        .get("DATABASE_URL")
        .expect("DATABASE_URL in the test env");
    let salt = env
        .0
        .get("CARE_AUDIT_SALT")
        .expect("CARE_AUDIT_SALT in the test env")
        .clone();
    let ledger = care_ledger::connect(Some(url), std::path::Path::new("/nonexistent"))
        .await
        .unwrap();
    let mut reader = EnvReader::new(env);
    let core_config = Arc::new(Config::read(&mut reader));
    let mut registrar = Registrar::new(role, TicketPort::new(Arc::clone(&ledger)));
    register(&mut registrar, &mut reader);
    reader.finish().unwrap();
    let mut secrets: Vec<String> = core_config
        .own_secrets()
        .iter()
        .map(|s| s.expose_secret().to_owned())
        .collect();
    secrets.extend(registrar.secret_values());
    let policy = ApprovalPolicy::new(
        vec![ApproverKey::from_hex(APPROVER).unwrap()],
        ApproverKey::from_hex(SERVER),
        1,
    );
    let services = Arc::new(
        Services::new(core_config, Arc::clone(&ledger), salt.as_bytes())
            .with_policy(policy)
            .with_scanner(OutboundScanner::new(secrets)),
    );
    let registered = registrar.finish(&services);
    let planners = registered.planners.clone();
    let mut handlers = registered.handlers;
    handlers.extend(ledger_tools::all(&services, registered.planners));
    let registry = Registry::new(role, handlers).unwrap();
    InProcess {
        gate: Gate::new(registry, Arc::clone(&services)),
        ledger,
        services,
        planners,
    }
}

/// Approves `id` as the one approver, through the policy (as a counted reaction would).
pub async fn approve(services: &Services, ledger: &dyn Ledger, id: &str) {
    let row = ledger.approval(id).await.unwrap().unwrap();
    services
        .policy
        .decide(
            ledger,
            &row,
            &ApproverKey::from_hex(APPROVER).unwrap(),
            Decision::Approve,
            "{\"evidence\":\"test\"}",
        )
        .await
        .unwrap();
}

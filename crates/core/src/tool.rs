//! Tool traits (read, ledger write, external write as distinct types), the services a tool may
//! use, and the registry that holds exactly one role's tools.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::approval_channel::ApprovalChannel;
use crate::approvals::ApprovalPolicy;
use crate::audit::Auditor;
use crate::catalog::{self, CatalogEntry, Role, ToolKind};
use crate::config::Config;
use crate::env::ExposeSecret;
use crate::error::{ErrorCode, ToolError};
use crate::input::{self, Validate};
use crate::ledger::{Ledger, LedgerError};
use crate::outbound::OutboundScanner;

/// Who is calling and when; `now` is the process clock's reading at the start of the call
/// (used for what the process records itself, such as KPI times; approval times are the
/// ledger's, see `ledger`).
#[derive(Debug, Clone)]
pub struct CallContext {
    pub role: Role,
    pub client: String,
    /// The session label the audit rows of this call carry (see `AuditRecord::session`).
    pub session: String,
    pub now: DateTime<Utc>,
}

/// What every tool of a process shares.
pub struct Services {
    pub config: Arc<Config>,
    pub ledger: Arc<dyn Ledger>,
    pub policy: ApprovalPolicy,
    pub scanner: OutboundScanner,
    pub auditor: Auditor,
    /// Where approval cards go; `None` only in-process (tests) — roles that hold
    /// `approval_request` refuse to start without one.
    pub channel: Option<Arc<dyn ApprovalChannel>>,
    /// The process clock behind `CallContext::now`; tests inject a skewed one.
    pub clock: ProcessClock,
}

/// A clock reading function: the system clock in the binary.
pub type ProcessClock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

impl Services {
    /// Services from a parsed config: approval policy, outbound scanner (with the config's own
    /// secrets only) and auditor (keyed by `audit_salt`); no approvers, no approval channel.
    pub fn new(config: Arc<Config>, ledger: Arc<dyn Ledger>, audit_salt: &[u8]) -> Self {
        Services {
            policy: ApprovalPolicy::new(Vec::new(), None, 1),
            scanner: OutboundScanner::new(
                config
                    .own_secrets()
                    .iter()
                    .map(|s| s.expose_secret().to_owned())
                    .collect(),
            ),
            auditor: Auditor::new(Arc::clone(&ledger), audit_salt),
            ledger,
            config,
            channel: None,
            clock: Arc::new(Utc::now),
        }
    }

    pub fn with_channel(mut self, channel: Arc<dyn ApprovalChannel>) -> Self {
        self.channel = Some(channel);
        self
    }

    /// The approvers and threshold this process stamps on the approvals it requests.
    pub fn with_policy(mut self, policy: ApprovalPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The outbound scanner with every secret this process holds (its configuration's, the
    /// approval channel's key, every domain's credentials).
    pub fn with_scanner(mut self, scanner: OutboundScanner) -> Self {
        self.scanner = scanner;
        self
    }

    /// Replaces the process clock (tests: a clock that runs fast or slow).
    pub fn with_clock(mut self, clock: ProcessClock) -> Self {
        self.clock = clock;
        self
    }
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("config", &self.config)
            .field("ledger", &self.ledger.backend())
            .finish_non_exhaustive()
    }
}

/// A ledger failure as the caller sees it; the detail goes to stderr only.
pub fn ledger_error(err: LedgerError) -> ToolError {
    match err {
        LedgerError::NotFound => ToolError::new(ErrorCode::NotFound),
        other => ToolError::new(ErrorCode::LedgerUnavailable).with_detail(other.to_string()),
    }
}

/// The answer of one call before it is wrapped in the envelope.
#[derive(Debug, Clone)]
pub struct Handled {
    pub result: Result<Value, ToolError>,
    pub dry_run: bool,
    pub approval_id: Option<String>,
    /// The approval's decisions and expiry (canonical JSON) when an external write read it.
    pub approval_trail: Option<String>,
}

impl Handled {
    pub fn of(result: Result<Value, ToolError>) -> Self {
        Handled {
            result,
            dry_run: false,
            approval_id: None,
            approval_trail: None,
        }
    }
}

/// The object-safe face of every tool, as the gate and the MCP handler see it.
#[async_trait]
pub trait ToolHandler: Send + Sync {
    fn entry(&self) -> &'static CatalogEntry;
    /// The kind this implementation was written as; must equal the catalog's.
    fn implemented_kind(&self) -> ToolKind;
    fn description(&self) -> &'static str;
    fn input_schema(&self) -> Map<String, Value>;
    async fn call(&self, ctx: &CallContext, arguments: Map<String, Value>) -> Handled;
}

/// A tool that only reads.
pub trait ReadTool: Send + Sync + 'static {
    type Args: DeserializeOwned + JsonSchema + Validate + Send;
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    fn run(
        &self,
        ctx: &CallContext,
        args: Self::Args,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send;
}

/// A tool that writes only to our own ledger (not behind the write switch).
pub trait LedgerWriteTool: Send + Sync + 'static {
    type Args: DeserializeOwned + JsonSchema + Validate + Send;
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    fn run(
        &self,
        ctx: &CallContext,
        args: Self::Args,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send;
}

/// The catalog row of one of our tool names; a name outside the catalog gets an empty row
/// that [`Registry::new`] refuses.
pub(crate) fn catalog_entry(name: &'static str) -> &'static CatalogEntry {
    // Names come from our own constants; the registry refuses a name outside the catalog
    // before any call, so this fallback row is never served.
    static MISSING: CatalogEntry = CatalogEntry {
        name: "",
        domain: catalog::Domain::Ledger,
        kind: ToolKind::Read,
        roles: &[],
    };
    catalog::lookup(name).unwrap_or(&MISSING)
}

/// Adapter: serves a [`ReadTool`].
#[derive(Debug)]
pub struct Read<T>(pub T);

/// Adapter: serves a [`LedgerWriteTool`].
#[derive(Debug)]
pub struct LedgerWrite<T>(pub T);

#[async_trait]
impl<T: ReadTool> ToolHandler for Read<T> {
    fn entry(&self) -> &'static CatalogEntry {
        catalog_entry(T::NAME)
    }
    fn implemented_kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn description(&self) -> &'static str {
        T::DESCRIPTION
    }
    fn input_schema(&self) -> Map<String, Value> {
        input::schema_of::<T::Args>()
    }
    async fn call(&self, ctx: &CallContext, arguments: Map<String, Value>) -> Handled {
        let result = match input::parse::<T::Args>(&arguments) {
            Ok(args) => self.0.run(ctx, args).await,
            Err(e) => Err(e),
        };
        Handled::of(result)
    }
}

#[async_trait]
impl<T: LedgerWriteTool> ToolHandler for LedgerWrite<T> {
    fn entry(&self) -> &'static CatalogEntry {
        catalog_entry(T::NAME)
    }
    fn implemented_kind(&self) -> ToolKind {
        ToolKind::LedgerWrite
    }
    fn description(&self) -> &'static str {
        T::DESCRIPTION
    }
    fn input_schema(&self) -> Map<String, Value> {
        input::schema_of::<T::Args>()
    }
    async fn call(&self, ctx: &CallContext, arguments: Map<String, Value>) -> Handled {
        let result = match input::parse::<T::Args>(&arguments) {
            Ok(args) => self.0.run(ctx, args).await,
            Err(e) => Err(e),
        };
        Handled::of(result)
    }
}

/// Why a registry could not be built: a programming error caught at start, never at call time.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("tool {0} is not in the catalog")]
    NotInCatalog(String),
    #[error("tool {0} is implemented as another kind than the catalog says")]
    KindMismatch(&'static str),
    #[error("tool {0} is registered twice")]
    Duplicate(&'static str),
}

/// Exactly the tools of one role, in catalog order. A tool outside the role is not in here.
pub struct Registry {
    role: Role,
    tools: Vec<Arc<dyn ToolHandler>>,
    by_name: BTreeMap<&'static str, usize>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("role", &self.role)
            .field("tools", &self.by_name.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Registry {
    /// Keeps the handlers the role holds; refuses handlers the catalog does not know or whose
    /// implementation kind differs from the catalog's.
    pub fn new(role: Role, handlers: Vec<Arc<dyn ToolHandler>>) -> Result<Self, RegistryError> {
        let mut kept: Vec<Arc<dyn ToolHandler>> = Vec::new();
        for handler in handlers {
            let entry = handler.entry();
            if entry.name.is_empty() || catalog::lookup(entry.name).is_none() {
                return Err(RegistryError::NotInCatalog(entry.name.to_owned()));
            }
            if handler.implemented_kind() != entry.kind {
                return Err(RegistryError::KindMismatch(entry.name));
            }
            if kept.iter().any(|h| h.entry().name == entry.name) {
                return Err(RegistryError::Duplicate(entry.name));
            }
            if entry.held_by(role) {
                kept.push(handler);
            }
        }
        let position = |name: &str| catalog::CATALOG.iter().position(|e| e.name == name);
        kept.sort_by_key(|h| position(h.entry().name));
        let by_name = kept
            .iter()
            .enumerate()
            .map(|(i, h)| (h.entry().name, i))
            .collect();
        Ok(Registry {
            role,
            tools: kept,
            by_name,
        })
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn tools(&self) -> &[Arc<dyn ToolHandler>] {
        &self.tools
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn ToolHandler>> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }
}

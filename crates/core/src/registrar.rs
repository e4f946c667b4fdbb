//! The registration contract between the server and a domain. A domain gets a [`Registrar`]:
//! it registers its read tools and its external writes (the write's approval planner comes in
//! the same step), declares every credential it loaded (each becomes an outbound-scan pattern),
//! and takes a [`TicketPort`] (open and answer SLA tickets; nothing else of the ledger). A
//! domain never sees the ledger, the approval channel, the approval policy or the Nostr key.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::catalog::Role;
use crate::env::{ExposeSecret, SecretString};
use crate::ledger::{Ledger, LedgerError, SupportChannel, Ticket};
use crate::pipeline::{ExternalWrite, ExternalWriteTool, WritePlanner};
use crate::rotation::RotatingSecret;
use crate::tool::{Read, ReadTool, Services, ToolHandler, catalog_entry};

/// The only part of the ledger a domain may use: SLA tickets (a customer conversation awaiting
/// its first response, and the time it got one).
#[derive(Clone)]
pub struct TicketPort {
    ledger: Arc<dyn Ledger>,
}

impl std::fmt::Debug for TicketPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketPort").finish_non_exhaustive()
    }
}

impl TicketPort {
    pub fn new(ledger: Arc<dyn Ledger>) -> Self {
        TicketPort { ledger }
    }

    /// Opens a ticket; opening one that exists changes nothing.
    pub async fn open(
        &self,
        channel: SupportChannel,
        ticket_ref: &str,
        opened_at: DateTime<Utc>,
    ) -> Result<(), LedgerError> {
        self.ledger
            .open_ticket(&Ticket {
                channel,
                ticket_ref: ticket_ref.to_owned(),
                opened_at,
                first_response_at: None,
            })
            .await
    }

    /// Closes a ticket by its first response (a later response keeps the first time).
    pub async fn answered(
        &self,
        channel: SupportChannel,
        ticket_ref: &str,
        at: DateTime<Utc>,
    ) -> Result<(), LedgerError> {
        self.ledger
            .mark_first_response(channel, ticket_ref, at)
            .await
    }
}

/// An external write waiting for the process's services (built after every domain has
/// declared its secrets, so the outbound scan knows them all).
type PendingWrite =
    Box<dyn FnOnce(&Arc<Services>, Role) -> (Arc<dyn ToolHandler>, Option<Arc<dyn WritePlanner>>)>;

/// What domains register into, for one role.
pub struct Registrar {
    role: Role,
    tickets: TicketPort,
    reads: Vec<Arc<dyn ToolHandler>>,
    writes: Vec<PendingWrite>,
    secrets: Vec<SecretString>,
    rotating: Vec<Arc<RotatingSecret>>,
}

impl std::fmt::Debug for Registrar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registrar")
            .field("role", &self.role)
            .field("reads", &self.reads.len())
            .field("writes", &self.writes.len())
            .field("secrets", &self.secrets.len())
            .field("rotating", &self.rotating.len())
            .finish()
    }
}

/// Everything the domains registered, with the process's services attached.
pub struct Registered {
    pub handlers: Vec<Arc<dyn ToolHandler>>,
    /// The external writes this role holds: `approval_request` checks arguments with them.
    pub planners: Vec<Arc<dyn WritePlanner>>,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("handlers", &self.handlers.len())
            .field("planners", &self.planners.len())
            .finish()
    }
}

impl Registrar {
    pub fn new(role: Role, tickets: TicketPort) -> Self {
        Registrar {
            role,
            tickets,
            reads: Vec::new(),
            writes: Vec::new(),
            secrets: Vec::new(),
            rotating: Vec::new(),
        }
    }

    /// The role being served (the registry keeps only its tools whatever is registered).
    pub fn role(&self) -> Role {
        self.role
    }

    /// The SLA tickets port.
    pub fn tickets(&self) -> TicketPort {
        self.tickets.clone()
    }

    pub fn read<T: ReadTool>(&mut self, tool: T) {
        self.reads.push(Arc::new(Read(tool)));
    }

    /// An external write and, when this role holds it, its planner for `approval_request`.
    pub fn write<T: ExternalWriteTool>(&mut self, tool: T) {
        self.writes.push(Box::new(move |services, role| {
            let write = Arc::new(ExternalWrite::new(tool, Arc::clone(services)));
            let planner = catalog_entry(T::NAME)
                .held_by(role)
                .then(|| Arc::clone(&write) as Arc<dyn WritePlanner>);
            (write as Arc<dyn ToolHandler>, planner)
        }));
    }

    /// A credential the domain loaded (from a variable or a file): the outbound scan refuses
    /// any write carrying it.
    pub fn secret(&mut self, secret: &SecretString) {
        self.secrets.push(secret.clone());
    }

    /// A credential re-read when its file changes: the outbound scan refuses every value it
    /// takes, and looks at its file before each scan (from [`Registrar::finish`] on).
    pub fn rotating_secret(&mut self, secret: &Arc<RotatingSecret>) {
        self.rotating.push(Arc::clone(secret));
    }

    /// The credentials declared so far, for the outbound scanner.
    pub fn secret_values(&self) -> Vec<String> {
        self.secrets
            .iter()
            .map(|s| s.expose_secret().to_owned())
            .chain(self.rotating.iter().filter_map(|s| s.value_now()))
            .collect()
    }

    /// Attaches the services to every registered tool, and the outbound scanner to every
    /// rotating credential.
    pub fn finish(self, services: &Arc<Services>) -> Registered {
        for secret in &self.rotating {
            services.scanner.follow(secret);
        }
        let mut handlers = self.reads;
        let mut planners = Vec::new();
        for pending in self.writes {
            let (handler, planner) = pending(services, self.role);
            handlers.push(handler);
            planners.extend(planner);
        }
        Registered { handlers, planners }
    }
}

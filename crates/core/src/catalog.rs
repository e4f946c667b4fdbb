//! The role table of ARCHITECTURE.md: 31 tools, six roles, declared once.

use serde::Serialize;

/// An agent role; each runs as its own process and sees only its column of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Lead,
    Reviews,
    Insight,
    Community,
    Mail,
    Ops,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Lead,
        Role::Reviews,
        Role::Insight,
        Role::Community,
        Role::Mail,
        Role::Ops,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Lead => "lead",
            Role::Reviews => "reviews",
            Role::Insight => "insight",
            Role::Community => "community",
            Role::Mail => "mail",
            Role::Ops => "ops",
        }
    }

    /// Parses a role name exactly (no case folding: a role is configuration, not prose).
    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which upstream (or internal store) a tool talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    AppStoreConnect,
    Discourse,
    Mailbox,
    Kubernetes,
    Ledger,
    Approvals,
}

impl Domain {
    /// True when the domain's tools call a service outside this process and its ledger.
    pub fn is_upstream(self) -> bool {
        matches!(
            self,
            Domain::AppStoreConnect | Domain::Discourse | Domain::Mailbox | Domain::Kubernetes
        )
    }
}

/// What a tool does to the world; the pipeline a call takes is chosen by this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    /// Writes only to our own ledger (KPI, CSAT, approval requests): not behind the write switch.
    LedgerWrite,
    /// Writes to the outside world: dry-run switch, outbound scan and a consumed approval.
    ExternalWrite,
}

/// One row of the role table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogEntry {
    pub name: &'static str,
    pub domain: Domain,
    pub kind: ToolKind,
    pub roles: &'static [Role],
}

impl CatalogEntry {
    pub fn held_by(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    /// Capability labels shown by `care-mcp tools`.
    pub fn labels(&self) -> Vec<&'static str> {
        let mut labels = vec![match self.kind {
            ToolKind::Read => "read",
            ToolKind::LedgerWrite => "ledger-write",
            ToolKind::ExternalWrite => "external-write",
        }];
        if self.domain.is_upstream() {
            labels.push("upstream");
        }
        if self.kind == ToolKind::ExternalWrite {
            labels.push("approval-gated");
        }
        labels
    }
}

/// A tool's capability labels, comma-separated, as the audit records them (empty for a name
/// outside the catalog).
pub fn capability(tool: &str) -> String {
    lookup(tool).map_or_else(String::new, |e| e.labels().join(","))
}

use Domain::*;
use Role::*;
use ToolKind::*;

const ASC_READ: &[Role] = &[Lead, Reviews, Insight];
const ASC_LEAD_REVIEWS: &[Role] = &[Lead, Reviews];

/// The whole table of ARCHITECTURE.md, in its order.
pub const CATALOG: &[CatalogEntry] = &[
    entry("asc_apps_list", AppStoreConnect, Read, ASC_READ),
    entry("asc_reviews_list", AppStoreConnect, Read, ASC_READ),
    entry("asc_review_get", AppStoreConnect, Read, ASC_READ),
    entry(
        "asc_review_response_get",
        AppStoreConnect,
        Read,
        ASC_LEAD_REVIEWS,
    ),
    entry("asc_ratings_summary", AppStoreConnect, Read, ASC_READ),
    entry(
        "asc_reviews_unanswered",
        AppStoreConnect,
        Read,
        ASC_LEAD_REVIEWS,
    ),
    entry(
        "asc_review_reply",
        AppStoreConnect,
        ExternalWrite,
        &[Reviews],
    ),
    entry(
        "discourse_latest_topics",
        Discourse,
        Read,
        &[Lead, Insight, Community],
    ),
    entry("discourse_topic_get", Discourse, Read, &[Lead, Community]),
    entry(
        "discourse_search",
        Discourse,
        Read,
        &[Lead, Reviews, Insight, Community],
    ),
    entry("discourse_categories", Discourse, Read, &[Lead, Community]),
    entry("discourse_post_get", Discourse, Read, &[Lead, Community]),
    entry(
        "discourse_post_reply",
        Discourse,
        ExternalWrite,
        &[Community],
    ),
    entry("mail_list", Domain::Mailbox, Read, &[Lead, Role::Mail]),
    entry("mail_read", Domain::Mailbox, Read, &[Lead, Role::Mail]),
    entry("mail_search", Domain::Mailbox, Read, &[Lead, Role::Mail]),
    entry("mail_thread", Domain::Mailbox, Read, &[Lead, Role::Mail]),
    entry("mail_send", Domain::Mailbox, ExternalWrite, &[Role::Mail]),
    entry("cluster_overview", Kubernetes, Read, &[Lead, Ops]),
    entry("cluster_workloads", Kubernetes, Read, &[Lead, Ops]),
    entry("cluster_pods", Kubernetes, Read, &[Lead, Ops]),
    entry("cluster_events", Kubernetes, Read, &[Lead, Ops]),
    entry(
        "cluster_restart_workload",
        Kubernetes,
        ExternalWrite,
        &[Ops],
    ),
    entry(
        "kpi_record",
        Ledger,
        LedgerWrite,
        &[Lead, Reviews, Insight, Community, Role::Mail, Ops],
    ),
    entry("kpi_report", Ledger, Read, &[Lead, Reviews, Insight, Ops]),
    entry(
        "csat_record",
        Ledger,
        LedgerWrite,
        &[Lead, Reviews, Insight, Community, Role::Mail],
    ),
    entry("csat_summary", Ledger, Read, &[Lead, Reviews, Insight]),
    entry(
        "sla_status",
        Ledger,
        Read,
        &[Lead, Reviews, Insight, Community, Role::Mail],
    ),
    entry(
        "approval_request",
        Approvals,
        LedgerWrite,
        &[Reviews, Community, Role::Mail, Ops],
    ),
    entry(
        "approval_status",
        Approvals,
        Read,
        &[Reviews, Community, Role::Mail, Ops],
    ),
    entry("approval_list", Approvals, Read, &[Lead, Insight]),
];

const fn entry(
    name: &'static str,
    domain: Domain,
    kind: ToolKind,
    roles: &'static [Role],
) -> CatalogEntry {
    CatalogEntry {
        name,
        domain,
        kind,
        roles,
    }
}

/// The catalog row of `name`, if the name exists anywhere.
pub fn lookup(name: &str) -> Option<&'static CatalogEntry> {
    CATALOG.iter().find(|e| e.name == name)
}

/// The rows a role holds, in catalog order.
pub fn tools_of(role: Role) -> impl Iterator<Item = &'static CatalogEntry> {
    CATALOG.iter().filter(move |e| e.held_by(role))
}

/// The one external write a writing role holds (lead and insight hold none).
pub fn external_write_of(role: Role) -> Option<&'static CatalogEntry> {
    tools_of(role).find(|e| e.kind == ExternalWrite)
}

/// True when some tool of `role` belongs to `domain`: a domain no tool needs is never built.
pub fn role_needs(role: Role, domain: Domain) -> bool {
    tools_of(role).any(|e| e.domain == domain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn counts_per_role_match_the_architecture() {
        let counts: Vec<(Role, usize)> = Role::ALL
            .iter()
            .map(|r| (*r, tools_of(*r).count()))
            .collect();
        assert_eq!(
            counts,
            vec![
                (Lead, 25),
                (Reviews, 15),
                (Insight, 12),
                (Community, 11),
                (Role::Mail, 10),
                (Ops, 9)
            ]
        );
    }

    #[test]
    fn names_are_distinct_and_31() {
        let names: HashSet<_> = CATALOG.iter().map(|e| e.name).collect();
        assert_eq!(CATALOG.len(), 31);
        assert_eq!(names.len(), 31);
    }

    #[test]
    fn one_external_write_per_writing_role_and_none_for_readers() {
        for role in Role::ALL {
            let writes = tools_of(role).filter(|e| e.kind == ExternalWrite).count();
            let expected = usize::from(!matches!(role, Lead | Insight));
            assert_eq!(writes, expected, "{role}");
        }
        let writes: Vec<_> = CATALOG
            .iter()
            .filter(|e| e.kind == ExternalWrite)
            .map(|e| e.name)
            .collect();
        assert_eq!(
            writes,
            [
                "asc_review_reply",
                "discourse_post_reply",
                "mail_send",
                "cluster_restart_workload"
            ]
        );
    }

    #[test]
    fn roles_parse_exactly() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("Lead"), None);
        assert_eq!(Role::parse(""), None);
        assert_eq!(Role::parse("admin"), None);
    }
}

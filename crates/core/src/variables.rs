//! Every environment variable a role's configuration reads, declared once: who reads it (the
//! scope: every role, the roles that request approvals, the roles holding a domain's or a
//! tool's tools), whether its absence refuses the start, and whether it names a secret file.
//!
//! The readers ([`crate::config`], the Nostr settings, each domain's `config.rs`) read through
//! [`crate::env::EnvReader`], which records every name asked for; startup refuses to serve when
//! a role read a name outside [`of_role`] (a bug caught by every test that starts a role). The
//! deploy tests check each role's Deployment against [`of_role`], so neither can drift.

use crate::catalog::{self, Domain, Role};

/// Which roles read a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every role.
    Every,
    /// The roles that request approvals (hold an external write): the approval channel.
    Approving,
    /// The roles holding a tool of one of these domains.
    Domains(&'static [Domain]),
    /// The roles holding this tool.
    Tool(&'static str),
}

/// What happens when a variable is unset, for a role in its scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The start is refused (an inline secret is also satisfied by its `_FILE` twin).
    Required,
    /// A default applies, or the variable only matters in some setups.
    Optional,
    /// Set by the platform (the kubelet, the login), never by an operator's manifest.
    Platform,
}

/// How the value is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Plain configuration: a ConfigMap value in a cluster.
    Plain,
    /// A secret given inline. Deployments use the `_FILE` twin instead.
    InlineSecret,
    /// The path of a file holding a secret (a mounted Secret in a cluster).
    SecretFile,
}

/// One variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variable {
    pub name: &'static str,
    pub scope: Scope,
    pub need: Need,
    pub form: Form,
}

const fn var(name: &'static str, scope: Scope, need: Need, form: Form) -> Variable {
    Variable {
        name,
        scope,
        need,
        form,
    }
}

use Form::{InlineSecret, Plain, SecretFile};
use Need::{Optional, Platform, Required};
use Scope::{Approving, Domains, Every, Tool};

const ASC: Scope = Domains(&[Domain::AppStoreConnect]);
const FORUM: Scope = Domains(&[Domain::Discourse]);
const KUBE: Scope = Domains(&[Domain::Kubernetes]);
const MAIL: Scope = Domains(&[Domain::Mailbox]);
/// The domains whose replies pass the locale gate.
const REPLIES: Scope = Domains(&[Domain::AppStoreConnect, Domain::Discourse, Domain::Mailbox]);

/// Every variable a role process reads, in the README's order.
pub const ALL: &[Variable] = &[
    var("CARE_ROLE", Every, Optional, Plain),
    var("DATABASE_URL", Every, Optional, Plain),
    var("CARE_DATABASE_PASSWORD_FILE", Every, Optional, SecretFile),
    var("CARE_WRITE_ENABLED", Every, Optional, Plain),
    var("CARE_APPROVERS", Every, Optional, Plain),
    var("CARE_APPROVAL_THRESHOLD", Every, Optional, Plain),
    var("CARE_NOSTR_SECRET_KEY", Approving, Required, InlineSecret),
    var(
        "CARE_NOSTR_SECRET_KEY_FILE",
        Approving,
        Optional,
        SecretFile,
    ),
    var("CARE_NOSTR_RELAYS", Approving, Required, Plain),
    var("CARE_APPROVAL_CHANNEL", Approving, Required, Plain),
    var("CARE_ASC_ISSUER_ID", ASC, Required, Plain),
    var("CARE_ASC_KEY_ID", ASC, Required, Plain),
    // Instead of CARE_ASC_KEY_ID (exactly one): re-read when it changes, as a rotated key
    // comes with a new id.
    var("CARE_ASC_KEY_ID_FILE", ASC, Optional, SecretFile),
    var("CARE_ASC_PRIVATE_KEY_FILE", ASC, Required, SecretFile),
    var("CARE_ASC_APP_IDS", ASC, Required, Plain),
    var("CARE_ASC_BASE_URL", ASC, Optional, Plain),
    var("CARE_DISCOURSE_URL", FORUM, Required, Plain),
    var("CARE_DISCOURSE_API_KEY_FILE", FORUM, Required, SecretFile),
    var("CARE_DISCOURSE_API_USERNAME", FORUM, Required, Plain),
    var("CARE_DISCOURSE_CATEGORY_IDS", FORUM, Optional, Plain),
    var("CARE_LOCALES", REPLIES, Optional, Plain),
    var("CARE_KUBE_NAMESPACES", KUBE, Required, Plain),
    var("CARE_CLUSTER_WRITE", KUBE, Optional, Plain),
    var("CARE_KUBE_API_URL", KUBE, Optional, Plain),
    var("CARE_KUBE_TOKEN_FILE", KUBE, Optional, SecretFile),
    var("CARE_KUBE_CA_FILE", KUBE, Optional, Plain),
    var("KUBECONFIG", KUBE, Optional, SecretFile),
    var("KUBERNETES_SERVICE_HOST", KUBE, Platform, Plain),
    var("KUBERNETES_SERVICE_PORT", KUBE, Platform, Plain),
    var("CARE_IMAP_URL", MAIL, Required, Plain),
    var("CARE_SMTP_URL", Tool("mail_send"), Required, Plain),
    var("CARE_MAIL_USERNAME", MAIL, Required, Plain),
    var("CARE_MAIL_PASSWORD_FILE", MAIL, Required, SecretFile),
    var("CARE_MAIL_FROM", MAIL, Required, Plain),
    var("CARE_MAIL_ALLOWED_RECIPIENT_DOMAINS", MAIL, Optional, Plain),
    var("CARE_MAIL_SENT_MAILBOX", MAIL, Optional, Plain),
    var("CARE_MAIL_CONNECT_TIMEOUT_SECS", MAIL, Optional, Plain),
    var("CARE_MAIL_COMMAND_TIMEOUT_SECS", MAIL, Optional, Plain),
    var("CARE_MAIL_IDLE_SECS", MAIL, Optional, Plain),
    var("CARE_AUDIT_SALT", Every, Optional, InlineSecret),
    var("CARE_AUDIT_SALT_FILE", Every, Optional, SecretFile),
    var("CARE_CLIENT_ID", Every, Optional, Plain),
    var("CARE_SLA_TARGETS", Every, Optional, Plain),
    var("XDG_STATE_HOME", Every, Platform, Plain),
    var("HOME", Every, Platform, Plain),
];

impl Scope {
    /// Whether `role` reads variables of this scope.
    pub fn includes(self, role: Role) -> bool {
        match self {
            Every => true,
            Approving => catalog::external_write_of(role).is_some(),
            Domains(domains) => domains.iter().any(|d| catalog::role_needs(role, *d)),
            Tool(name) => catalog::lookup(name).is_some_and(|e| e.held_by(role)),
        }
    }
}

/// The variables `role` reads, in [`ALL`]'s order.
pub fn of_role(role: Role) -> impl Iterator<Item = &'static Variable> {
    ALL.iter().filter(move |v| v.scope.includes(role))
}

/// The declaration of `name`, if any.
pub fn lookup(name: &str) -> Option<&'static Variable> {
    ALL.iter().find(|v| v.name == name)
}

/// The names in `read` that `role` should not read: each a bug in a reader or in [`ALL`].
pub fn undeclared<'a>(role: Role, read: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    // The role's scopes are resolved once (each resolution scans the tool catalog), not once
    // per name read: every start runs this check.
    let declared: Vec<&str> = of_role(role).map(|v| v.name).collect();
    read.into_iter()
        .filter(|name| !declared.contains(name))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_secret_files_end_in_file() {
        for (i, v) in ALL.iter().enumerate() {
            assert!(
                !ALL[..i].iter().any(|w| w.name == v.name),
                "{} twice",
                v.name
            );
            if v.form == SecretFile && v.name != "KUBECONFIG" {
                assert!(v.name.ends_with("_FILE"), "{}", v.name);
            }
        }
    }

    #[test]
    fn roles_read_only_their_domains() {
        let names = |role| of_role(role).map(|v| v.name).collect::<Vec<_>>();
        assert!(names(Role::Mail).contains(&"CARE_SMTP_URL"));
        assert!(!names(Role::Lead).contains(&"CARE_SMTP_URL"));
        assert!(names(Role::Lead).contains(&"CARE_IMAP_URL"));
        assert!(!names(Role::Lead).contains(&"CARE_NOSTR_SECRET_KEY"));
        assert!(!names(Role::Insight).contains(&"CARE_NOSTR_RELAYS"));
        assert!(names(Role::Ops).contains(&"CARE_KUBE_NAMESPACES"));
        assert!(!names(Role::Ops).contains(&"CARE_LOCALES"));
        assert!(!names(Role::Community).contains(&"CARE_ASC_KEY_ID"));
        assert_eq!(
            undeclared(Role::Reviews, ["CARE_ASC_KEY_ID", "CARE_KUBE_NAMESPACES"]),
            ["CARE_KUBE_NAMESPACES"]
        );
    }
}

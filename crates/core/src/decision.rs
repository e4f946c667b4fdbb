//! Why a call was allowed or refused, for its audit row: each check notes the rule it passed
//! in a task-local trace the gate opens around the handler ([`traced`]); the rule that refused
//! is the one a check names with [`refused`], or else the one its error code stands for.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{ErrorCode, ToolError};

/// A rule a call is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The tool belongs to the caller's role.
    RoleGate,
    /// The arguments parse and validate.
    Input,
    /// The target is inside the configured allowlist (app, category, recipient, namespace).
    Scope,
    /// The reply's locale is allowed and matches its text.
    Locale,
    /// No secret in what would leave the process.
    OutboundScan,
    /// `CARE_WRITE_ENABLED` and the tool's own switch are on.
    WriteSwitch,
    /// An approved approval for exactly this call was consumed.
    Approval,
    /// The HTTP client's bearer token is known and live.
    ClientAuth,
    /// The HTTP client is under its call ceiling.
    RateCeiling,
    /// The HTTP session belongs to the calling client.
    SessionOwner,
    /// The server takes calls (is not stopping).
    Serving,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::RoleGate => "role_gate",
            Rule::Input => "input",
            Rule::Scope => "scope",
            Rule::Locale => "locale",
            Rule::OutboundScan => "outbound_scan",
            Rule::WriteSwitch => "write_switch",
            Rule::Approval => "approval",
            Rule::ClientAuth => "client_auth",
            Rule::RateCeiling => "rate_ceiling",
            Rule::SessionOwner => "session_owner",
            Rule::Serving => "serving",
        }
    }

    /// The rule an error code is a refusal by; `None` for failures no rule made (not found,
    /// upstream or ledger trouble, an internal error).
    pub fn refusing(code: ErrorCode) -> Option<Rule> {
        Some(match code {
            ErrorCode::UnknownTool => Rule::RoleGate,
            ErrorCode::InvalidInput => Rule::Input,
            ErrorCode::ScopeDenied => Rule::Scope,
            ErrorCode::LocaleRejected => Rule::Locale,
            ErrorCode::OutboundBlocked => Rule::OutboundScan,
            ErrorCode::WriteDisabled => Rule::WriteSwitch,
            ErrorCode::ApprovalRequired
            | ErrorCode::ApprovalRejected
            | ErrorCode::ApprovalExpired
            | ErrorCode::ApprovalConsumed
            | ErrorCode::ApprovalMismatch => Rule::Approval,
            ErrorCode::RateLimited => Rule::RateCeiling,
            ErrorCode::ServerStopping => Rule::Serving,
            _ => return None,
        })
    }
}

#[derive(Debug, Default)]
struct Trace {
    passed: Vec<Rule>,
    /// Set by a check that knows more than its code (`outbound_scan:<pattern class>`).
    refused_by: Option<String>,
}

tokio::task_local! {
    static TRACE: Arc<Mutex<Trace>>;
}

/// Notes that the running call passed `rule` (once; outside a traced call, nothing).
pub fn passed(rule: Rule) {
    let _ = TRACE.try_with(|trace| {
        let mut trace = trace.lock().unwrap_or_else(PoisonError::into_inner);
        if !trace.passed.contains(&rule) {
            trace.passed.push(rule);
        }
    });
}

/// The rules the running call has passed so far (for a record written mid-call).
pub fn passed_so_far() -> Vec<String> {
    TRACE
        .try_with(|trace| {
            let trace = trace.lock().unwrap_or_else(PoisonError::into_inner);
            trace.passed.iter().map(|r| r.as_str().to_owned()).collect()
        })
        .unwrap_or_default()
}

/// Names the rule that is about to refuse the running call, more precisely than its code
/// does (`outbound_scan:aws_access_key`). Never a value: a fixed label.
pub fn refused(label: String) {
    let _ = TRACE.try_with(|trace| {
        trace
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .refused_by = Some(label);
    });
}

/// What a call's trace says, for the audit row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Why {
    /// `allow`, `deny` or `error`.
    pub decision: &'static str,
    pub rules: Vec<String>,
    pub denied_by: Option<String>,
}

impl Why {
    /// A request refused before any tool ran (the HTTP guard): the rules it passed, and the
    /// one that refused it (`None`: a failure, not a refusal).
    pub fn before_the_gate(passed: &[Rule], denied_by: Option<Rule>) -> Why {
        Why {
            decision: if denied_by.is_some() { "deny" } else { "error" },
            rules: passed.iter().map(|r| r.as_str().to_owned()).collect(),
            denied_by: denied_by.map(|r| r.as_str().to_owned()),
        }
    }
}

/// Runs `call` with a trace that starts with `first` passed.
pub async fn traced<F: Future>(first: Rule, call: F) -> (F::Output, TraceResult) {
    let trace = Arc::new(Mutex::new(Trace {
        passed: vec![first],
        refused_by: None,
    }));
    let out = TRACE.scope(Arc::clone(&trace), call).await;
    let trace = std::mem::take(&mut *trace.lock().unwrap_or_else(PoisonError::into_inner));
    (out, TraceResult(trace))
}

/// A finished trace.
#[derive(Debug, Default)]
pub struct TraceResult(Trace);

impl TraceResult {
    /// A trace of calls refused before anything ran: only `passed`.
    pub fn of(passed: &[Rule]) -> Self {
        TraceResult(Trace {
            passed: passed.to_vec(),
            refused_by: None,
        })
    }

    /// The decision for a call that answered `result`.
    pub fn why(self, error: Option<&ToolError>) -> Why {
        let rules = self
            .0
            .passed
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect();
        let Some(error) = error else {
            return Why {
                decision: "allow",
                rules,
                denied_by: None,
            };
        };
        // A WRITE_FAILED happened after every rule passed: the upstream failed, no rule.
        match Rule::refusing(error.code) {
            Some(rule) => Why {
                decision: "deny",
                rules,
                denied_by: Some(
                    self.0
                        .refused_by
                        .filter(|label| label.starts_with(rule.as_str()))
                        .unwrap_or_else(|| rule.as_str().to_owned()),
                ),
            },
            None => Why {
                decision: "error",
                rules,
                denied_by: None,
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_trace_keeps_the_rules_in_order_once() {
        let ((), trace) = traced(Rule::RoleGate, async {
            passed(Rule::Input);
            passed(Rule::Scope);
            passed(Rule::Input);
        })
        .await;
        let why = trace.why(None);
        assert_eq!(why.decision, "allow");
        assert_eq!(why.rules, ["role_gate", "input", "scope"]);
        assert_eq!(why.denied_by, None);
    }

    #[tokio::test]
    async fn the_refusing_rule_comes_from_the_check_or_the_code() {
        let ((), trace) = traced(Rule::RoleGate, async {
            passed(Rule::Input);
            refused("outbound_scan:aws_access_key".into());
        })
        .await;
        let why = trace.why(Some(&ToolError::new(ErrorCode::OutboundBlocked)));
        assert_eq!(why.decision, "deny");
        assert_eq!(
            why.denied_by.as_deref(),
            Some("outbound_scan:aws_access_key")
        );

        let ((), trace) = traced(Rule::RoleGate, async {}).await;
        let why = trace.why(Some(&ToolError::new(ErrorCode::ApprovalConsumed)));
        assert_eq!(why.denied_by.as_deref(), Some("approval"));

        let ((), trace) = traced(Rule::RoleGate, async {}).await;
        let why = trace.why(Some(&ToolError::new(ErrorCode::UpstreamUnavailable)));
        assert_eq!((why.decision, why.denied_by), ("error", None));
    }

    #[tokio::test]
    async fn a_label_of_another_rule_is_not_taken() {
        let ((), trace) = traced(Rule::RoleGate, async {
            refused("outbound_scan:jwt".into());
        })
        .await;
        let why = trace.why(Some(&ToolError::new(ErrorCode::ScopeDenied)));
        assert_eq!(why.denied_by.as_deref(), Some("scope"));
    }

    #[test]
    fn outside_a_trace_nothing_is_kept() {
        passed(Rule::Scope);
        refused("scope".into());
        assert!(passed_so_far().is_empty());
    }

    #[test]
    fn a_refusal_before_the_gate_names_its_rule_or_none() {
        let why = Why::before_the_gate(&[Rule::ClientAuth], Some(Rule::RoleGate));
        assert_eq!(why.decision, "deny");
        assert_eq!(why.rules, ["client_auth"]);
        assert_eq!(why.denied_by.as_deref(), Some("role_gate"));
        let why = Why::before_the_gate(&[], None);
        assert_eq!((why.decision, why.denied_by), ("error", None));
    }
}

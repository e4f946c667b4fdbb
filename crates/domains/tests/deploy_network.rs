//! The NetworkPolicies of `deploy/` (base, and the overlay as rendered): for each role, the
//! policies whose podSelector picks its pods add up to exactly the egress its tools use —
//! derived here from the catalog: each upstream domain it holds a tool of (SMTP only with an
//! external mail write), the relay when it requests approvals, Postgres and DNS for all — each
//! on that upstream's ports only, no ingress at all, and a default deny under it all.
//!
//! The convention the test reads (NetworkPolicy rules have no names): one policy per
//! destination, labelled `care-mcp/egress: <destination>`, its podSelector naming the roles.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod deploy;

use std::collections::{BTreeMap, BTreeSet};

use care_core::catalog::{self, Domain, Role, ToolKind};
use deploy::{of_kind, strings};
use serde_json::{Value, json};

const EGRESS_LABEL: &str = "care-mcp/egress";

/// The destinations `role` needs, from the catalog.
fn expected(role: Role) -> BTreeSet<&'static str> {
    let mut out = BTreeSet::from(["dns", "postgres"]);
    for (domain, destination) in [
        (Domain::AppStoreConnect, "app-store-connect"),
        (Domain::Discourse, "discourse"),
        (Domain::Mailbox, "imap"),
        (Domain::Kubernetes, "kubernetes-api"),
    ] {
        if catalog::role_needs(role, domain) {
            out.insert(destination);
        }
    }
    if catalog::tools_of(role)
        .any(|e| e.domain == Domain::Mailbox && e.kind == ToolKind::ExternalWrite)
    {
        out.insert("smtp");
    }
    if catalog::external_write_of(role).is_some() {
        out.insert("nostr-relay");
    }
    out
}

/// The ports a destination may be reached on (what its configuration accepts).
fn allowed_ports(destination: &str) -> Option<&'static [(&'static str, u64)]> {
    Some(match destination {
        "dns" => &[("UDP", 53), ("TCP", 53)],
        "postgres" => &[("TCP", 5432)],
        "app-store-connect" | "discourse" | "nostr-relay" => &[("TCP", 443)],
        "imap" => &[("TCP", 993), ("TCP", 143)],
        "smtp" => &[("TCP", 465), ("TCP", 587)],
        "kubernetes-api" => &[("TCP", 443), ("TCP", 6443)],
        _ => return None,
    })
}

/// Whether a label selector picks a pod with `labels`.
fn selects(selector: &Value, labels: &BTreeMap<&str, &str>) -> bool {
    let exact = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k.as_str()).copied() == v.as_str());
    let expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let value = labels.get(e["key"].as_str().unwrap_or_default()).copied();
            let values = strings(&e["values"]);
            match e["operator"].as_str() {
                Some("In") => value.is_some_and(|v| values.iter().any(|x| x == v)),
                Some("NotIn") => !value.is_some_and(|v| values.iter().any(|x| x == v)),
                Some("Exists") => value.is_some(),
                Some("DoesNotExist") => value.is_none(),
                _ => false,
            }
        });
    exact && expressions
}

fn pod_labels(role: Role) -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("app.kubernetes.io/name", "care-mcp"),
        ("app.kubernetes.io/component", role.as_str()),
    ])
}

/// Problems with one egress rule of a policy for `destination`.
fn rule_problems(policy: &str, destination: &str, rule: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let to = rule["to"].as_array().cloned().unwrap_or_default();
    let ports = rule["ports"].as_array().cloned().unwrap_or_default();
    if to.is_empty() {
        problems.push(format!(
            "{policy}: a rule without `to` allows every destination"
        ));
    }
    if ports.is_empty() {
        problems.push(format!(
            "{policy}: a rule without `ports` allows every port"
        ));
    }
    let allowed = allowed_ports(destination).unwrap_or_default();
    for port in &ports {
        let protocol = port["protocol"].as_str().unwrap_or("TCP");
        let number = port["port"].as_u64().unwrap_or(0);
        if !allowed.contains(&(protocol, number)) || !port["endPort"].is_null() {
            problems.push(format!(
                "{policy}: {protocol}/{number} is not a port of {destination}"
            ));
        }
    }
    for peer in &to {
        let ip = &peer["ipBlock"];
        let dns_peer = peer["namespaceSelector"]["matchLabels"]
            == json!({"kubernetes.io/metadata.name": "kube-system"})
            && peer["podSelector"]["matchLabels"] == json!({"k8s-app": "kube-dns"});
        let postgres_peer = peer["namespaceSelector"].is_null()
            && peer["podSelector"]["matchLabels"]
                == json!({"app.kubernetes.io/name": "care-mcp-postgres"});
        let ok = match destination {
            "dns" => dns_peer,
            // The example StatefulSet by label, or a managed database by address.
            "postgres" => postgres_peer || ip.is_object(),
            _ => {
                ip.is_object()
                    && peer["podSelector"].is_null()
                    && peer["namespaceSelector"].is_null()
            }
        };
        if !ok {
            problems.push(format!(
                "{policy}: {peer} is not a {destination} destination"
            ));
        }
        if let Some(cidr) = ip["cidr"].as_str()
            && cidr.ends_with("/0")
        {
            problems.push(format!("{policy}: {cidr} is every address"));
        }
    }
    problems
}

/// Every disagreement between the policies in `docs` and what each role needs.
fn network_problems(docs: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    let policies: Vec<&Value> = of_kind(docs, "NetworkPolicy").collect();
    for role in Role::ALL {
        let labels = pod_labels(role);
        let mut reached = BTreeSet::new();
        let mut denied_both = false;
        for policy in policies
            .iter()
            .filter(|p| selects(&p["spec"]["podSelector"], &labels))
        {
            let name = policy["metadata"]["name"].as_str().unwrap_or_default();
            let types = strings(&policy["spec"]["policyTypes"]);
            if types.iter().any(|t| t == "Ingress") && types.iter().any(|t| t == "Egress") {
                denied_both = true;
            }
            if !policy["spec"]["ingress"].is_null() {
                problems.push(format!(
                    "{name}: allows ingress to {role}, which listens on nothing"
                ));
            }
            let rules = policy["spec"]["egress"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if rules.is_empty() {
                continue;
            }
            let Some(destination) = policy["metadata"]["labels"][EGRESS_LABEL].as_str() else {
                problems.push(format!(
                    "{name}: egress rules without a {EGRESS_LABEL} label"
                ));
                continue;
            };
            if allowed_ports(destination).is_none() {
                problems.push(format!(
                    "{name}: {destination} is no destination of care-mcp"
                ));
                continue;
            }
            reached.insert(destination.to_owned());
            for rule in &rules {
                problems.extend(rule_problems(name, destination, rule));
            }
        }
        if !denied_both {
            problems.push(format!(
                "{role}: no policy isolates it for ingress and egress"
            ));
        }
        let want: BTreeSet<String> = expected(role).into_iter().map(str::to_owned).collect();
        for missing in want.difference(&reached) {
            problems.push(format!(
                "{role}: cannot reach {missing}, which its tools use"
            ));
        }
        for extra in reached.difference(&want) {
            problems.push(format!(
                "{role}: may reach {extra}, which none of its tools uses"
            ));
        }
    }
    problems
}

#[test]
fn each_role_reaches_exactly_its_upstreams() {
    let mut problems = Vec::new();
    let docs = deploy::base_documents(&mut problems);
    problems.extend(network_problems(&docs));
    let rendered = deploy::rendered_overlay(&mut problems);
    problems.extend(
        network_problems(&rendered)
            .into_iter()
            .map(|p| format!("rendered: {p}")),
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // What the derivation gives, spelled out for two roles.
    assert_eq!(
        expected(Role::Mail),
        BTreeSet::from(["dns", "postgres", "imap", "smtp", "nostr-relay"])
    );
    assert_eq!(
        expected(Role::Lead),
        BTreeSet::from([
            "dns",
            "postgres",
            "app-store-connect",
            "discourse",
            "imap",
            "kubernetes-api"
        ])
    );
}

/// The Postgres example takes connections from the role pods only.
#[test]
fn postgres_is_reached_by_the_roles_alone() {
    let mut problems = Vec::new();
    let docs = deploy::kustomized_documents(&deploy::deploy_dir().join("postgres"), &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let policy = of_kind(&docs, "NetworkPolicy")
        .next()
        .expect("a policy for Postgres");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        json!({"app.kubernetes.io/name": "care-mcp-postgres"})
    );
    assert_eq!(
        strings(&policy["spec"]["policyTypes"]),
        ["Ingress", "Egress"]
    );
    assert!(
        policy["spec"]["egress"].is_null(),
        "Postgres reaches nothing"
    );
    assert_eq!(
        policy["spec"]["ingress"],
        json!([{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "care-mcp"}}}],
                "ports": [{"protocol": "TCP", "port": 5432}]}])
    );
}

/// An edit of a parsed manifest, for the negative cases.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn the_checks_catch_extra_reach_wide_rules_and_missing_isolation() {
    let mut problems = Vec::new();
    let docs = deploy::base_documents(&mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let edited = |name: &str, edit: &dyn Fn(&mut Value)| -> Vec<String> {
        let mut docs = docs.clone();
        let policy = docs
            .iter_mut()
            .find(|d| d["kind"] == "NetworkPolicy" && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{name}"));
        edit(policy);
        network_problems(&docs)
    };
    assert_eq!(
        edited("care-mcp-egress-smtp", &|_| {}),
        Vec::<String>::new()
    );
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "care-mcp-egress-smtp",
            Box::new(|p| {
                p["spec"]["podSelector"]["matchExpressions"][0]["values"] = json!(["mail", "ops"])
            }),
            "ops: may reach smtp",
        ),
        (
            "care-mcp-egress-app-store-connect",
            Box::new(|p| {
                p["spec"]["podSelector"]["matchExpressions"][0]["values"] =
                    json!(["lead", "insight"])
            }),
            "reviews: cannot reach app-store-connect",
        ),
        (
            "care-mcp-egress-discourse",
            Box::new(|p| {
                p["spec"]["egress"][0]["ports"] = json!([{"protocol": "TCP", "port": 22}])
            }),
            "TCP/22",
        ),
        (
            "care-mcp-egress-discourse",
            Box::new(|p| {
                p["spec"]["egress"][0]["to"] = json!([{"ipBlock": {"cidr": "0.0.0.0/0"}}])
            }),
            "is every address",
        ),
        (
            "care-mcp-egress-imap",
            Box::new(|p| {
                p["spec"]["egress"][0].as_object_mut().unwrap().remove("to");
            }),
            "allows every destination",
        ),
        (
            "care-mcp-egress-dns",
            Box::new(|p| p["spec"]["egress"][0]["to"] = json!([{"namespaceSelector": {}}])),
            "is not a dns destination",
        ),
        (
            "care-mcp-default-deny",
            Box::new(|p| p["spec"]["policyTypes"] = json!(["Egress"])),
            "no policy isolates it",
        ),
        (
            "care-mcp-default-deny",
            Box::new(|p| p["spec"]["ingress"] = json!([{}])),
            "allows ingress",
        ),
        (
            "care-mcp-egress-kubernetes-api",
            Box::new(|p| {
                p["metadata"]["labels"]
                    .as_object_mut()
                    .unwrap()
                    .remove(EGRESS_LABEL);
            }),
            "without a care-mcp/egress label",
        ),
    ];
    for (name, edit, expected) in cases {
        let found = edited(name, &*edit);
        assert!(
            found.iter().any(|p| p.contains(expected)),
            "{name}: expected {expected:?} in {found:?}"
        );
    }
}

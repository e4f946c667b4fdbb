//! The manifests in `deploy/`: every document parses into its k8s-openapi type with no field
//! the type does not know (so a typo fails CI), and the RBAC grants each role exactly what its
//! tools need — derived from the catalog and the cluster domain's access table, per namespace
//! — with no verb on Secrets or ConfigMaps, no wildcard and no cluster-wide grant.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use care_core::catalog::{self, Domain, Role};
use care_domains::cluster::access;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role as K8sRole, RoleBinding};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The namespace the care-mcp Deployments (and their ServiceAccounts) live in.
const HOME_NAMESPACE: &str = "care-mcp";

/// A grant: API group, resource, verb.
type Grant = (String, String, String);

fn deploy_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy"))
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// Every key path of `original` that `round_trip` lacks: a field the type does not know
/// (k8s-openapi ignores unknown fields when decoding, so a misspelt one would vanish silently).
fn unknown_fields(original: &Value, round_trip: &Value, at: &str, out: &mut Vec<String>) {
    match (original, round_trip) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let here = format!("{at}.{key}");
                match b.get(key) {
                    Some(other) => unknown_fields(value, other, &here, out),
                    None => out.push(here),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                unknown_fields(x, y, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn typed<T: DeserializeOwned + Serialize>(doc: &Value) -> Result<Value, String> {
    let decoded: T = serde_json::from_value(doc.clone()).map_err(|e| e.to_string())?;
    let round_trip = serde_json::to_value(decoded).map_err(|e| e.to_string())?;
    let mut unknown = Vec::new();
    unknown_fields(doc, &round_trip, "", &mut unknown);
    if unknown.is_empty() {
        Ok(round_trip)
    } else {
        Err(format!(
            "fields the type does not know: {}",
            unknown.join(", ")
        ))
    }
}

/// One document, decoded into the k8s-openapi type its `apiVersion` and `kind` name.
fn decode(doc: &Value) -> Result<Value, String> {
    let api_version = doc["apiVersion"].as_str().unwrap_or_default();
    let kind = doc["kind"].as_str().unwrap_or_default();
    match (api_version, kind) {
        ("v1", "ServiceAccount") => typed::<ServiceAccount>(doc),
        ("v1", "Namespace") => typed::<Namespace>(doc),
        ("v1", "Service") => typed::<Service>(doc),
        ("v1", "ConfigMap") => typed::<ConfigMap>(doc),
        ("v1", "Secret") => typed::<Secret>(doc),
        ("rbac.authorization.k8s.io/v1", "Role") => typed::<K8sRole>(doc),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => typed::<RoleBinding>(doc),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => typed::<ClusterRole>(doc),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => typed::<ClusterRoleBinding>(doc),
        ("apps/v1", "Deployment") => typed::<k8s_openapi::api::apps::v1::Deployment>(doc),
        _ => Err(format!(
            "{api_version} {kind} is not a type this test knows (add it to decode)"
        )),
    }
}

/// Every document of YAML `text` (empty documents skipped), decoded; problems are named by
/// `label` and the document's position.
fn documents(label: &str, text: &str, problems: &mut Vec<String>) -> Vec<Value> {
    let docs: Vec<Value> = match serde_saphyr::from_multiple(text) {
        Ok(docs) => docs,
        Err(e) => {
            problems.push(format!("{label}: not YAML: {e}"));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        if doc.is_null() {
            continue;
        }
        match decode(&doc) {
            Ok(_) => out.push(doc),
            Err(e) => problems.push(format!("{label} document {}: {e}", i + 1)),
        }
    }
    out
}

/// What a role's tools need in each allowed namespace, from the catalog and the access table.
fn needed(role: Role) -> BTreeSet<Grant> {
    let mut grants = BTreeSet::new();
    for entry in catalog::tools_of(role).filter(|e| e.domain == Domain::Kubernetes) {
        let tool = access::of_tool(entry.name).expect("every cluster tool has an access row");
        for (resources, verbs) in [
            (tool.reads, access::READ_VERBS),
            (tool.patches, access::WRITE_VERBS),
        ] {
            for r in resources {
                for verb in verbs {
                    grants.insert((
                        r.group.to_owned(),
                        r.resource.to_owned(),
                        (*verb).to_owned(),
                    ));
                }
            }
        }
    }
    grants
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// Every disagreement between the RBAC in `docs` and what each role needs.
fn rbac_problems(docs: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    let of_kind = |kind: &'static str| docs.iter().filter(move |d| d["kind"] == kind);
    let mut roles: BTreeMap<(String, String), BTreeSet<Grant>> = BTreeMap::new();
    for role in of_kind("Role").chain(of_kind("ClusterRole")) {
        let (ns, name) = (
            role["metadata"]["namespace"].as_str().unwrap_or_default(),
            role["metadata"]["name"].as_str().unwrap_or_default(),
        );
        let grants = roles.entry((ns.to_owned(), name.to_owned())).or_default();
        for rule in role["rules"].as_array().into_iter().flatten() {
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    for verb in strings(&rule["verbs"]) {
                        if [&group, &resource, &verb].iter().any(|s| s.contains('*')) {
                            problems.push(format!("{ns}/{name}: a wildcard grant"));
                        }
                        if resource == "secrets" || resource == "configmaps" {
                            problems.push(format!("{ns}/{name}: a verb on {resource}"));
                        }
                        grants.insert((group.clone(), resource.clone(), verb));
                    }
                }
            }
        }
    }
    for binding in of_kind("ClusterRoleBinding") {
        if binding["subjects"].to_string().contains("care-mcp") {
            problems.push(
                "a ClusterRoleBinding names a care-mcp account: nothing is cluster-wide".into(),
            );
        }
    }
    for role in Role::ALL {
        let account = format!("care-mcp-{role}");
        let need = needed(role);
        let has_account = of_kind("ServiceAccount").any(|sa| {
            sa["metadata"]["name"] == account.as_str()
                && sa["metadata"]["namespace"] == HOME_NAMESPACE
        });
        if !need.is_empty() && !has_account {
            problems.push(format!("no ServiceAccount {HOME_NAMESPACE}/{account}"));
        }
        let bindings: Vec<&Value> = of_kind("RoleBinding")
            .filter(|b| {
                b["subjects"].as_array().into_iter().flatten().any(|s| {
                    s["kind"] == "ServiceAccount"
                        && s["name"] == account.as_str()
                        && s["namespace"] == HOME_NAMESPACE
                })
            })
            .collect();
        if need.is_empty() {
            if !bindings.is_empty() {
                problems.push(format!(
                    "{account} holds no cluster tool but is bound to a Role"
                ));
            }
            continue;
        }
        if bindings.is_empty() {
            problems.push(format!("{account}: bound in no namespace"));
        }
        let mut seen = BTreeSet::new();
        for binding in bindings {
            let ns = binding["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default();
            if !seen.insert(ns.to_owned()) {
                problems.push(format!("{account}: bound twice in {ns}"));
            }
            if binding["roleRef"]["kind"] != "Role" {
                problems.push(format!("{account} in {ns}: bound to a ClusterRole"));
                continue;
            }
            let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
            let Some(granted) = roles.get(&(ns.to_owned(), role_name.to_owned())) else {
                problems.push(format!("{account} in {ns}: Role {role_name} is not there"));
                continue;
            };
            for missing in need.difference(granted) {
                problems.push(format!("{account} in {ns}: lacks {missing:?}"));
            }
            for extra in granted.difference(&need) {
                problems.push(format!(
                    "{account} in {ns}: grants more than needed: {extra:?}"
                ));
            }
        }
    }
    problems
}

#[test]
fn every_manifest_parses_into_its_kubernetes_type() {
    let mut files = Vec::new();
    yaml_files(&deploy_dir(), &mut files);
    assert!(!files.is_empty(), "no manifests in deploy/");
    let mut problems = Vec::new();
    let mut count = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        count += documents(&file.display().to_string(), &text, &mut problems).len();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(count >= 3, "{count} documents");
}

#[test]
fn each_role_is_granted_exactly_what_its_tools_need() {
    let mut files = Vec::new();
    yaml_files(&deploy_dir(), &mut files);
    let mut problems = Vec::new();
    let docs: Vec<Value> = files
        .iter()
        .flat_map(|f| {
            documents(
                &f.display().to_string(),
                &std::fs::read_to_string(f).unwrap(),
                &mut problems,
            )
        })
        .collect();
    problems.extend(rbac_problems(&docs));
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // The derivation says what the issue asks: reads on six resources for both roles, patch on
    // the three workloads for ops only.
    let reads = 6 * access::READ_VERBS.len();
    assert_eq!(needed(Role::Lead).len(), reads);
    assert_eq!(needed(Role::Ops).len(), reads + 3);
    assert!(needed(Role::Reviews).is_empty());
    assert!(needed(Role::Ops).contains(&("apps".into(), "deployments".into(), "patch".into())));
}

const GOOD: &str = "
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: care-mcp-lead, namespace: care-mcp}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: care-mcp-lead, namespace: shop}
rules:
  - apiGroups: ['']
    resources: [pods, events]
    verbs: [get, list, watch]
  - apiGroups: [apps]
    resources: [deployments, statefulsets, daemonsets, replicasets]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: care-mcp-lead, namespace: shop}
subjects: [{kind: ServiceAccount, name: care-mcp-lead, namespace: care-mcp}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: care-mcp-lead}
";

/// Only the lead's documents: the ops account is then reported missing, nothing else.
fn lead_only(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let docs = documents("synthetic", text, &mut problems);
    problems.extend(rbac_problems(&docs));
    problems.retain(|p| !p.contains("care-mcp-ops"));
    problems
}

#[test]
fn the_checks_catch_typos_extra_verbs_secrets_and_cluster_grants() {
    assert_eq!(lead_only(GOOD), Vec::<String>::new());
    let cases = [
        (
            GOOD.replace(
                "verbs: [get, list, watch]\n  - apiGroups: [apps]",
                "verbz: [get, list, watch]\n  - apiGroups: [apps]",
            ),
            "fields the type does not know: .rules[0].verbz",
        ),
        (
            GOOD.replace("[pods, events]", "[pods, events, secrets]"),
            "a verb on secrets",
        ),
        (
            GOOD.replace("[pods, events]", "[pods]"),
            "lacks (\"\", \"events\"",
        ),
        (
            GOOD.replace(
                "verbs: [get, list, watch]\n  - apiGroups: [apps]",
                "verbs: [get, list, watch, delete]\n  - apiGroups: [apps]",
            ),
            "grants more than needed",
        ),
        (
            GOOD.replace("[deployments, statefulsets", "['*', statefulsets"),
            "a wildcard grant",
        ),
        (
            GOOD.replace(
                "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role",
                "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole",
            ),
            "bound to a ClusterRole",
        ),
        (
            GOOD.replace("kind: RoleBinding", "kind: RoleBindin"),
            "not a type this test knows",
        ),
        (
            GOOD.replace("rules:\n  - apiGroups", "rules:\n  -apiGroups"),
            "synthetic",
        ),
    ];
    for (text, expected) in cases {
        let problems = lead_only(&text);
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "expected {expected:?} in {problems:?}"
        );
    }
}

//! What the deploy tests share: the manifests of `deploy/` as the kustomizations list them
//! (base, the example Postgres, the overlay's patches), each document decoded into the
//! k8s-openapi type its `apiVersion` and `kind` name with no field the type does not know, and
//! the overlay as kustomize renders it (`kubectl kustomize`, kustomize v2 and later).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role as K8sRole, RoleBinding};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The namespace the care-mcp Deployments (and their ServiceAccounts) live in.
pub const HOME_NAMESPACE: &str = "care-mcp";

pub fn deploy_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy"))
}

/// Every `.yaml`/`.yml` file under `dir`.
pub fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub fn decode(doc: &Value) -> Result<Value, String> {
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
        ("apps/v1", "Deployment") => typed::<Deployment>(doc),
        ("apps/v1", "StatefulSet") => typed::<StatefulSet>(doc),
        ("networking.k8s.io/v1", "NetworkPolicy") => typed::<NetworkPolicy>(doc),
        _ => Err(format!(
            "{api_version} {kind} is not a type this test knows (add it to decode)"
        )),
    }
}

/// The YAML documents of `text` (empty ones skipped), undecoded.
pub fn raw_documents(label: &str, text: &str, problems: &mut Vec<String>) -> Vec<Value> {
    match serde_saphyr::from_multiple::<Value>(text) {
        Ok(docs) => docs.into_iter().filter(|d| !d.is_null()).collect(),
        Err(e) => {
            problems.push(format!("{label}: not YAML: {e}"));
            Vec::new()
        }
    }
}

/// Every document of YAML `text` (empty documents skipped), decoded; problems are named by
/// `label` and the document's position.
pub fn documents(label: &str, text: &str, problems: &mut Vec<String>) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, doc) in raw_documents(label, text, problems).into_iter().enumerate() {
        match decode(&doc) {
            Ok(_) => out.push(doc),
            Err(e) => problems.push(format!("{label} document {}: {e}", i + 1)),
        }
    }
    out
}

/// A kustomization's file lists.
#[derive(Debug, Default)]
pub struct Kustomization {
    /// `resources` and `bases`: files, or directories holding a kustomization.
    pub resources: Vec<PathBuf>,
    /// `patchesStrategicMerge`: partial manifests, only meaningful once rendered.
    pub patches: Vec<PathBuf>,
}

/// The kustomization of `dir`; problems for anything this test does not follow.
pub fn kustomization(dir: &Path, problems: &mut Vec<String>) -> Kustomization {
    let path = dir.join("kustomization.yaml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        problems.push(format!("{}: no kustomization.yaml", dir.display()));
        return Kustomization::default();
    };
    let doc: Value = match serde_saphyr::from_str(&text) {
        Ok(doc) => doc,
        Err(e) => {
            problems.push(format!("{}: not YAML: {e}", path.display()));
            return Kustomization::default();
        }
    };
    let mut k = Kustomization::default();
    let known = [
        "apiVersion",
        "kind",
        "resources",
        "bases",
        "patchesStrategicMerge",
        "images",
    ];
    for key in doc.as_object().into_iter().flatten().map(|(k, _)| k) {
        if !known.contains(&key.as_str()) {
            problems.push(format!(
                "{}: `{key}` is not followed by the deploy tests",
                path.display()
            ));
        }
    }
    let list = |key: &str| -> Vec<PathBuf> {
        doc[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .map(|p| dir.join(p))
            .collect()
    };
    k.resources = list("resources");
    k.resources.extend(list("bases"));
    k.patches = list("patchesStrategicMerge");
    for p in k.resources.iter().chain(&k.patches) {
        if !p.exists() {
            problems.push(format!(
                "{}: {} does not exist",
                path.display(),
                p.display()
            ));
        }
    }
    k
}

/// The resource files a kustomization directory takes in, following directories; the
/// kustomization files and patch files seen are added to `seen`.
pub fn resource_files(
    dir: &Path,
    seen: &mut BTreeSet<PathBuf>,
    problems: &mut Vec<String>,
) -> Vec<PathBuf> {
    seen.insert(canonical(&dir.join("kustomization.yaml")));
    let k = kustomization(dir, problems);
    for patch in &k.patches {
        seen.insert(canonical(patch));
    }
    let mut out = Vec::new();
    for resource in k.resources {
        if resource.is_dir() {
            out.extend(resource_files(&resource, seen, problems));
        } else if resource.is_file() {
            seen.insert(canonical(&resource));
            out.push(resource);
        }
    }
    out
}

pub fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

/// The decoded documents of the files a kustomization directory takes in (its patches not
/// applied). Problems name the file.
pub fn kustomized_documents(dir: &Path, problems: &mut Vec<String>) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    resource_files(dir, &mut seen, problems)
        .iter()
        .flat_map(|f| {
            documents(
                &f.display().to_string(),
                &std::fs::read_to_string(f).unwrap(),
                problems,
            )
        })
        .collect()
}

/// The base: the six roles, their configuration, accounts, RBAC and network policies.
pub fn base_documents(problems: &mut Vec<String>) -> Vec<Value> {
    kustomized_documents(&deploy_dir().join("base"), problems)
}

/// The kubectl that renders the overlay: `CARE_TEST_KUBECTL`, else `kubectl` on PATH.
pub fn kubectl() -> String {
    std::env::var("CARE_TEST_KUBECTL").unwrap_or_else(|_| "kubectl".to_owned())
}

/// `deploy/overlays/example` as kustomize renders it, every document decoded.
pub fn rendered_overlay(problems: &mut Vec<String>) -> Vec<Value> {
    let dir = deploy_dir().join("overlays/example");
    let output = std::process::Command::new(kubectl())
        .arg("kustomize")
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} kustomize ({e}): install kubectl (Debian: apt-get install kubernetes-client) or set CARE_TEST_KUBECTL",
                kubectl()
            )
        });
    assert!(
        output.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    documents("the rendered overlay", &text, problems)
}

/// The documents of `kind`.
pub fn of_kind<'a>(docs: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    docs.iter().filter(move |d| d["kind"] == kind)
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

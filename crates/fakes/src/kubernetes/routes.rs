//! The API server's routes this fake serves, with the RBAC of `deploy/` applied: lists and gets
//! of pods, events, and the apps/v1 workloads and ReplicaSets in granted namespaces (paged with
//! `limit`/`continue`, `fieldSelector` on events), nodes refused (403) unless a test allows
//! them, and the one write a restart makes — a strategic merge patch of a workload's
//! pod-template `restartedAt` annotation, honouring `dryRun=All` and a `metadata.uid`
//! precondition (409 for another object of the same name). Secrets and ConfigMaps are refused
//! (403) and every request for one is held against the client. Errors are `Status` documents.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::dialect::status_response;
use super::state::{Data, Restart, Shared};
use crate::http::query::map as query_map;

/// The annotation `kubectl rollout restart` sets.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";
/// The patch type `kubectl rollout restart` sends.
pub const STRATEGIC_MERGE: &str = "application/strategic-merge-patch+json";
/// Page size when the request names none (the API server's is unbounded; a fake can be firm).
const DEFAULT_LIMIT: usize = 500;

/// Resources of the core group this fake knows, with their kinds.
const CORE: &[(&str, &str)] = &[
    ("pods", "Pod"),
    ("events", "Event"),
    ("secrets", "Secret"),
    ("configmaps", "ConfigMap"),
];
/// Resources of apps/v1, with their kinds.
const APPS: &[(&str, &str)] = &[
    ("deployments", "Deployment"),
    ("statefulsets", "StatefulSet"),
    ("daemonsets", "DaemonSet"),
    ("replicasets", "ReplicaSet"),
];
/// What a restart may patch.
const RESTARTABLE: &[&str] = &["deployments", "statefulsets", "daemonsets"];

#[derive(Debug)]
pub(crate) struct App {
    pub shared: Arc<Shared>,
    /// Who the fake's RBAC errors name as the caller.
    pub user: String,
}

/// The one entry point: every path comes here.
pub(crate) async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query = query_map(uri.query());
    let segments: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let mut data = app.shared.lock();
    let (group, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("", rest),
        ["apis", "apps", "v1", rest @ ..] => ("apps", rest),
        _ => {
            return status_response(
                StatusCode::NOT_FOUND,
                "the server could not find the requested resource",
            );
        }
    };
    let table = if group.is_empty() { CORE } else { APPS };
    match (group, rest) {
        ("", ["nodes"]) if method == Method::GET => nodes(&app, &data, &query),
        (_, ["namespaces", ns, resource, tail @ ..]) if tail.len() <= 1 => {
            let Some(kind) = table.iter().find(|(r, _)| r == resource).map(|(_, k)| *k) else {
                return status_response(
                    StatusCode::NOT_FOUND,
                    "the server could not find the requested resource",
                );
            };
            let verb = match (&method, tail) {
                (&Method::GET, []) => "list",
                (&Method::GET, [_]) => "get",
                (&Method::PATCH, [_]) => "patch",
                _ => {
                    return status_response(
                        StatusCode::METHOD_NOT_ALLOWED,
                        "the server does not allow this method on the requested resource",
                    );
                }
            };
            // The RBAC of deploy/: nothing at all on Secrets and ConfigMaps, reads in the
            // granted namespaces, patch on the workloads.
            if *resource == "secrets" || *resource == "configmaps" {
                data.forbidden_touches
                    .push(format!("{method} {}", uri.path()));
                return forbidden(&app, verb, resource, group, Some(ns));
            }
            if !data.granted.iter().any(|g| g == ns)
                || (verb == "patch" && !RESTARTABLE.contains(resource))
            {
                return forbidden(&app, verb, resource, group, Some(ns));
            }
            match tail {
                [] => list(&data, group, kind, resource, ns, &query),
                [name] if verb == "get" => get(&data, group, kind, resource, ns, name),
                [name] => patch(
                    &mut data, group, kind, resource, ns, name, &query, &headers, &body,
                ),
                _ => status_response(StatusCode::NOT_FOUND, "not found"),
            }
        }
        _ => status_response(
            StatusCode::NOT_FOUND,
            "the server could not find the requested resource",
        ),
    }
}

fn forbidden(app: &App, verb: &str, resource: &str, group: &str, ns: Option<&str>) -> Response {
    let scope = match ns {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_owned(),
    };
    status_response(
        StatusCode::FORBIDDEN,
        &format!(
            "{resource} is forbidden: User \"{}\" cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}",
            app.user
        ),
    )
}

fn api_version(group: &str) -> &'static str {
    if group.is_empty() { "v1" } else { "apps/v1" }
}

/// A page of `items` as a `<Kind>List`, continuing at the offset the `continue` token holds.
fn page(group: &str, kind: &str, items: Vec<Value>, query: &HashMap<String, String>) -> Response {
    let limit = match query.get("limit").map(|l| l.parse::<usize>()) {
        None => DEFAULT_LIMIT,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            return status_response(StatusCode::BAD_REQUEST, "limit must be a positive number");
        }
    };
    let offset = match query.get("continue") {
        None => 0,
        Some(token) => match token
            .strip_prefix("fake-continue-")
            .and_then(|o| o.parse::<usize>().ok())
        {
            Some(o) => o,
            None => {
                return status_response(
                    StatusCode::BAD_REQUEST,
                    "the provided continue parameter is not valid",
                );
            }
        },
    };
    let total = items.len();
    // Items of a list carry neither kind nor apiVersion, as the API server sends them.
    let shown: Vec<Value> = items
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|mut item| {
            if let Some(map) = item.as_object_mut() {
                map.remove("kind");
                map.remove("apiVersion");
            }
            item
        })
        .collect();
    let mut metadata = json!({ "resourceVersion": "1000" });
    if offset + limit < total {
        metadata["continue"] = json!(format!("fake-continue-{}", offset + limit));
        metadata["remainingItemCount"] = json!(total - offset - limit);
    }
    let body = json!({
        "kind": format!("{kind}List"),
        "apiVersion": api_version(group),
        "metadata": metadata,
        "items": shown,
    });
    (StatusCode::OK, axum::Json(body)).into_response()
}

fn nodes(app: &App, data: &Data, query: &HashMap<String, String>) -> Response {
    if data.nodes_forbidden {
        return forbidden(app, "list", "nodes", "", None);
    }
    page("", "Node", data.nodes.clone(), query)
}

/// `fieldSelector` as events support it: `field=value` pairs joined by commas.
fn field_matches(object: &Value, selector: &str) -> Result<bool, String> {
    for term in selector.split(',').filter(|t| !t.is_empty()) {
        let (field, wanted) = term.split_once('=').ok_or("unsupported selector")?;
        let value = match field {
            "type" => &object["type"],
            "reason" => &object["reason"],
            "involvedObject.name" => &object["involvedObject"]["name"],
            "involvedObject.kind" => &object["involvedObject"]["kind"],
            "metadata.name" => &object["metadata"]["name"],
            other => return Err(format!("field label not supported: {other}")),
        };
        if value.as_str() != Some(wanted.trim_start_matches('=')) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn list(
    data: &Data,
    group: &str,
    kind: &str,
    resource: &str,
    ns: &str,
    query: &HashMap<String, String>,
) -> Response {
    let mut items = Vec::new();
    for object in data.list(resource, ns) {
        match query.get("fieldSelector") {
            None => items.push(object.clone()),
            Some(selector) => match field_matches(object, selector) {
                Ok(true) => items.push(object.clone()),
                Ok(false) => {}
                Err(e) => return status_response(StatusCode::BAD_REQUEST, &e),
            },
        }
    }
    page(group, kind, items, query)
}

fn get(data: &Data, group: &str, kind: &str, resource: &str, ns: &str, name: &str) -> Response {
    match data
        .list(resource, ns)
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
    {
        Some(object) => {
            let mut object = object.clone();
            object["kind"] = json!(kind);
            object["apiVersion"] = json!(api_version(group));
            (StatusCode::OK, axum::Json(object)).into_response()
        }
        None => status_response(
            StatusCode::NOT_FOUND,
            &format!("{resource}.{group} \"{name}\" not found"),
        ),
    }
}

/// The restart patch: exactly `{metadata: {uid}?, spec: {template: {metadata: {annotations:
/// {restartedAt}}}}}`; this fake accepts no other patch (it verifies the client sends only a
/// restart), answering 422 like a validation failure.
fn restart_annotation(patch: &Value) -> Result<(Option<&str>, &str), &'static str> {
    let top = patch.as_object().ok_or("the patch is not an object")?;
    if top.keys().any(|k| k != "metadata" && k != "spec") {
        return Err("the patch changes more than the pod template's restartedAt");
    }
    let uid = match top.get("metadata") {
        None => None,
        Some(m) => {
            let m = m.as_object().ok_or("metadata is not an object")?;
            if m.keys().any(|k| k != "uid") {
                return Err("the patch changes metadata other than a uid precondition");
            }
            Some(
                m.get("uid")
                    .and_then(Value::as_str)
                    .ok_or("metadata.uid is not a string")?,
            )
        }
    };
    let annotations = patch["spec"]["template"]["metadata"]["annotations"]
        .as_object()
        .ok_or("the patch sets no pod-template annotations")?;
    let only = |v: &Value, key: &str| {
        v.as_object()
            .is_some_and(|o| o.len() == 1 && o.contains_key(key))
    };
    if !only(&patch["spec"], "template")
        || !only(&patch["spec"]["template"], "metadata")
        || !only(&patch["spec"]["template"]["metadata"], "annotations")
        || annotations.len() != 1
    {
        return Err("the patch changes more than the pod template's restartedAt");
    }
    let at = annotations
        .get(RESTARTED_AT)
        .and_then(Value::as_str)
        .ok_or("the patch sets another annotation than restartedAt")?;
    chrono::DateTime::parse_from_rfc3339(at).map_err(|_| "restartedAt is not an RFC 3339 time")?;
    Ok((uid, at))
}

#[allow(clippy::too_many_arguments)]
fn patch(
    data: &mut Data,
    group: &str,
    kind: &str,
    resource: &str,
    ns: &str,
    name: &str,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if content_type != STRATEGIC_MERGE {
        return status_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!(
                "the body of the request was in an unknown format - accepted media types include: {STRATEGIC_MERGE}"
            ),
        );
    }
    let dry_run = match query.get("dryRun").map(String::as_str) {
        None => false,
        Some("All") => true,
        Some(_) => {
            return status_response(
                StatusCode::BAD_REQUEST,
                "the dryRun value is not supported (only All)",
            );
        }
    };
    if let Some(check) = data.body_check
        && let Err(reason) = check(resource, body)
    {
        data.rejected_bodies.push(format!("{resource}: {reason}"));
        return status_response(
            StatusCode::BAD_REQUEST,
            "the request body could not be decoded",
        );
    }
    let Ok(document) = serde_json::from_slice::<Value>(body) else {
        return status_response(StatusCode::BAD_REQUEST, "the request body is not JSON");
    };
    let (uid, at) = match restart_annotation(&document) {
        Ok(found) => found,
        Err(reason) => return status_response(StatusCode::UNPROCESSABLE_ENTITY, reason),
    };
    let resource_version = data.next_resource_version();
    let Some(object) = data.find_mut(resource, ns, name) else {
        return status_response(
            StatusCode::NOT_FOUND,
            &format!("{resource}.{group} \"{name}\" not found"),
        );
    };
    let current_uid = object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if let Some(wanted) = uid
        && wanted != current_uid
    {
        return status_response(
            StatusCode::CONFLICT,
            &format!(
                "Operation cannot be fulfilled on {resource}.{group} \"{name}\": Precondition failed: UID in precondition: {wanted}, UID in object meta: {current_uid}"
            ),
        );
    }
    let mut patched = object.clone();
    patched["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT] = json!(at);
    let generation = patched["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
    patched["metadata"]["generation"] = json!(generation);
    patched["metadata"]["resourceVersion"] = json!(resource_version);
    if !dry_run {
        *object = patched.clone();
    }
    let record = Restart {
        kind: kind.to_owned(),
        namespace: ns.to_owned(),
        name: name.to_owned(),
        uid: current_uid,
        restarted_at: at.to_owned(),
        body: String::from_utf8_lossy(body).into_owned(),
    };
    if dry_run {
        data.dry_runs.push(record);
    } else {
        data.restarts.push(record);
    }
    patched["kind"] = json!(kind);
    patched["apiVersion"] = json!(api_version(group));
    (StatusCode::OK, axum::Json(patched)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_restart_patch_is_accepted() {
        let ok = json!({"metadata": {"uid": "u-1"}, "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "2026-12-01T10:00:00Z"}}}}});
        assert_eq!(
            restart_annotation(&ok),
            Ok((Some("u-1"), "2026-12-01T10:00:00Z"))
        );
        let mut without_uid = ok.clone();
        without_uid.as_object_mut().map(|o| o.remove("metadata"));
        assert!(restart_annotation(&without_uid).is_ok());
        for bad in [
            json!({"spec": {"replicas": 0}}),
            json!({"spec": {"template": {"metadata": {"annotations": {"other": "x"}}}}}),
            json!({"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "yesterday"}}}}}),
            json!({"metadata": {"labels": {}}, "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "2026-12-01T10:00:00Z"}}}}}),
            json!({"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "2026-12-01T10:00:00Z"}}, "spec": {}}}}),
            json!([]),
        ] {
            assert!(restart_annotation(&bad).is_err(), "{bad}");
        }
    }
}

//! Where a pod template takes its configuration from, as names and key names only: env
//! `secretKeyRef` / `configMapKeyRef`, `envFrom`, and secret, configMap and projected volumes.
//! Read from the workload's own spec: no Secret or ConfigMap is ever requested, and no value
//! appears (literal env values are left out too: people put passwords there).

use k8s_openapi::api::core::v1::{KeyToPath, PodTemplateSpec};
use serde_json::{Value, json};

use super::view::fenced;

/// One reference of the template to a Secret or a ConfigMap.
fn source(
    kind: &str,
    name: &str,
    keys: &[&str],
    via: &str,
    as_: Option<&str>,
    container: Option<&str>,
) -> Value {
    let mut v = json!({
        "type": kind,
        "name": fenced(name),
        // Empty: every key of it.
        "keys": keys.iter().map(|k| fenced(k)).collect::<Vec<_>>(),
        "via": via,
    });
    if let Some(a) = as_ {
        v["as"] = json!(fenced(a));
    }
    if let Some(c) = container {
        v["container"] = json!(fenced(c));
    }
    v
}

fn keys(items: Option<&Vec<KeyToPath>>) -> Vec<&str> {
    items
        .into_iter()
        .flatten()
        .map(|i| i.key.as_str())
        .collect()
}

/// Every Secret and ConfigMap the template refers to, in template order.
pub fn config_sources(template: &PodTemplateSpec) -> Vec<Value> {
    let Some(spec) = &template.spec else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for container in spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
    {
        let c = Some(container.name.as_str());
        for var in container.env.iter().flatten() {
            let Some(from) = &var.value_from else {
                continue;
            };
            if let Some(s) = &from.secret_key_ref {
                out.push(source(
                    "secret",
                    &s.name,
                    &[&s.key],
                    "env",
                    Some(&var.name),
                    c,
                ));
            }
            if let Some(m) = &from.config_map_key_ref {
                out.push(source(
                    "config_map",
                    &m.name,
                    &[&m.key],
                    "env",
                    Some(&var.name),
                    c,
                ));
            }
        }
        for from in container.env_from.iter().flatten() {
            let prefix = from.prefix.as_deref();
            if let Some(s) = &from.secret_ref {
                out.push(source("secret", &s.name, &[], "env_from", prefix, c));
            }
            if let Some(m) = &from.config_map_ref {
                out.push(source("config_map", &m.name, &[], "env_from", prefix, c));
            }
        }
    }
    for volume in spec.volumes.iter().flatten() {
        let v = Some(volume.name.as_str());
        if let Some(s) = &volume.secret {
            let name = s.secret_name.as_deref().unwrap_or_default();
            out.push(source(
                "secret",
                name,
                &keys(s.items.as_ref()),
                "volume",
                v,
                None,
            ));
        }
        if let Some(m) = &volume.config_map {
            out.push(source(
                "config_map",
                &m.name,
                &keys(m.items.as_ref()),
                "volume",
                v,
                None,
            ));
        }
        let projections = volume
            .projected
            .iter()
            .flat_map(|p| p.sources.iter().flatten());
        for p in projections {
            if let Some(s) = &p.secret {
                out.push(source(
                    "secret",
                    &s.name,
                    &keys(s.items.as_ref()),
                    "volume",
                    v,
                    None,
                ));
            }
            if let Some(m) = &p.config_map {
                out.push(source(
                    "config_map",
                    &m.name,
                    &keys(m.items.as_ref()),
                    "volume",
                    v,
                    None,
                ));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_and_key_names_only_never_a_value() {
        let template: PodTemplateSpec = serde_json::from_value(json!({
            "spec": {
                "containers": [{
                    "name": "app",
                    "env": [
                        {"name": "LOG_LEVEL", "value": "sk-demo-literal-value"},
                        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
                    ],
                    "envFrom": [{"secretRef": {"name": "api-keys"}, "prefix": "API_"}, {"configMapRef": {"name": "flags"}}]
                }],
                "volumes": [
                    {"name": "certs", "secret": {"secretName": "tls", "items": [{"key": "tls.crt", "path": "c"}]}},
                    {"name": "conf", "configMap": {"name": "nginx"}},
                    {"name": "all", "projected": {"sources": [{"secret": {"name": "p-secret"}}, {"configMap": {"name": "p-conf", "items": [{"key": "a", "path": "a"}]}}]}},
                    {"name": "tmp", "emptyDir": {}}
                ]
            }
        }))
        .unwrap();
        let sources = config_sources(&template);
        let text = serde_json::to_string(&sources).unwrap();
        assert!(!text.contains("sk-demo-literal-value") && !text.contains("LOG_LEVEL"));
        assert_eq!(sources.len(), 8, "{text}");
        assert_eq!(
            sources[0],
            json!({"type": "secret", "name": fenced("db"), "keys": [fenced("password")],
                   "via": "env", "as": fenced("DB_PASSWORD"), "container": fenced("app")})
        );
        assert_eq!(sources[2]["via"], "env_from");
        assert_eq!(sources[2]["as"], fenced("API_"));
        assert_eq!(sources[4]["keys"], json!([fenced("tls.crt")]));
        assert_eq!(sources[5]["keys"], json!([]));
        assert_eq!(sources[7]["name"], fenced("p-conf"));
        assert_eq!(
            config_sources(&PodTemplateSpec::default()),
            Vec::<Value>::new()
        );
    }
}

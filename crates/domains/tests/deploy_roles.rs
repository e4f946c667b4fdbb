//! The six role Deployments of `deploy/` (base, and the overlay as rendered): each runs its
//! role's wrapper, its environment holds exactly variables its role reads
//! (`care_core::variables`, the list startup enforces) and every one that role requires,
//! plain values come from the ConfigMap and secrets as files from read-only Secret mounts,
//! the write switches are off, and every workload runs non-root, read-only, without
//! capabilities, with the runtime's seccomp profile, sized from the measured RSS and given
//! longer to stop than the server's drain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod deploy;

use std::collections::BTreeSet;

use care_core::catalog::{self, Domain, Role};
use care_core::variables::{self, Form, Need};
use deploy::{of_kind, strings};
use serde_json::Value;

/// Resident memory of one role process, measured: the largest VmHWM of `bench/roles` (every
/// role after 2,100 calls reading its upstreams: 12.0-14.5 MiB, lead the largest), rounded up.
const MEASURED_RSS_MIB: u64 = 15;
/// The switches an operator opens per role: literal values in the Deployment, not shared.
const SWITCHES: [&str; 2] = ["CARE_WRITE_ENABLED", "CARE_CLUSTER_WRITE"];
/// Variables every role's Deployment sets: the shared ledger, its password and the audit salt
/// (required with Postgres), besides what the role's own configuration requires.
const CLUSTER_REQUIRED: [&str; 3] = [
    "DATABASE_URL",
    "CARE_DATABASE_PASSWORD_FILE",
    "CARE_AUDIT_SALT_FILE",
];

/// The server's drain on SIGTERM, read from its source so the two cannot drift.
fn stop_grace_secs() -> u64 {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../server/src/commands/serve.rs"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("STOP_GRACE: Duration = Duration::from_secs("))
        .expect("STOP_GRACE in serve.rs");
    let digits: String = line
        .split("from_secs(")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

/// Mebibytes of a Kubernetes quantity like `32Mi` or `1Gi` (what these manifests use).
fn mebibytes(quantity: &Value) -> Option<u64> {
    let text = quantity.as_str()?;
    let (number, factor) = if let Some(n) = text.strip_suffix("Gi") {
        (n, 1024)
    } else {
        (text.strip_suffix("Mi")?, 1)
    };
    number.parse::<u64>().ok().map(|n| n * factor)
}

/// Every problem with the pod template `spec` of a workload named `name`.
fn hardening_problems(name: &str, spec: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let pod = &spec["securityContext"];
    if pod["runAsNonRoot"] != true {
        problems.push(format!(
            "{name}: pod securityContext.runAsNonRoot is not true"
        ));
    }
    if pod["seccompProfile"]["type"] != "RuntimeDefault" {
        problems.push(format!("{name}: pod seccompProfile is not RuntimeDefault"));
    }
    if spec["enableServiceLinks"] != false {
        problems.push(format!(
            "{name}: enableServiceLinks is not false (every Service would add variables)"
        ));
    }
    let containers = spec["containers"].as_array().cloned().unwrap_or_default();
    let init = spec["initContainers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if containers.is_empty() {
        problems.push(format!("{name}: no container"));
    }
    for c in containers.iter().chain(&init) {
        let cname = format!("{name}/{}", c["name"].as_str().unwrap_or_default());
        let sc = &c["securityContext"];
        for (field, want) in [
            ("runAsNonRoot", Value::Bool(true)),
            ("readOnlyRootFilesystem", Value::Bool(true)),
            ("allowPrivilegeEscalation", Value::Bool(false)),
        ] {
            if sc[field] != want {
                problems.push(format!("{cname}: securityContext.{field} is not {want}"));
            }
        }
        if sc["privileged"] == true {
            problems.push(format!("{cname}: privileged"));
        }
        if strings(&sc["capabilities"]["drop"]) != ["ALL"] || !sc["capabilities"]["add"].is_null() {
            problems.push(format!(
                "{cname}: capabilities are not drop [ALL] and add none"
            ));
        }
        if !sc["seccompProfile"].is_null() && sc["seccompProfile"]["type"] != "RuntimeDefault" {
            problems.push(format!("{cname}: seccompProfile is not RuntimeDefault"));
        }
        if sc["runAsUser"] == 0 || pod["runAsUser"] == 0 {
            problems.push(format!("{cname}: runs as uid 0"));
        }
        for kind in ["requests", "limits"] {
            for resource in ["cpu", "memory"] {
                if c["resources"][kind][resource].is_null() {
                    problems.push(format!("{cname}: no {kind}.{resource}"));
                }
            }
        }
        if !c["envFrom"].is_null() {
            problems.push(format!("{cname}: envFrom hands over a whole object"));
        }
    }
    problems
}

/// Every problem with the Deployment of `role` in `docs`.
fn role_problems(role: Role, docs: &[Value]) -> Vec<String> {
    let name = format!("care-mcp-{role}");
    let mut problems = Vec::new();
    let found: Vec<&Value> = of_kind(docs, "Deployment")
        .filter(|d| d["metadata"]["name"] == name.as_str())
        .collect();
    let [deployment] = found.as_slice() else {
        return vec![format!("{} Deployments named {name}", found.len())];
    };
    let spec = &deployment["spec"]["template"]["spec"];
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    if labels["app.kubernetes.io/name"] != "care-mcp"
        || labels["app.kubernetes.io/component"] != role.as_str()
    {
        problems.push(format!("{name}: pod labels do not name the role"));
    }
    problems.extend(hardening_problems(&name, spec));

    // The account: its own, and a token only for the roles with cluster tools.
    if spec["serviceAccountName"] != name.as_str() {
        problems.push(format!("{name}: serviceAccountName is not {name}"));
    }
    let cluster = catalog::role_needs(role, Domain::Kubernetes);
    if spec["automountServiceAccountToken"] != cluster {
        problems.push(format!(
            "{name}: automountServiceAccountToken must be {cluster}"
        ));
    }

    // Stopping: longer than the drain of in-flight external writes.
    let grace = spec["terminationGracePeriodSeconds"].as_u64().unwrap_or(30);
    if grace <= stop_grace_secs() {
        problems.push(format!(
            "{name}: terminationGracePeriodSeconds {grace} does not cover the {} s drain",
            stop_grace_secs()
        ));
    }

    let containers = spec["containers"].as_array().cloned().unwrap_or_default();
    let [container] = containers.as_slice() else {
        problems.push(format!("{name}: not exactly one container"));
        return problems;
    };
    let wrapper = format!("/usr/local/bin/care-mcp-{role}");
    if strings(&container["command"]) != [wrapper.clone()] || !container["args"].is_null() {
        problems.push(format!(
            "{name}: the container does not run {wrapper} alone"
        ));
    }
    let requested = mebibytes(&container["resources"]["requests"]["memory"]).unwrap_or(0);
    let limit = mebibytes(&container["resources"]["limits"]["memory"]).unwrap_or(0);
    if requested < MEASURED_RSS_MIB || limit < 2 * requested {
        problems.push(format!(
            "{name}: memory request {requested} Mi / limit {limit} Mi do not fit the measured {MEASURED_RSS_MIB} MiB"
        ));
    }

    problems.extend(environment_problems(role, &name, container, spec, docs));
    problems
}

/// The environment of `role`'s container against the role's declared variables.
fn environment_problems(
    role: Role,
    name: &str,
    container: &Value,
    spec: &Value,
    docs: &[Value],
) -> Vec<String> {
    let mut problems = Vec::new();
    let config: Vec<&Value> = of_kind(docs, "ConfigMap")
        .filter(|c| c["metadata"]["name"] == "care-mcp-config")
        .collect();
    let config_keys: BTreeSet<String> = config
        .iter()
        .flat_map(|c| c["data"].as_object().into_iter().flatten())
        .map(|(k, _)| k.clone())
        .collect();
    let mounts = container["volumeMounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let volumes = spec["volumes"].as_array().cloned().unwrap_or_default();
    let mut set = BTreeSet::new();
    let mut used_volumes = BTreeSet::new();

    for var in container["env"].as_array().into_iter().flatten() {
        let var_name = var["name"].as_str().unwrap_or_default();
        if !set.insert(var_name.to_owned()) {
            problems.push(format!("{name}: {var_name} set twice"));
        }
        let Some(declared) = variables::of_role(role).find(|v| v.name == var_name) else {
            problems.push(format!(
                "{name}: {var_name} is not a variable role {role} reads"
            ));
            continue;
        };
        if declared.need == Need::Platform {
            problems.push(format!("{name}: {var_name} is the platform's to set"));
        }
        match declared.form {
            Form::InlineSecret => problems.push(format!(
                "{name}: {var_name} is a secret in a variable; use {var_name}_FILE"
            )),
            Form::Plain if SWITCHES.contains(&var_name) => {
                if var["value"] != "0" {
                    problems.push(format!("{name}: {var_name} is not off (\"0\")"));
                }
            }
            Form::Plain => {
                let from = &var["valueFrom"]["configMapKeyRef"];
                if from["name"] != "care-mcp-config" || from["key"] != var_name {
                    problems.push(format!(
                        "{name}: {var_name} does not come from care-mcp-config key {var_name}"
                    ));
                } else if !config_keys.contains(var_name) {
                    problems.push(format!("{name}: care-mcp-config has no key {var_name}"));
                }
            }
            Form::SecretFile => match secret_file(var, &mounts, &volumes) {
                Ok(volume) => {
                    used_volumes.insert(volume);
                }
                Err(why) => problems.push(format!("{name}: {var_name} {why}")),
            },
        }
    }

    let required = variables::of_role(role)
        .filter(|v| v.need == Need::Required)
        .map(|v| v.name)
        .chain(CLUSTER_REQUIRED);
    for var_name in required {
        let file_twin = format!("{var_name}_FILE");
        if !set.contains(var_name) && !set.contains(&file_twin) {
            problems.push(format!(
                "{name}: {var_name} is required by role {role} but not set"
            ));
        }
    }
    if catalog::external_write_of(role).is_some() && !set.contains("CARE_WRITE_ENABLED") {
        problems.push(format!("{name}: CARE_WRITE_ENABLED is not stated (off)"));
    }

    // No volume beyond the secrets this role reads: nothing else is writable or readable.
    for volume in &volumes {
        let vname = volume["name"].as_str().unwrap_or_default();
        if !used_volumes.contains(vname) {
            problems.push(format!(
                "{name}: volume {vname} is no secret file the role reads"
            ));
        }
    }
    problems
}

/// The Secret volume a `*_FILE` variable's path lies in, checked: a literal path, in a mount
/// that is read-only, of a Secret volume that holds that file, readable by nobody else.
fn secret_file(var: &Value, mounts: &[Value], volumes: &[Value]) -> Result<String, String> {
    let path = var["value"]
        .as_str()
        .ok_or("is not a literal path (the file is the secret, not its name)")?;
    let (dir, file) = path.rsplit_once('/').ok_or("is not an absolute path")?;
    let mount = mounts
        .iter()
        .find(|m| m["mountPath"] == dir)
        .ok_or("names a file in no mounted volume")?;
    if mount["readOnly"] != true {
        return Err("is in a mount that is not read-only".into());
    }
    let vname = mount["name"].as_str().unwrap_or_default();
    let volume = volumes
        .iter()
        .find(|v| v["name"] == vname)
        .ok_or("is mounted from no volume")?;
    let secret = &volume["secret"];
    if secret.is_null() {
        return Err("is not mounted from a Secret".into());
    }
    if !secret["items"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|item| item["path"] == file)
    {
        return Err(format!(
            "names {file}, which the Secret volume does not list"
        ));
    }
    // The server refuses secret files others can read or anyone but the owner can write.
    let mode = secret["defaultMode"].as_u64().unwrap_or(0o644);
    if mode & 0o027 != 0 {
        return Err(format!(
            "is mounted with mode {mode:o}: others could read it"
        ));
    }
    Ok(vname.to_owned())
}

fn all_problems(docs: &[Value]) -> Vec<String> {
    let mut problems: Vec<String> = Role::ALL
        .into_iter()
        .flat_map(|role| role_problems(role, docs))
        .collect();
    for workload in of_kind(docs, "StatefulSet") {
        let name = workload["metadata"]["name"].as_str().unwrap_or_default();
        problems.extend(hardening_problems(
            name,
            &workload["spec"]["template"]["spec"],
        ));
    }
    if of_kind(docs, "Deployment").count() != Role::ALL.len() {
        problems.push("not exactly one Deployment per role".into());
    }
    problems
}

#[test]
fn each_role_gets_exactly_its_variables_and_runs_hardened() {
    let mut problems = Vec::new();
    let mut docs = deploy::base_documents(&mut problems);
    docs.extend(deploy::kustomized_documents(
        &deploy::deploy_dir().join("postgres"),
        &mut problems,
    ));
    problems.extend(all_problems(&docs));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_rendered_overlay_keeps_all_of_it() {
    let mut problems = Vec::new();
    let rendered = deploy::rendered_overlay(&mut problems);
    problems.extend(all_problems(&rendered));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(of_kind(&rendered, "StatefulSet").count(), 1);
}

/// The checks fail on what they are meant to catch.
/// An edit of a parsed manifest, for the negative cases.
type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;

#[test]
fn the_checks_catch_strays_secrets_in_variables_and_soft_spots() {
    let mut problems = Vec::new();
    let docs = deploy::base_documents(&mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let ops = |edit: &dyn Fn(&mut Value)| -> Vec<String> {
        let mut docs = docs.clone();
        let deployment = docs
            .iter_mut()
            .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "care-mcp-ops")
            .unwrap();
        edit(&mut deployment["spec"]["template"]["spec"]);
        role_problems(Role::Ops, &docs)
    };
    assert_eq!(ops(&|_| {}), Vec::<String>::new());
    let env = |spec: &mut Value| -> Vec<Value> {
        spec["containers"][0]["env"].as_array().unwrap().clone()
    };
    let cases: Vec<(Edit<'_>, &str)> = vec![
        (
            Box::new(|s| {
                let mut e = env(s);
                e.push(serde_json::json!({"name": "CARE_SMTP_URL", "value": "smtps://x"}));
                s["containers"][0]["env"] = e.into();
            }),
            "CARE_SMTP_URL is not a variable role ops reads",
        ),
        (
            Box::new(|s| {
                let mut e = env(s);
                e.retain(|v| v["name"] != "CARE_KUBE_NAMESPACES");
                s["containers"][0]["env"] = e.into();
            }),
            "CARE_KUBE_NAMESPACES is required by role ops",
        ),
        (
            Box::new(|s| {
                let mut e = env(s);
                e.push(serde_json::json!({"name": "CARE_AUDIT_SALT", "value": "sk-demo-salt-0123456789"}));
                s["containers"][0]["env"] = e.into();
            }),
            "CARE_AUDIT_SALT is a secret in a variable",
        ),
        (
            Box::new(|s| {
                for v in s["containers"][0]["env"].as_array_mut().unwrap() {
                    if v["name"] == "CARE_CLUSTER_WRITE" {
                        v["value"] = "1".into();
                    }
                }
            }),
            "CARE_CLUSTER_WRITE is not off",
        ),
        (
            Box::new(|s| s["volumes"][0]["secret"]["defaultMode"] = 0o444.into()),
            "others could read it",
        ),
        (
            Box::new(|s| s["containers"][0]["volumeMounts"][0]["readOnly"] = false.into()),
            "not read-only",
        ),
        (
            Box::new(|s| {
                s["containers"][0]["securityContext"]["readOnlyRootFilesystem"] = false.into()
            }),
            "readOnlyRootFilesystem is not true",
        ),
        (
            Box::new(|s| {
                s["containers"][0]["securityContext"]["capabilities"]["add"] =
                    serde_json::json!(["NET_ADMIN"])
            }),
            "capabilities are not drop [ALL]",
        ),
        (
            Box::new(|s| s["terminationGracePeriodSeconds"] = 20.into()),
            "does not cover the 25 s drain",
        ),
        (
            Box::new(|s| s["containers"][0]["resources"]["requests"]["memory"] = "8Mi".into()),
            "do not fit the measured",
        ),
        (
            Box::new(|s| {
                s["containers"][0]["envFrom"] =
                    serde_json::json!([{"configMapRef": {"name": "care-mcp-config"}}])
            }),
            "envFrom",
        ),
        (
            Box::new(|s| s["automountServiceAccountToken"] = false.into()),
            "automountServiceAccountToken must be true",
        ),
        (
            Box::new(|s| {
                s["containers"][0]["command"] = serde_json::json!(["/usr/local/bin/care-mcp-lead"])
            }),
            "does not run /usr/local/bin/care-mcp-ops",
        ),
    ];
    for (edit, expected) in cases {
        let found = ops(&*edit);
        assert!(
            found.iter().any(|p| p.contains(expected)),
            "expected {expected:?} in {found:?}"
        );
    }
}

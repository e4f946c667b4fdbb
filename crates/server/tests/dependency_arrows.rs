//! The dependency arrows of ARCHITECTURE.md ("Layout"), checked over `cargo metadata`: which
//! workspace crate may depend on which, and which crate alone may use rmcp, sqlx, the HTTP, mail
//! and Kubernetes clients, and the Nostr SDK. Only normal dependencies count (what ships in the
//! binary); dev- and build-dependencies are free. Every violation is listed at once.
//!
//! It lives here because the server is the one crate that sees all the others; it runs with
//! `cargo test --workspace` like any other test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

const CORE: &str = "care-core";
const LEDGER: &str = "care-ledger";
const DOMAINS: &str = "care-domains";
const NOSTR: &str = "care-nostr";
const FAKES: &str = "care-fakes";
const SERVER: &str = "care-mcp";

/// The workspace crates each workspace crate may depend on. Arrows point inward, to core; the
/// fakes are test and sandbox infrastructure, reached by the server only through `sandbox`.
const ARROWS: &[(&str, &[&str])] = &[
    (CORE, &[]),
    (LEDGER, &[CORE]),
    (NOSTR, &[CORE]),
    (DOMAINS, &[CORE]),
    (FAKES, &[]),
    (SERVER, &[CORE, DOMAINS, LEDGER, NOSTR, FAKES]),
];

/// How far a third-party crate's confinement reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Only naming it as a direct dependency counts: hyper and hyper-util also serve (axum in the
    /// fakes), so meeting them deeper says nothing about a client.
    Direct,
    /// Reaching it through any chain of third-party crates counts too.
    Closure,
}
use Reach::{Closure, Direct};

/// A third-party crate (a trailing `*` names a family: `sqlx*` is sqlx, sqlx-core, ...) that
/// only `owners` may depend on.
#[derive(Debug)]
struct Confined {
    krate: &'static str,
    reach: Reach,
    owners: &'static [&'static str],
    what: &'static str,
}

const fn confine(
    krate: &'static str,
    reach: Reach,
    owners: &'static [&'static str],
    what: &'static str,
) -> Confined {
    Confined {
        krate,
        reach,
        owners,
        what,
    }
}

const MCP: &str = "the MCP SDK";
const SQL: &str = "the SQL toolkit";
const HTTP: &str = "an HTTP client";
const MAIL: &str = "a mail client";
const K8S: &str = "a Kubernetes client";
const NOSTR_SDK: &str = "the Nostr SDK";

/// One rule a line.
const CONFINED: &[Confined] = &[
    confine("rmcp*", Closure, &[SERVER], MCP),
    confine("sqlx*", Closure, &[LEDGER], SQL),
    confine("rusqlite", Closure, &[LEDGER], SQL),
    confine("libsqlite3-sys", Closure, &[LEDGER], SQL),
    confine("reqwest", Closure, &[DOMAINS], HTTP),
    confine("hyper-rustls", Closure, &[DOMAINS], HTTP),
    confine("hyper-tls", Closure, &[DOMAINS], HTTP),
    confine("hyper", Direct, &[DOMAINS], HTTP),
    confine("hyper-util", Direct, &[DOMAINS], HTTP),
    confine("ureq", Closure, &[DOMAINS], HTTP),
    confine("isahc", Closure, &[DOMAINS], HTTP),
    confine("attohttpc", Closure, &[DOMAINS], HTTP),
    confine("curl", Closure, &[DOMAINS], HTTP),
    confine("lettre", Closure, &[DOMAINS], MAIL),
    confine("async-imap", Closure, &[DOMAINS], MAIL),
    confine("imap", Closure, &[DOMAINS], MAIL),
    confine("async-smtp", Closure, &[DOMAINS], MAIL),
    confine("mail-send", Closure, &[DOMAINS], MAIL),
    confine("mail-parser", Closure, &[DOMAINS], MAIL),
    confine("mailparse", Closure, &[DOMAINS], MAIL),
    confine("kube*", Closure, &[DOMAINS], K8S),
    confine("k8s-openapi", Closure, &[DOMAINS], K8S),
    confine("nostr*", Closure, &[NOSTR], NOSTR_SDK),
];

impl Confined {
    fn matches(&self, name: &str) -> bool {
        match self.krate.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == self.krate,
        }
    }
}

/// The part of `cargo metadata --format-version 1` the check reads.
#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_members: Vec<String>,
    resolve: Resolve,
}

#[derive(Debug, Deserialize)]
struct Package {
    id: String,
    name: String,
    /// As declared in the manifest: every target and every optional dependency.
    dependencies: Vec<Dependency>,
}

#[derive(Debug, Deserialize)]
struct Dependency {
    /// The package name, also when the manifest renames it.
    name: String,
    /// `None` for a normal dependency, else "dev" or "build".
    kind: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Resolve {
    nodes: Vec<Node>,
}

#[derive(Debug, Deserialize)]
struct Node {
    id: String,
    deps: Vec<NodeDep>,
}

#[derive(Debug, Deserialize)]
struct NodeDep {
    pkg: String,
    dep_kinds: Vec<DepKind>,
}

#[derive(Debug, Deserialize)]
struct DepKind {
    kind: Option<String>,
}

/// Every broken arrow, one line each: the dependency path, then why it may not be there.
fn violations(meta: &Metadata) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let name_of: HashMap<&str, &str> = meta
        .packages
        .iter()
        .map(|p| (p.id.as_str(), p.name.as_str()))
        .collect();
    let members: HashSet<&str> = meta.workspace_members.iter().map(String::as_str).collect();
    let member_names: BTreeSet<&str> = members
        .iter()
        .filter_map(|id| name_of.get(id).copied())
        .collect();

    // A stale or misspelt table would silently check nothing.
    let table_names = ARROWS
        .iter()
        .flat_map(|(from, to)| std::iter::once(from).chain(to.iter()))
        .chain(CONFINED.iter().flat_map(|c| c.owners.iter()));
    for name in table_names {
        if !member_names.contains(name) {
            found.insert(format!(
                "{name}: named in the rule tables but not a workspace package"
            ));
        }
    }

    let confined_by = |name: &str| CONFINED.iter().find(|c| c.matches(name));
    let broken = |from: &str, dep: &str, reach: Reach| {
        confined_by(dep)
            .filter(|c| (reach == Direct || c.reach == Closure) && !c.owners.contains(&from))
    };

    // Direct dependencies from the manifests: optional ones and those of every target count.
    for pkg in meta
        .packages
        .iter()
        .filter(|p| members.contains(p.id.as_str()))
    {
        let Some((_, allowed)) = ARROWS.iter().find(|(name, _)| *name == pkg.name) else {
            found.insert(format!(
                "{}: a workspace package without a row in ARROWS",
                pkg.name
            ));
            continue;
        };
        for dep in pkg.dependencies.iter().filter(|d| d.kind.is_none()) {
            if member_names.contains(dep.name.as_str()) {
                if !allowed.contains(&dep.name.as_str()) {
                    let may = if allowed.is_empty() {
                        "on no workspace crate".to_owned()
                    } else {
                        format!("only on {}", allowed.join(", "))
                    };
                    found.insert(format!(
                        "{} -> {}: {} may depend {may}",
                        pkg.name, dep.name, pkg.name
                    ));
                }
            } else if let Some(rule) = broken(&pkg.name, &dep.name, Direct) {
                found.insert(format!(
                    "{} -> {}: {} belongs to {} only",
                    pkg.name,
                    dep.name,
                    rule.what,
                    rule.owners.join(", ")
                ));
            }
        }
    }

    // Through third-party crates, in the resolved graph (all features): each workspace crate
    // answers for what it pulls in itself, so the walk stops at workspace crates.
    let normal_deps: HashMap<&str, Vec<&str>> = meta
        .resolve
        .nodes
        .iter()
        .map(|n| {
            let deps = n
                .deps
                .iter()
                .filter(|d| d.dep_kinds.iter().any(|k| k.kind.is_none()))
                .map(|d| d.pkg.as_str())
                .filter(|id| !members.contains(id))
                .collect();
            (n.id.as_str(), deps)
        })
        .collect();
    for &root in &members {
        let from = name_of.get(root).copied().unwrap_or(root);
        let mut parent: HashMap<&str, &str> = HashMap::new();
        let mut queue = VecDeque::new();
        for &dep in normal_deps.get(root).into_iter().flatten() {
            if parent.insert(dep, root).is_none() {
                queue.push_back((dep, 1));
            }
        }
        while let Some((id, depth)) = queue.pop_front() {
            let name = name_of.get(id).copied().unwrap_or(id);
            if depth == 1 && broken(from, name, Direct).is_some() {
                // Reported from the manifest above; what it pulls in is the same fault.
                continue;
            }
            if let Some(rule) = broken(from, name, Closure) {
                let mut path = vec![name];
                let mut at = id;
                while let Some(&up) = parent.get(at) {
                    path.push(name_of.get(up).copied().unwrap_or(up));
                    at = up;
                }
                path.reverse();
                found.insert(format!(
                    "{}: {} belongs to {} only",
                    path.join(" -> "),
                    rule.what,
                    rule.owners.join(", ")
                ));
                continue;
            }
            for &dep in normal_deps.get(id).into_iter().flatten() {
                if dep != root && !parent.contains_key(dep) {
                    parent.insert(dep, id);
                    queue.push_back((dep, depth + 1));
                }
            }
        }
    }
    found
}

/// The workspace as cargo resolves it, with every feature of every workspace crate on (the
/// sandbox build included).
fn workspace_metadata() -> Metadata {
    // Cargo sets CARGO for the tests it runs: the same toolchain that built them.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let version = Command::new(&cargo)
        .arg("-vV")
        .output()
        .expect("run cargo -vV");
    let version = String::from_utf8_lossy(&version.stdout);
    let host = version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("cargo -vV names the host");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    // --filter-platform: the host's packages are on disk after the build, so cargo makes no
    // network request (all platforms would fetch Windows-only crates). --locked rather than
    // --offline: a build without --all-features lacks the sandbox's few extra crates, and
    // fetching them beats a spurious failure; CARGO_NET_OFFLINE still forbids it in CI.
    // The manifests' direct dependencies are listed for every target regardless.
    let out = Command::new(&cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--all-features",
        ])
        .args(["--filter-platform", host])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata output")
}

/// Whether `cargo tree` confirms that `root` pulls `krate` in through `first_hop` in a normal
/// (non-test) build. `cargo metadata` resolves features with dev-dependencies unified, so a
/// feature only a test enables (rmcp's HTTP client for the dogfood test) shows as a normal edge
/// there; `cargo tree -e normal` resolves features as `cargo build` does.
fn in_normal_build(root: &str, first_hop: &str, krate: &str) -> bool {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let out = Command::new(&cargo)
        .args([
            "tree",
            "--locked",
            "--all-features",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["-f", "{p}", "-p", root, "-i", krate])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("run cargo tree");
    let text = String::from_utf8_lossy(&out.stdout);
    // No path at all: cargo tree fails ("did not match any packages") or prints nothing.
    out.status.success()
        && text
            .lines()
            .any(|l| l.split_whitespace().next() == Some(first_hop))
}

#[test]
fn dependency_arrows_point_inward() {
    let found: BTreeSet<String> = violations(&workspace_metadata())
        .into_iter()
        .filter(|v| {
            // "a -> b -> ... -> x: ..." through third-party crates: kept if a normal build has it.
            let path: Vec<&str> = v
                .split(':')
                .next()
                .unwrap_or_default()
                .split(" -> ")
                .collect();
            path.len() < 3 || in_normal_build(path[0], path[1], path[path.len() - 1])
        })
        .collect();
    assert!(
        found.is_empty(),
        "dependency arrows broken (ARCHITECTURE.md, \"Layout\"), {} violation(s):\n  {}\n",
        found.len(),
        found.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}

/// A small synthetic workspace, so the walk itself is tested apart from today's graph.
/// A package of the synthetic workspace: its name and its dependencies with their kind.
type Synthetic<'a> = (&'a str, &'a [(&'a str, Option<&'a str>)]);

fn synthetic(packages: &[Synthetic], members: &[&str]) -> Metadata {
    let id = |n: &str| format!("id#{n}");
    Metadata {
        packages: packages
            .iter()
            .map(|(name, deps)| Package {
                id: id(name),
                name: (*name).to_owned(),
                dependencies: deps
                    .iter()
                    .map(|(d, kind)| Dependency {
                        name: (*d).to_owned(),
                        kind: kind.map(str::to_owned),
                    })
                    .collect(),
            })
            .collect(),
        workspace_members: members.iter().map(|m| id(m)).collect(),
        resolve: Resolve {
            nodes: packages
                .iter()
                .map(|(name, deps)| Node {
                    id: id(name),
                    deps: deps
                        .iter()
                        .map(|(d, kind)| NodeDep {
                            pkg: id(d),
                            dep_kinds: vec![DepKind {
                                kind: kind.map(str::to_owned),
                            }],
                        })
                        .collect(),
                })
                .collect(),
        },
    }
}

const ALL: &[&str] = &[CORE, LEDGER, NOSTR, DOMAINS, FAKES, SERVER];

#[test]
fn the_walk_finds_clients_behind_third_party_crates_and_ignores_dev_and_servers() {
    let meta = synthetic(
        &[
            (CORE, &[("wrapper", None), ("sqlx", Some("dev"))]),
            (LEDGER, &[(CORE, None), ("sqlx", None)]),
            (NOSTR, &[(CORE, None), ("nostr-sdk", None)]),
            (
                DOMAINS,
                &[(CORE, None), (LEDGER, Some("dev")), ("reqwest", None)],
            ),
            (FAKES, &[("axum", None), ("reqwest", Some("dev"))]),
            (
                SERVER,
                &[(CORE, None), (DOMAINS, None), (LEDGER, None), (NOSTR, None)],
            ),
            ("wrapper", &[("inner", None)]),
            ("inner", &[("reqwest", None)]),
            ("axum", &[("hyper", None), ("hyper-util", None)]),
            (
                "reqwest",
                &[
                    ("hyper", None),
                    ("hyper-util", None),
                    ("hyper-rustls", None),
                ],
            ),
            ("nostr-sdk", &[("nostr", None)]),
            ("sqlx", &[]),
            ("nostr", &[]),
            ("hyper", &[]),
            ("hyper-util", &[]),
            ("hyper-rustls", &[]),
        ],
        ALL,
    );
    let found: Vec<_> = violations(&meta).into_iter().collect();
    assert_eq!(
        found,
        ["care-core -> wrapper -> inner -> reqwest: an HTTP client belongs to care-domains only"]
    );
}

#[test]
fn broken_workspace_arrows_and_direct_uses_are_each_named() {
    let meta = synthetic(
        &[
            (CORE, &[("rmcp", None), ("reqwest", None)]),
            (LEDGER, &[(CORE, None)]),
            (NOSTR, &[(CORE, None)]),
            (DOMAINS, &[(CORE, None), (LEDGER, None), (NOSTR, None)]),
            (FAKES, &[(CORE, None), ("hyper", None)]),
            (SERVER, &[]),
            ("care-extra", &[]),
            ("rmcp", &[]),
            ("reqwest", &[("hyper-rustls", None)]),
            ("hyper", &[]),
            ("hyper-rustls", &[]),
        ],
        &[CORE, LEDGER, NOSTR, DOMAINS, FAKES, SERVER, "care-extra"],
    );
    let found: Vec<_> = violations(&meta).into_iter().collect();
    assert_eq!(
        found,
        [
            "care-core -> reqwest: an HTTP client belongs to care-domains only",
            "care-core -> rmcp: the MCP SDK belongs to care-mcp only",
            "care-domains -> care-ledger: care-domains may depend only on care-core",
            "care-domains -> care-nostr: care-domains may depend only on care-core",
            "care-extra: a workspace package without a row in ARROWS",
            "care-fakes -> care-core: care-fakes may depend on no workspace crate",
            "care-fakes -> hyper: an HTTP client belongs to care-domains only",
        ]
    );
}

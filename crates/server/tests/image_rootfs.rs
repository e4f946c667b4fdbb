//! The container image's root filesystem runs the ops role as its Deployment would: the
//! rootfs unpacked from the image built by `scripts/image-test` (which sets
//! `CARE_TEST_IMAGE_ROOT`; no container runtime can run here), mounted read-only in a mount
//! namespace, the Deployment's Secret volumes and the kubelet's service-account files mounted
//! where the manifest puts them, `chroot` as uid/gid 65532, and exactly the Deployment's
//! variables (plus the two the kubelet adds), and the `/etc/hosts` and `/etc/resolv.conf` a
//! kubelet mounts into every container. Then a full MCP handshake, `tools/list`, and one ledger
//! call against a fresh Postgres database reached by a host name, as a pod reaches a Service.
//! The image holds no shared library: the binary is linked statically (`scripts/build-binary`)
//! and must find names and randomness with nothing but the kernel and those two files.
//!
//! Without `CARE_TEST_IMAGE_ROOT` this test has nothing to run (the workspace run);
//! `scripts/image-test` fails unless the run below printed its last line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek, SeekFrom};
use std::net::{IpAddr, ToSocketAddrs};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use care_core::catalog::{self, Role};
use common::{Session, block_on};
use serde_json::{Value, json};

/// Where Kubernetes mounts a pod's service account (read by the cluster domain).
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// Throwaway secp256k1 keys: secret 1 (the server's) and the x-coordinate of 2·G (an approver).
const SERVER_SECRET: &str = "0000000000000000000000000000000000000000000000000000000000000001";
const APPROVER_PUBLIC: &str = "c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5";
/// The database's host name in the pod's `DATABASE_URL`, found through the mounted `/etc/hosts`
/// (the image's `/etc/nsswitch.conf` puts files before DNS, as a Kubernetes `hostAliases`
/// entry needs).
const DATABASE_HOST: &str = "care-postgres.care-mcp.svc.cluster.local";
/// What `scripts/image-test` looks for in the output: the run got to the end.
const DONE: &str =
    "image rootfs: ops served as 65532 read-only through a handshake and a ledger call";

fn manifest(path: &str) -> Value {
    let file = format!("{}/../../deploy/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_saphyr::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// A file the way the kubelet projects a Secret with `fsGroup` 65532: root-owned, group 65532.
fn secret_file(path: &Path, text: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::chown(path, Some(0), Some(65532)).unwrap();
    std::os::unix::fs::chown(path.parent().unwrap(), Some(0), Some(65532)).unwrap();
}

/// A throwaway self-signed CA certificate (PEM) for the service account's `ca.crt`.
fn throwaway_ca(dir: &Path) -> String {
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=care-mcp-image-test"])
        .arg("-keyout")
        .arg(dir.join("ca.key"))
        .arg("-out")
        .arg(dir.join("ca.pem"))
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl");
    assert!(status.success());
    std::fs::read_to_string(dir.join("ca.pem")).unwrap()
}

fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[test]
fn the_image_serves_ops_read_only_as_65532() {
    let Ok(root) = std::env::var("CARE_TEST_IMAGE_ROOT") else {
        eprintln!("CARE_TEST_IMAGE_ROOT unset: scripts/image-test runs this test");
        return;
    };
    let root = PathBuf::from(root);
    assert!(
        root.join("usr/local/bin/care-mcp-ops").exists(),
        "not a care-mcp rootfs"
    );
    assert_static_without_libraries(&root);
    let (db_url, _db) = block_on(care_ledger::test_support::fresh_postgres_db());
    let work = tempfile::tempdir().unwrap();
    let (db_url, db_address) = by_host_name(&db_url);

    let deployment = manifest("base/roles/care-mcp-ops.yaml");
    let config = manifest("base/configmap.yaml");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];

    // The ConfigMap's values, with what this machine has in place of the cluster's.
    let mut values: BTreeMap<String, String> = config["data"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect();
    for (k, v) in [
        ("DATABASE_URL", db_url.as_str()),
        ("CARE_APPROVERS", APPROVER_PUBLIC),
        // Nothing listens there: the channel retries in the background, the role serves.
        ("CARE_NOSTR_RELAYS", "ws://127.0.0.1:9"),
        ("CARE_APPROVAL_CHANNEL", "care-approvals"),
        ("CARE_KUBE_NAMESPACES", "shop"),
    ] {
        values.insert(k.to_owned(), v.to_owned());
    }
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for var in container["env"].as_array().unwrap() {
        let name = var["name"].as_str().unwrap().to_owned();
        let value = match var["value"].as_str() {
            Some(literal) => literal.to_owned(),
            None => {
                let key = var["valueFrom"]["configMapKeyRef"]["key"].as_str().unwrap();
                values[key].clone()
            }
        };
        env.insert(name, value);
    }
    // What the kubelet adds (service links are off; these two are always set).
    env.insert("KUBERNETES_SERVICE_HOST".into(), "127.0.0.1".into());
    env.insert("KUBERNETES_SERVICE_PORT".into(), "6443".into());

    // The Secret volumes' files where the Deployment mounts them, with throwaway contents.
    let contents = BTreeMap::from([
        (
            "care-mcp-database",
            "sk-demo-database-password\n".to_owned(),
        ),
        (
            "care-mcp-audit-salt",
            "sk-demo-audit-salt-0123456789abcdef\n".to_owned(),
        ),
        ("care-mcp-nostr", format!("{SERVER_SECRET}\n")),
    ]);
    let mut mounts: Vec<(PathBuf, String)> = Vec::new();
    for mount in container["volumeMounts"].as_array().unwrap() {
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap();
        let secret = &volume["secret"];
        let name = secret["secretName"].as_str().unwrap();
        let source = work.path().join(name);
        for item in secret["items"].as_array().unwrap() {
            let text = contents
                .get(name)
                .unwrap_or_else(|| panic!("no content for {name}"));
            let mode = secret["defaultMode"].as_u64().unwrap() as u32;
            secret_file(&source.join(item["path"].as_str().unwrap()), text, mode);
        }
        mounts.push((source, mount["mountPath"].as_str().unwrap().to_owned()));
    }
    assert_eq!(pod["automountServiceAccountToken"], true);
    let account = work.path().join("serviceaccount");
    let ca = throwaway_ca(work.path());
    secret_file(
        &account.join("token"),
        "sk-demo-service-account-token",
        0o644,
    );
    secret_file(&account.join("ca.crt"), &ca, 0o644);
    secret_file(&account.join("namespace"), "care-mcp", 0o644);
    mounts.push((account, SERVICE_ACCOUNT_DIR.to_owned()));
    // The kubelet's two name-resolution files. The cluster's DNS is a port nothing answers on
    // here: the database's name must come from the hosts file.
    let hosts = work.path().join("hosts");
    std::fs::write(
        &hosts,
        format!("127.0.0.1\tlocalhost\n{db_address}\t{DATABASE_HOST}\n"),
    )
    .unwrap();
    let resolv = work.path().join("resolv.conf");
    std::fs::write(
        &resolv,
        "nameserver 127.0.0.1\nsearch care-mcp.svc.cluster.local\noptions ndots:5 timeout:1 attempts:1\n",
    )
    .unwrap();
    mounts.push((hosts, "/etc/hosts".to_owned()));
    mounts.push((resolv, "/etc/resolv.conf".to_owned()));

    // Mount points exist in a container's rootfs because the runtime makes them; here the
    // unpacked copy is ours to add them to before it is mounted read-only.
    for (source, target) in &mounts {
        let point = root.join(target.trim_start_matches('/'));
        if source.is_dir() {
            std::fs::create_dir_all(point).unwrap();
        } else {
            std::fs::write(point, "").unwrap();
        }
    }
    let root_text = root.to_str().unwrap();
    // `env -i` drops PATH: chroot is named by its path, found before.
    let mut script = String::from("set -e\nchroot=$(command -v chroot)\nmount --make-rprivate /\n");
    script += &format!(
        "mount --bind {r} {r}\nmount -o remount,bind,ro {r}\n",
        r = single_quoted(root_text)
    );
    for (source, target) in &mounts {
        let at = format!("{root_text}{target}");
        script += &format!(
            "mount --bind {s} {t}\nmount -o remount,bind,ro {t}\n",
            s = single_quoted(source.to_str().unwrap()),
            t = single_quoted(&at)
        );
    }
    let command = strings(&container["command"]);
    assert_eq!(command, ["/usr/local/bin/care-mcp-ops"]);
    script += "exec env -i";
    for (k, v) in &env {
        script += &format!(" {}", single_quoted(&format!("{k}={v}")));
    }
    script += &format!(
        " \"$chroot\" --userspec=65532:65532 {} {}\n",
        single_quoted(root_text),
        command[0]
    );

    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "--", "/bin/sh", "-c", &script]);
    let mut session = Session::start(cmd);

    // The process: uid and gid 65532, its root read-only, exactly the Deployment's variables.
    let pid = session.pid();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    for field in ["Uid:", "Gid:"] {
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        let ids: Vec<&str> = line.split_whitespace().skip(1).collect();
        assert_eq!(ids, ["65532"; 4], "{line}");
    }
    let mountinfo = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
    // Mount points are shown relative to the process's root: its root is "/".
    let root_mount = mountinfo
        .lines()
        .find(|l| l.split_whitespace().nth(4) == Some("/"))
        .unwrap_or_else(|| panic!("no root mount in {mountinfo}"));
    let options = root_mount.split_whitespace().nth(5).unwrap();
    assert!(options.split(',').any(|o| o == "ro"), "{root_mount}");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let names: BTreeSet<String> = environ
        .split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| {
            String::from_utf8_lossy(v)
                .split('=')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(names, env.keys().cloned().collect::<BTreeSet<_>>());

    let expected: BTreeSet<String> = catalog::tools_of(Role::Ops)
        .map(|e| e.name.to_owned())
        .collect();
    assert_eq!(session.tool_names(), expected);
    let recorded = session.call_ok(
        "kpi_record",
        json!({"metric": "image_test_metric", "value": 3.5, "target": 4}),
    );
    assert!(recorded.is_object(), "{recorded}");
    let report = session.call_ok("kpi_report", json!({"metric": "image_test_metric"}));
    assert!(report.to_string().contains("3.5"), "{report}");
    let finished = session.finish();
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    finished.assert_stdout_is_protocol();
    eprintln!("{DONE}");
}

/// The URL with its host replaced by [`DATABASE_HOST`], and the address that name must resolve to.
fn by_host_name(db_url: &str) -> (String, IpAddr) {
    let mut url = reqwest::Url::parse(db_url).unwrap();
    let port = url.port().unwrap_or(5432);
    // An IPv6 literal comes bracketed.
    let host = url
        .host_str()
        .unwrap()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let address = host.parse::<IpAddr>().unwrap_or_else(|_| {
        let mut found = (host, port).to_socket_addrs().unwrap();
        found.next().unwrap().ip()
    });
    url.set_host(Some(DATABASE_HOST)).unwrap();
    (url.to_string(), address)
}

/// The image as `scripts/build-binary` links it: no program interpreter in the binary and no
/// shared object anywhere in the root, so nothing in it depends on a glibc of some version.
fn assert_static_without_libraries(root: &Path) {
    let binary = root.join("usr/local/bin/care-mcp");
    assert!(
        !has_program_interpreter(&binary),
        "{} names a program interpreter: not linked statically",
        binary.display()
    );
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                !(name.ends_with(".so") || name.contains(".so.")),
                "shared object in the image: {}",
                entry.path().display()
            );
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            }
        }
    }
}

/// Whether a 64-bit little-endian ELF file has a PT_INTERP program header.
fn has_program_interpreter(path: &Path) -> bool {
    const PT_INTERP: u32 = 3;
    let mut file = std::fs::File::open(path).unwrap();
    let mut header = [0u8; 64];
    file.read_exact(&mut header).unwrap();
    assert_eq!(
        &header[..5],
        b"\x7fELF\x02",
        "not a 64-bit ELF: {}",
        path.display()
    );
    let table_offset = u64::from_le_bytes(header[0x20..0x28].try_into().unwrap());
    let entry_size = usize::from(u16::from_le_bytes(header[0x36..0x38].try_into().unwrap()));
    let entries = usize::from(u16::from_le_bytes(header[0x38..0x3a].try_into().unwrap()));
    let mut table = vec![0u8; entry_size * entries];
    file.seek(SeekFrom::Start(table_offset)).unwrap();
    file.read_exact(&mut table).unwrap();
    table
        .chunks_exact(entry_size)
        .any(|entry| u32::from_le_bytes(entry[..4].try_into().unwrap()) == PT_INTERP)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

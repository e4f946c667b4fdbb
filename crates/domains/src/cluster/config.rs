//! `CARE_KUBE_*`, `CARE_CLUSTER_WRITE` and where the Kubernetes API server is, read with the
//! configuration kit (`care_core::env`): every problem collected by variable name, never a
//! value. Credentials read here (tokens, client keys) are kept for the outbound scan; the bearer
//! token of `CARE_KUBE_TOKEN_FILE` or of the pod's service account is a [`RotatingSecret`]: the
//! client sends its current value, and the scan learns each new one before it is sent.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `CARE_KUBE_NAMESPACES` | the namespaces the tools may see, comma or space separated (≤ 20) | required |
//! | `CARE_CLUSTER_WRITE` | exactly `1` lets an approved restart go out (besides `CARE_WRITE_ENABLED=1`) | off |
//! | `CARE_KUBE_API_URL` | an API server reached directly: `https://`, or `http://` on loopback (`kubectl proxy`) | unset |
//! | `CARE_KUBE_TOKEN_FILE` | with `CARE_KUBE_API_URL`: a bearer token file (re-read as it rotates) | none |
//! | `CARE_KUBE_CA_FILE` | with `CARE_KUBE_API_URL`: the CA bundle that signs the server's certificate | system roots |
//! | `KUBECONFIG` | one kubeconfig file; its current context is used | unset |
//! | `KUBERNETES_SERVICE_HOST`, `_PORT` | set by Kubernetes in a pod: the in-cluster service account is used | — |
//!
//! The first of `CARE_KUBE_API_URL`, `KUBECONFIG` and the in-cluster variables that is set
//! decides. No proxy is used (the environment's `HTTPS_PROXY` is ignored), a server that is
//! not `https` (except on loopback) or whose certificate is not verified is refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use care_core::rotation::RotatingSecret;

use care_core::env::{self, EnvReader, EnvSource, ExposeSecret, SecretString};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// More namespaces than one ops agent should watch; bounds the overview's requests.
pub const MAX_NAMESPACES: usize = 20;
/// Where Kubernetes mounts a pod's service account.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// Who needs the required variables, in start errors.
const NEEDED_BY: &str = "the Kubernetes tools of this role";
/// Connecting to the API server (the whole call is bounded by the kit's deadline).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Waiting for an answer.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How the API server is reached (for logs and start errors; never a credential).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiSource {
    /// `CARE_KUBE_API_URL`.
    Direct,
    /// `KUBECONFIG`.
    Kubeconfig,
    /// The pod's service account.
    InCluster,
}

/// Parsed Kubernetes configuration.
#[derive(Clone)]
pub struct ClusterConfig {
    /// The namespaces the tools may see and act in.
    pub namespaces: Vec<String>,
    /// `CARE_CLUSTER_WRITE` is exactly `1`.
    pub write: bool,
    pub source: ApiSource,
    /// What kube's client is built from.
    pub kube: kube::Config,
    /// Credentials read at start, for the outbound scan.
    pub secrets: Vec<SecretString>,
    /// The bearer token file (direct or in-cluster), re-read when it changes; kube is given
    /// its current value rather than the path (kube would re-read it only once a minute).
    pub token: Option<Arc<RotatingSecret>>,
}

impl std::fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterConfig")
            .field("namespaces", &self.namespaces.len())
            .field("write", &self.write)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// A DNS-1123 label: what a namespace name is (1..=63 of `[a-z0-9-]`, alphanumeric at both ends).
pub fn is_dns_label(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-')
}

/// A DNS-1123 subdomain: what a workload name is (1..=253, dot-separated labels).
pub fn is_dns_subdomain(value: &str) -> bool {
    !value.is_empty() && value.len() <= 253 && value.split('.').all(is_dns_label)
}

impl ClusterConfig {
    /// Reads the configuration; `None` when anything is wrong, the reasons recorded in `r` by
    /// variable name.
    pub fn read(r: &mut EnvReader<'_>) -> Option<ClusterConfig> {
        let listed = r.required("CARE_KUBE_NAMESPACES", NEEDED_BY);
        let namespaces = r.list("CARE_KUBE_NAMESPACES", "a namespace name", is_dns_label);
        let mut ok = listed.is_some();
        if listed.is_some() && namespaces.is_empty() {
            r.problem("CARE_KUBE_NAMESPACES names no namespace");
            ok = false;
        }
        if namespaces.len() > MAX_NAMESPACES {
            r.problem(format!(
                "CARE_KUBE_NAMESPACES names more than {MAX_NAMESPACES} namespaces"
            ));
            ok = false;
        }
        let write = r.flag("CARE_CLUSTER_WRITE");
        let api = read_api(r);
        match api {
            Some((source, mut kube, secrets, token)) if ok => {
                // One bounded attempt per call: retries and proxies are not kube's to decide.
                kube.default_retry = false;
                kube.proxy_url = None;
                kube.connect_timeout = Some(CONNECT_TIMEOUT);
                kube.read_timeout = Some(READ_TIMEOUT);
                kube.reset_reader_on_write = true;
                Some(ClusterConfig {
                    namespaces,
                    write,
                    source,
                    kube,
                    secrets,
                    token,
                })
            }
            _ => None,
        }
    }

    /// The configuration from `env` alone, every problem at once.
    pub fn from_env(env: &dyn EnvSource) -> Result<ClusterConfig, Vec<String>> {
        let mut r = EnvReader::new(env);
        let config = ClusterConfig::read(&mut r);
        r.finish()?;
        config.ok_or_else(|| vec!["Kubernetes configuration incomplete".to_owned()])
    }

    /// True when `namespace` is in the allowlist.
    pub fn allows(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|n| n == namespace)
    }
}

type Api = (
    ApiSource,
    kube::Config,
    Vec<SecretString>,
    Option<Arc<RotatingSecret>>,
);

/// What kube sends is the file as it is: a newline would make every request fail.
fn check_direct_token(text: &str) -> Result<String, &'static str> {
    if text.is_empty() || text.trim() != text {
        return Err("must hold the token alone, without a newline or spaces (printf %s)");
    }
    Ok(text.to_owned())
}

/// The service account token as Kubernetes mounts it (trimmed, to be safe).
fn check_mounted_token(text: &str) -> Result<String, &'static str> {
    let token = text.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err("is not a bearer token");
    }
    Ok(token.to_owned())
}

/// The first configured way to the API server; `None` after recording a problem.
fn read_api(r: &mut EnvReader<'_>) -> Option<Api> {
    if r.optional("CARE_KUBE_API_URL").is_some() {
        return direct(r);
    }
    for name in ["CARE_KUBE_TOKEN_FILE", "CARE_KUBE_CA_FILE"] {
        if r.optional(name).is_some() {
            r.problem(format!("{name} is set without CARE_KUBE_API_URL"));
            return None;
        }
    }
    if r.optional("KUBECONFIG").is_some() {
        return kubeconfig(r);
    }
    if let Some(host) = r.optional("KUBERNETES_SERVICE_HOST") {
        let port = r.optional("KUBERNETES_SERVICE_PORT");
        return in_cluster(r, &host, port.as_deref(), Path::new(SERVICE_ACCOUNT_DIR));
    }
    r.problem(format!(
        "no Kubernetes API server for {NEEDED_BY}: set KUBECONFIG or CARE_KUBE_API_URL, or run in a pod"
    ));
    None
}

fn uri(r: &mut EnvReader<'_>, name: &str, url: &str) -> Option<http::Uri> {
    if !env::is_upstream_url(url) {
        r.problem(format!(
            "{name} must be an https:// URL (http:// only for 127.0.0.1, ::1 or localhost) without credentials, query or fragment"
        ));
        return None;
    }
    match url.trim_end_matches('/').parse::<http::Uri>() {
        Ok(uri) => Some(uri),
        Err(_) => {
            r.problem(format!("{name} is not a URL"));
            None
        }
    }
}

/// A readable file, named by the variable (problems name the variable, never the path).
fn existing_file(r: &mut EnvReader<'_>, name: &str) -> Option<Option<PathBuf>> {
    let Some(path) = r.optional(name) else {
        return Some(None);
    };
    if Path::new(&path).is_file() {
        Some(Some(PathBuf::from(path)))
    } else {
        r.problem(format!("{name} names a file that cannot be read"));
        None
    }
}

/// `CARE_KUBE_API_URL`, its token file (checked like every secret file) and CA bundle.
fn direct(r: &mut EnvReader<'_>) -> Option<Api> {
    let url = r.upstream_url("CARE_KUBE_API_URL", None)?;
    let uri = uri(r, "CARE_KUBE_API_URL", &url)?;
    let token_path = r.optional("CARE_KUBE_TOKEN_FILE");
    let token = r.rotating_secret_file("CARE_KUBE_TOKEN_FILE", None, check_direct_token);
    if token_path.is_some() && token.is_none() {
        return None;
    }
    let ca_file = existing_file(r, "CARE_KUBE_CA_FILE")?;
    let mut config = kube::Config::new(uri);
    // kube re-reads the CA file; the token is the client's to give (see `token`).
    config.root_cert_file = ca_file;
    Some((ApiSource::Direct, config, Vec::new(), token))
}

/// `KUBECONFIG`: one file (it holds credentials: checked like every secret file), its current
/// context. `insecure-skip-tls-verify` is refused.
fn kubeconfig(r: &mut EnvReader<'_>) -> Option<Api> {
    let listed = r.optional("KUBECONFIG").unwrap_or_default();
    if listed.contains(':') {
        r.problem("KUBECONFIG must name one file");
        return None;
    }
    let text = r.secret_file("KUBECONFIG", None)?;
    let Ok(file) = Kubeconfig::from_yaml(text.expose_secret()) else {
        r.problem("KUBECONFIG names a file that is not a kubeconfig");
        return None;
    };
    let secrets = kubeconfig_secrets(&file);
    // kube's loader is async in signature only (no I/O beyond what is already read).
    let loaded = futures::executor::block_on(kube::Config::from_custom_kubeconfig(
        file,
        &KubeConfigOptions::default(),
    ));
    let config = match loaded {
        Ok(config) => config,
        Err(_) => {
            r.problem("KUBECONFIG has no usable current context (context, cluster and server)");
            return None;
        }
    };
    if config.accept_invalid_certs {
        r.problem("KUBECONFIG turns certificate checks off (insecure-skip-tls-verify): refused");
        return None;
    }
    let url = config.cluster_url.to_string();
    uri(r, "the KUBECONFIG server", &url)?;
    Some((ApiSource::Kubeconfig, config, secrets, None))
}

/// Every inline credential of a kubeconfig (tokens, passwords, client keys).
fn kubeconfig_secrets(file: &Kubeconfig) -> Vec<SecretString> {
    file.auth_infos
        .iter()
        .filter_map(|named| named.auth_info.as_ref())
        .flat_map(|user| [&user.token, &user.password, &user.client_key_data])
        .flatten()
        .map(|s| SecretString::from(s.expose_secret().trim().to_owned()))
        .collect()
}

/// The pod's service account: `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, its
/// token (followed as it rotates, see `ClusterConfig::token`) and CA (re-read by kube).
fn in_cluster(
    r: &mut EnvReader<'_>,
    host: &str,
    port: Option<&str>,
    account_dir: &Path,
) -> Option<Api> {
    let port = port.unwrap_or("443");
    if !port.bytes().all(|b| b.is_ascii_digit()) || port.is_empty() || port.len() > 5 {
        r.problem("KUBERNETES_SERVICE_PORT is not a port");
        return None;
    }
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    let Ok(uri) = format!("https://{host}:{port}").parse::<http::Uri>() else {
        r.problem("KUBERNETES_SERVICE_HOST is not a host name");
        return None;
    };
    let token_file = account_dir.join("token");
    let ca_file = account_dir.join("ca.crt");
    // Kubernetes mounts the token readable by the pod's user (mode 0644 by default): read it
    // as it is, without the secret-file permission rule.
    let Ok(token) = RotatingSecret::open_mounted(
        "the in-cluster service account token",
        &token_file,
        check_mounted_token,
    ) else {
        r.problem(
            "the in-cluster service account token cannot be read (KUBERNETES_SERVICE_HOST is set)",
        );
        return None;
    };
    if !ca_file.is_file() {
        r.problem(
            "the in-cluster service account CA cannot be read (KUBERNETES_SERVICE_HOST is set)",
        );
        return None;
    }
    let mut config = kube::Config::new(uri);
    config.root_cert_file = Some(ca_file);
    Some((
        ApiSource::InCluster,
        config,
        Vec::new(),
        Some(Arc::new(token)),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use care_core::env::MapEnv;
    use std::os::unix::fs::PermissionsExt;

    fn config(pairs: &[(&str, &str)]) -> Result<ClusterConfig, Vec<String>> {
        ClusterConfig::from_env(&MapEnv::of(pairs.iter().copied()))
    }

    fn private_file(dir: &Path, name: &str, text: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path.display().to_string()
    }

    #[test]
    fn nothing_set_names_the_namespaces_and_the_api_server() {
        let problems = config(&[]).unwrap_err();
        assert!(
            problems
                .iter()
                .any(|p| p.contains("CARE_KUBE_NAMESPACES is required"))
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("KUBECONFIG or CARE_KUBE_API_URL"))
        );
    }

    #[test]
    fn a_direct_api_server_with_a_token_file() {
        let dir = tempfile::tempdir().unwrap();
        let token = private_file(dir.path(), "token", "sk-demo-kube-token-0001");
        let c = config(&[
            ("CARE_KUBE_NAMESPACES", "shop, payments shop"),
            ("CARE_KUBE_API_URL", "http://127.0.0.1:8001/"),
            ("CARE_KUBE_TOKEN_FILE", &token),
            ("CARE_CLUSTER_WRITE", "1"),
        ])
        .unwrap();
        assert_eq!(c.namespaces, ["shop", "payments"]);
        assert!(c.write && c.allows("shop") && !c.allows("kube-system"));
        assert_eq!(c.source, ApiSource::Direct);
        assert_eq!(c.kube.cluster_url.to_string(), "http://127.0.0.1:8001/");
        // The token is the client's to send (kube would re-read the file once a minute only).
        assert!(c.kube.auth_info.token_file.is_none());
        assert!(!c.kube.default_retry && c.kube.proxy_url.is_none());
        assert!(c.secrets.is_empty());
        let rotating = c.token.as_ref().unwrap();
        assert_eq!(rotating.variable(), "CARE_KUBE_TOKEN_FILE");
        assert_eq!(rotating.value_now().unwrap(), "sk-demo-kube-token-0001");
        assert!(!format!("{c:?}").contains("sk-demo"));
        // Anything but exactly 1 leaves the restart off.
        let c = config(&[
            ("CARE_KUBE_NAMESPACES", "shop"),
            ("CARE_KUBE_API_URL", "http://127.0.0.1:8001"),
            ("CARE_CLUSTER_WRITE", "yes"),
        ])
        .unwrap();
        assert!(!c.write);
    }

    #[test]
    fn bad_values_are_named_never_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("token");
        std::fs::write(&open, "sk-demo-kube-token-0002").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        let problems = config(&[
            ("CARE_KUBE_NAMESPACES", "shop, Sk-Demo_Bad!"),
            ("CARE_KUBE_API_URL", "http://sk-demo.example.com"),
            ("CARE_KUBE_TOKEN_FILE", open.to_str().unwrap()),
        ])
        .unwrap_err();
        let text = problems.join("\n");
        assert!(text.contains("CARE_KUBE_NAMESPACES entry 2"), "{text}");
        assert!(
            text.contains("CARE_KUBE_API_URL must be an https:// URL"),
            "{text}"
        );
        assert!(!text.to_lowercase().contains("sk-demo"), "{text}");

        let problems = config(&[
            ("CARE_KUBE_NAMESPACES", "shop"),
            ("CARE_KUBE_API_URL", "https://k8s.example.com"),
            ("CARE_KUBE_TOKEN_FILE", open.to_str().unwrap()),
        ])
        .unwrap_err();
        assert!(problems[0].contains("CARE_KUBE_TOKEN_FILE names a file others can read"));

        let newline = private_file(dir.path(), "newline", "sk-demo-kube-token-0005\n");
        let problems = config(&[
            ("CARE_KUBE_NAMESPACES", "shop"),
            ("CARE_KUBE_API_URL", "https://k8s.example.com"),
            ("CARE_KUBE_TOKEN_FILE", &newline),
        ])
        .unwrap_err();
        assert!(problems[0].contains("without a newline"), "{problems:?}");
        assert!(!problems[0].contains("sk-demo"));

        let too_many: Vec<String> = (0..=MAX_NAMESPACES).map(|i| format!("ns{i}")).collect();
        let problems = config(&[
            ("CARE_KUBE_NAMESPACES", &too_many.join(",")),
            ("CARE_KUBE_API_URL", "https://k8s.example.com"),
        ])
        .unwrap_err();
        assert!(problems[0].contains("more than 20 namespaces"));

        let problems = config(&[
            ("CARE_KUBE_NAMESPACES", "shop"),
            ("CARE_KUBE_TOKEN_FILE", "/nonexistent"),
        ])
        .unwrap_err();
        assert!(problems[0].contains("CARE_KUBE_TOKEN_FILE is set without CARE_KUBE_API_URL"));
    }

    const KUBECONFIG: &str = "apiVersion: v1
kind: Config
current-context: demo
clusters:
- name: demo
  cluster:
    server: https://k8s.example.com:6443
contexts:
- name: demo
  context: {cluster: demo, user: care, namespace: shop}
users:
- name: care
  user:
    token: sk-demo-kubeconfig-token-0003
";

    #[test]
    fn a_kubeconfig_gives_its_current_context_and_its_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let path = private_file(dir.path(), "config", KUBECONFIG);
        let c = config(&[("CARE_KUBE_NAMESPACES", "shop"), ("KUBECONFIG", &path)]).unwrap();
        assert_eq!(c.source, ApiSource::Kubeconfig);
        assert_eq!(
            c.kube.cluster_url.to_string(),
            "https://k8s.example.com:6443/"
        );
        assert_eq!(
            c.secrets
                .iter()
                .map(|s| s.expose_secret().to_owned())
                .collect::<Vec<_>>(),
            ["sk-demo-kubeconfig-token-0003"]
        );

        let insecure = private_file(
            dir.path(),
            "insecure",
            &KUBECONFIG.replace(
                "server: https://k8s.example.com:6443",
                "server: https://k8s.example.com:6443\n    insecure-skip-tls-verify: true",
            ),
        );
        let problems =
            config(&[("CARE_KUBE_NAMESPACES", "shop"), ("KUBECONFIG", &insecure)]).unwrap_err();
        assert!(
            problems[0].contains("insecure-skip-tls-verify"),
            "{problems:?}"
        );

        let plain = private_file(
            dir.path(),
            "plain",
            &KUBECONFIG.replace("https://k8s.example.com", "http://k8s.example.com"),
        );
        let problems =
            config(&[("CARE_KUBE_NAMESPACES", "shop"), ("KUBECONFIG", &plain)]).unwrap_err();
        assert!(problems[0].contains("KUBECONFIG server must be an https:// URL"));

        let garbage = private_file(dir.path(), "garbage", "sk-demo: [unclosed");
        let problems =
            config(&[("CARE_KUBE_NAMESPACES", "shop"), ("KUBECONFIG", &garbage)]).unwrap_err();
        assert!(problems[0].contains("not a kubeconfig"));
        assert!(!problems.join(" ").contains("sk-demo"));

        let problems = config(&[
            ("CARE_KUBE_NAMESPACES", "shop"),
            ("KUBECONFIG", &format!("{path}:{path}")),
        ])
        .unwrap_err();
        assert!(problems[0].contains("KUBECONFIG must name one file"));
    }

    #[test]
    fn in_cluster_uses_the_service_account() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "sk-demo-sa-token-0004\n").unwrap();
        std::fs::write(dir.path().join("ca.crt"), "not checked here").unwrap();
        let env = MapEnv::default();
        let mut r = EnvReader::new(&env);
        let (source, kube, secrets, token) =
            in_cluster(&mut r, "10.96.0.1", Some("443"), dir.path()).unwrap();
        assert_eq!(source, ApiSource::InCluster);
        assert_eq!(kube.cluster_url.to_string(), "https://10.96.0.1:443/");
        assert_eq!(
            kube.root_cert_file.as_deref(),
            Some(dir.path().join("ca.crt").as_path())
        );
        assert!(secrets.is_empty());
        // Mounted readable by others (0644): read anyway, trimmed, and followed as it rotates.
        assert_eq!(token.unwrap().value_now().unwrap(), "sk-demo-sa-token-0004");
        let (_, kube, _, _) = in_cluster(&mut r, "fd00::1", None, dir.path()).unwrap();
        assert_eq!(kube.cluster_url.to_string(), "https://[fd00::1]:443/");
        assert!(in_cluster(&mut r, "10.96.0.1", Some("https"), dir.path()).is_none());
        assert!(in_cluster(&mut r, "10.96.0.1", None, Path::new("/nonexistent")).is_none());
        let problems = r.finish().unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");

        // Outside a pod the service account is absent, and the start says so.
        let problems = config(&[
            ("CARE_KUBE_NAMESPACES", "shop"),
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
        ]);
        if !Path::new(SERVICE_ACCOUNT_DIR).exists() {
            assert!(problems.unwrap_err()[0].contains("service account token"));
        }
    }

    #[test]
    fn names_follow_kubernetes_rules() {
        assert!(is_dns_label("shop") && is_dns_label("a-1") && is_dns_label("0"));
        for bad in ["", "-a", "a-", "Shop", "a_b", "a.b", &"a".repeat(64)] {
            assert!(!is_dns_label(bad), "{bad}");
        }
        assert!(is_dns_subdomain("checkout") && is_dns_subdomain("api.v2"));
        assert!(!is_dns_subdomain("a..b") && !is_dns_subdomain("../secrets"));
    }
}

//! Typed reading of `CARE_*` configuration, in one place for the core, the Nostr channel and
//! every domain: required and optional values, lists, URLs that must be https unless loopback,
//! secrets (held in a type that cannot be printed), secret files with a permission check, and
//! integer ranges. Every problem is collected and reported at once, by variable name, never by
//! value.

use std::collections::{BTreeSet, HashMap};
use std::ops::RangeInclusive;
use std::path::Path;
use std::sync::Arc;

use crate::rotation::{RotatingSecret, SecretCheck};

pub use secrecy::{ExposeSecret, SecretString};

/// Where variables come from: the process environment in the binary, a map in tests.
pub trait EnvSource: Send + Sync {
    fn var(&self, name: &str) -> Option<String>;
    /// Every variable name present (to find secret-looking variables for the outbound scan).
    fn names(&self) -> Vec<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn names(&self) -> Vec<String> {
        std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .collect()
    }
}

/// Variables from a map (tests, the sandbox).
#[derive(Debug, Clone, Default)]
pub struct MapEnv(pub HashMap<String, String>);

impl MapEnv {
    pub fn of<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        MapEnv(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl EnvSource for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
    fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

/// Largest secret file read (a key or a token is far smaller).
pub const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// Reads variables and collects every problem; [`EnvReader::finish`] reports them. Every name
/// asked for is recorded ([`EnvReader::names_read`]): startup checks them against the role's
/// declared variables ([`crate::variables`]).
pub struct EnvReader<'a> {
    source: &'a dyn EnvSource,
    problems: Vec<String>,
    read: BTreeSet<String>,
}

impl std::fmt::Debug for EnvReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvReader")
            .field("problems", &self.problems)
            .finish_non_exhaustive()
    }
}

/// Splits a list on commas and whitespace, dropping empty items.
pub fn split_list(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
}

impl<'a> EnvReader<'a> {
    pub fn new(source: &'a dyn EnvSource) -> Self {
        EnvReader {
            source,
            problems: Vec::new(),
            read: BTreeSet::new(),
        }
    }

    /// The value as it is (not trimmed; empty kept), the name recorded.
    pub fn raw(&mut self, name: &str) -> Option<String> {
        if !self.read.contains(name) {
            self.read.insert(name.to_owned());
        }
        self.source.var(name)
    }

    /// Every variable name asked for so far, sorted.
    pub fn names_read(&self) -> impl Iterator<Item = &str> {
        self.read.iter().map(String::as_str)
    }

    pub fn source(&self) -> &'a dyn EnvSource {
        self.source
    }

    /// Records a problem (a sentence naming the variable, never its value).
    pub fn problem(&mut self, sentence: impl Into<String>) {
        self.problems.push(sentence.into());
    }

    /// The trimmed value, `None` when unset or blank.
    pub fn optional(&mut self, name: &str) -> Option<String> {
        self.raw(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// The value; when missing, a problem saying who needs it (`needed_by`, e.g. "the App Store
    /// Connect tools of this role").
    pub fn required(&mut self, name: &str, needed_by: &str) -> Option<String> {
        let value = self.optional(name);
        if value.is_none() {
            self.problem(format!("{name} is required by {needed_by}"));
        }
        value
    }

    /// Exactly `1` is on; anything else is off.
    pub fn flag(&mut self, name: &str) -> bool {
        self.raw(name).as_deref() == Some("1")
    }

    /// A list separated by commas or whitespace; each item must pass `valid` (problems name
    /// the 1-based entry and `what` it should be). Duplicates are dropped.
    pub fn list(&mut self, name: &str, what: &str, valid: impl Fn(&str) -> bool) -> Vec<String> {
        let Some(text) = self.optional(name) else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for (i, item) in split_list(&text).enumerate() {
            if !valid(item) {
                self.problem(format!("{name} entry {} is not {what}", i + 1));
            } else if !out.iter().any(|o| o == item) {
                out.push(item.to_owned());
            }
        }
        out
    }

    /// A whole number in `range`, `default` when unset.
    pub fn int_in(&mut self, name: &str, range: RangeInclusive<u32>, default: u32) -> u32 {
        match self.optional(name) {
            None => default,
            Some(v) => match v.parse::<u32>() {
                Ok(n) if range.contains(&n) => n,
                _ => {
                    self.problem(format!(
                        "{name} must be a whole number from {} to {}",
                        range.start(),
                        range.end()
                    ));
                    default
                }
            },
        }
    }

    /// An `https://` URL without credentials, query or fragment (`http://` only for a loopback
    /// host: fakes and local proxies); `default` when unset. Returned without a trailing slash.
    pub fn upstream_url(&mut self, name: &str, default: Option<&str>) -> Option<String> {
        let value = self.optional(name).or_else(|| default.map(str::to_owned))?;
        if is_upstream_url(&value) {
            Some(value.trim_end_matches('/').to_owned())
        } else {
            self.problem(format!(
                "{name} must be an https:// URL (http:// only for 127.0.0.1, ::1 or localhost) without credentials, query or fragment"
            ));
            None
        }
    }

    /// A secret given in the variable itself.
    pub fn secret(&mut self, name: &str, needed_by: Option<&str>) -> Option<SecretString> {
        let value = match needed_by {
            Some(who) => self.required(name, who),
            None => self.optional(name),
        };
        value.map(SecretString::from)
    }

    /// A secret read from the file the variable names. The file must be a regular file of at
    /// most [`MAX_SECRET_FILE_BYTES`] that nobody but its owner and group can read or write
    /// (Kubernetes mounts secrets group-readable with `fsGroup`; world access is refused).
    pub fn secret_file(&mut self, name: &str, needed_by: Option<&str>) -> Option<SecretString> {
        let path = match needed_by {
            Some(who) => self.required(name, who),
            None => self.optional(name),
        }?;
        match read_secret_file(Path::new(&path)) {
            Ok(text) => Some(SecretString::from(text)),
            Err(reason) => {
                self.problem(format!("{name} {reason}"));
                None
            }
        }
    }

    /// A secret given inline (`name`) or, as in a cluster, in the file `name_FILE` names
    /// (checked like every secret file; the line break at its end dropped). Both set is a
    /// problem: which one counts would be a guess.
    pub fn secret_or_file(&mut self, name: &str) -> Option<SecretString> {
        let file_name = format!("{name}_FILE");
        let inline = self.secret(name, None);
        let file = self.secret_file(&file_name, None);
        match (inline, file) {
            (Some(_), Some(_)) => {
                self.problem(format!("{name} and {file_name} are both set: keep one"));
                None
            }
            (Some(inline), None) => Some(inline),
            (None, Some(file)) => Some(SecretString::from(
                file.expose_secret()
                    .trim_end_matches(['\n', '\r'])
                    .to_owned(),
            )),
            (None, None) => None,
        }
    }

    /// A credential read from the file the variable names, with the same checks as
    /// [`EnvReader::secret_file`] and then `check` (its shape), and re-read whenever the file
    /// changes (see [`crate::rotation`]).
    pub fn rotating_secret_file(
        &mut self,
        name: &str,
        needed_by: Option<&str>,
        check: SecretCheck,
    ) -> Option<Arc<RotatingSecret>> {
        let path = match needed_by {
            Some(who) => self.required(name, who),
            None => self.optional(name),
        }?;
        match RotatingSecret::open(name, Path::new(&path), check) {
            Ok(secret) => Some(Arc::new(secret)),
            Err(reason) => {
                self.problem(format!("{name} {reason}"));
                None
            }
        }
    }

    /// Done: `Err` with every problem, in the order found.
    pub fn finish(self) -> Result<(), Vec<String>> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(self.problems)
        }
    }
}

fn read_secret_file(path: &Path) -> Result<String, &'static str> {
    crate::rotation::read_secret_file(path).map(|(text, _)| text)
}

/// `https://host…`, or `http://` for loopback; no userinfo, query or fragment.
pub fn is_upstream_url(text: &str) -> bool {
    let Ok(url) = url::Url::parse(text) else {
        return false;
    };
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
    scheme_ok
        && url.host_str().is_some_and(|h| !h.is_empty())
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn reader_over(env: &MapEnv) -> EnvReader<'_> {
        EnvReader::new(env)
    }

    #[test]
    fn every_problem_is_reported_by_name_never_by_value() {
        let env = MapEnv::of([
            ("CARE_X_URL", "http://sk-demo-host.example.com"),
            ("CARE_X_LIMIT", "sk-demo-9"),
            ("CARE_X_LIST", "ok, sk-demo-bad!"),
            ("CARE_X_FILE", "/nonexistent/sk-demo-file"),
        ]);
        let mut r = reader_over(&env);
        assert!(r.upstream_url("CARE_X_URL", None).is_none());
        assert_eq!(r.int_in("CARE_X_LIMIT", 1..=10, 5), 5);
        let list = r.list("CARE_X_LIST", "a plain word", |s| {
            s.chars().all(|c| c.is_ascii_alphanumeric())
        });
        assert_eq!(list, ["ok"]);
        assert!(r.secret_file("CARE_X_FILE", Some("the tests")).is_none());
        assert!(r.required("CARE_X_MISSING", "the tests").is_none());
        let problems = r.finish().unwrap_err();
        assert_eq!(problems.len(), 5, "{problems:?}");
        for p in &problems {
            assert!(p.starts_with("CARE_X_"), "{p}");
            assert!(!p.contains("sk-demo"), "{p}");
        }
    }

    #[test]
    fn secrets_cannot_be_printed() {
        let env = MapEnv::of([("CARE_X_TOKEN", "sk-demo-token-0001")]);
        let mut r = reader_over(&env);
        let secret = r.secret("CARE_X_TOKEN", None).unwrap();
        assert!(!format!("{secret:?}").contains("sk-demo"));
        assert_eq!(secret.expose_secret(), "sk-demo-token-0001");
    }

    #[test]
    fn secret_files_are_read_only_when_others_cannot_read_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "sk-demo-file-secret\n").unwrap();
        let env = MapEnv::of([("CARE_X_FILE", path.to_str().unwrap())]);
        for (mode, ok) in [(0o600, true), (0o640, true), (0o644, false), (0o660, false)] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let mut r = reader_over(&env);
            let read = r.secret_file("CARE_X_FILE", None);
            assert_eq!(read.is_some(), ok, "mode {mode:o}");
            if ok {
                assert_eq!(read.unwrap().expose_secret(), "sk-demo-file-secret\n");
            }
        }
    }

    #[test]
    fn a_secret_comes_inline_or_from_its_file_never_both() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("salt");
        std::fs::write(&path, "sk-demo-salt-from-file\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o440)).unwrap();
        let file = path.to_str().unwrap();

        let env = MapEnv::of([("CARE_X_SALT_FILE", file)]);
        let mut r = reader_over(&env);
        let salt = r.secret_or_file("CARE_X_SALT").unwrap();
        assert_eq!(salt.expose_secret(), "sk-demo-salt-from-file");
        assert_eq!(
            r.names_read().collect::<Vec<_>>(),
            ["CARE_X_SALT", "CARE_X_SALT_FILE"]
        );
        assert!(r.finish().is_ok());

        let env = MapEnv::of([
            ("CARE_X_SALT", "sk-demo-inline"),
            ("CARE_X_SALT_FILE", file),
        ]);
        let mut r = reader_over(&env);
        assert!(r.secret_or_file("CARE_X_SALT").is_none());
        let problems = r.finish().unwrap_err();
        assert!(problems[0].contains("both set"), "{problems:?}");
    }

    #[test]
    fn upstream_urls() {
        assert!(is_upstream_url("https://api.appstoreconnect.apple.com"));
        assert!(is_upstream_url("http://127.0.0.1:4000"));
        assert!(is_upstream_url("http://localhost:4000/"));
        assert!(is_upstream_url("http://[::1]:4000"));
        assert!(!is_upstream_url("http://api.example.com"));
        assert!(!is_upstream_url("https://user:pw@host"));
        assert!(!is_upstream_url("https://host/?x=1"));
        assert!(!is_upstream_url("https://host/#x"));
        assert!(!is_upstream_url("ftp://host"));
        assert!(!is_upstream_url("not a url"));
    }

    #[test]
    fn lists_split_on_commas_and_spaces_and_drop_duplicates() {
        let env = MapEnv::of([("CARE_X", " a, b  c,a ,")]);
        let mut r = reader_over(&env);
        assert_eq!(r.list("CARE_X", "a letter", |_| true), ["a", "b", "c"]);
        assert!(r.finish().is_ok());
    }
}

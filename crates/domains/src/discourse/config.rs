//! `CARE_DISCOURSE_*` (and `CARE_LOCALES`, shared with the review reply), read with the
//! configuration kit: every problem collected by variable name, never a value. The API key is
//! read from a file nobody else may read and re-read when the file changes
//! (`care_core::rotation`); it is held unprintable, and every value it takes is an outbound-scan
//! pattern.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `CARE_DISCOURSE_URL` | the forum's root URL; `http://` only for loopback hosts | required |
//! | `CARE_DISCOURSE_API_KEY_FILE` | path of a file holding the API key (`Api-Key`) | required |
//! | `CARE_DISCOURSE_API_USERNAME` | the user the key acts as (`Api-Username`); replies are posted as this user | required |
//! | `CARE_DISCOURSE_CATEGORY_IDS` | the categories this server may read and reply in (ids, comma or space separated) | every category |
//! | `CARE_LOCALES` | locales a reply may be written in | the review reply's default list |

use std::sync::Arc;

use care_core::env::{EnvReader, EnvSource};
use care_core::rotation::RotatingSecret;

/// Who needs the required variables, in start errors.
const NEEDED_BY: &str = "the Discourse tools of this role";
/// More categories than any forum scope needs; bounds the scope checks.
const MAX_CATEGORY_IDS: usize = 200;

/// Parsed Discourse configuration.
#[derive(Debug, Clone)]
pub struct DiscourseConfig {
    /// Without a trailing slash.
    pub base_url: String,
    /// The `Api-Key`, re-read when its file changes; unprintable, and an outbound-scan pattern.
    pub api_key: Arc<RotatingSecret>,
    /// The `Api-Username`: the user replies are posted as (the company's voice).
    pub api_username: String,
    /// The categories in scope; `None` when every (non-private) category is.
    pub category_ids: Option<Vec<u64>>,
    /// Allowed reply locales, in their configured spelling.
    pub locales: Vec<String>,
}

impl DiscourseConfig {
    /// Reads the configuration (and the key file); `None` when anything is wrong, the reasons
    /// recorded in `r` by variable name.
    pub fn read(r: &mut EnvReader<'_>) -> Option<DiscourseConfig> {
        let url_set = r.required("CARE_DISCOURSE_URL", NEEDED_BY).is_some();
        let base_url = if url_set {
            r.upstream_url("CARE_DISCOURSE_URL", None)
        } else {
            None
        };
        let api_key =
            r.rotating_secret_file("CARE_DISCOURSE_API_KEY_FILE", Some(NEEDED_BY), api_key);
        let api_username = r
            .required("CARE_DISCOURSE_API_USERNAME", NEEDED_BY)
            .and_then(|name| {
                if is_username(&name) {
                    Some(name)
                } else {
                    r.problem(
                        "CARE_DISCOURSE_API_USERNAME must be a Discourse username (letters, digits, _ . -)",
                    );
                    None
                }
            });
        let category_ids = read_category_ids(r);
        let locales = crate::locale::read(r);

        match (base_url, api_key, api_username, category_ids, locales) {
            (
                Some(base_url),
                Some(api_key),
                Some(api_username),
                Some(category_ids),
                Some(locales),
            ) => Some(DiscourseConfig {
                base_url,
                api_key,
                api_username,
                category_ids,
                locales,
            }),
            _ => None,
        }
    }

    /// The configuration from `env` alone, every problem at once.
    pub fn from_env(env: &dyn EnvSource) -> Result<DiscourseConfig, Vec<String>> {
        let mut r = EnvReader::new(env);
        let config = DiscourseConfig::read(&mut r);
        r.finish()?;
        config.ok_or_else(|| vec!["Discourse configuration incomplete".to_owned()])
    }

    /// True when topics of `category_id` are in scope (`None`: a topic without a category,
    /// which only a configured scope refuses).
    pub fn allows_category(&self, category_id: Option<u64>) -> bool {
        match (&self.category_ids, category_id) {
            (None, _) => true,
            (Some(ids), Some(id)) => ids.contains(&id),
            (Some(_), None) => false,
        }
    }
}

/// `CARE_DISCOURSE_CATEGORY_IDS`: `Some(None)` unset, `Some(Some(ids))` set, `None` after a
/// problem.
fn read_category_ids(r: &mut EnvReader<'_>) -> Option<Option<Vec<u64>>> {
    const NAME: &str = "CARE_DISCOURSE_CATEGORY_IDS";
    if r.optional(NAME).is_none() {
        return Some(None);
    }
    let listed = r.list(NAME, "a category id (a positive whole number)", |v| {
        v.parse::<u64>().is_ok_and(|n| n > 0)
    });
    let ids: Vec<u64> = listed.iter().filter_map(|v| v.parse().ok()).collect();
    if ids.len() != listed.len() {
        return None;
    }
    if ids.is_empty() {
        r.problem(format!("{NAME} names no category"));
        return None;
    }
    if ids.len() > MAX_CATEGORY_IDS {
        r.problem(format!(
            "{NAME} names more than {MAX_CATEGORY_IDS} categories"
        ));
        return None;
    }
    Some(Some(ids))
}

/// The key in the file's text, trimmed, when it is shaped like one.
fn api_key(text: &str) -> Result<String, &'static str> {
    let trimmed = text.trim();
    if is_api_key(trimmed) {
        Ok(trimmed.to_owned())
    } else {
        Err("does not hold an API key (one line of letters, digits, - and _)")
    }
}

/// Discourse API keys are 64 hex digits; other deployments (and our fakes) use longer or
/// dashed tokens, so any single token of 16..=256 URL-safe characters is taken.
fn is_api_key(value: &str) -> bool {
    (16..=256).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A Discourse username: 1..=60 of letters, digits, `_`, `.` and `-`.
pub fn is_username(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 60
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use care_core::env::MapEnv;
    use std::os::unix::fs::PermissionsExt;

    fn config(pairs: &[(&str, &str)]) -> Result<DiscourseConfig, Vec<String>> {
        DiscourseConfig::from_env(&MapEnv::of(pairs.iter().copied()))
    }

    fn key_file(dir: &tempfile::TempDir, text: &str, mode: u32) -> String {
        let path = dir.path().join("discourse.key");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path.to_str().unwrap().to_owned()
    }

    #[test]
    fn missing_everything_names_every_required_variable() {
        let errs = config(&[]).unwrap_err();
        assert_eq!(errs.len(), 3, "{errs:?}");
        for name in [
            "CARE_DISCOURSE_URL",
            "CARE_DISCOURSE_API_KEY_FILE",
            "CARE_DISCOURSE_API_USERNAME",
        ] {
            assert!(errs.iter().any(|e| e.contains(name)), "{name}: {errs:?}");
        }
    }

    #[test]
    fn a_full_configuration_reads_with_its_scope() {
        let dir = tempfile::tempdir().unwrap();
        let file = key_file(&dir, "sk-demo-discourse-key-0001\n", 0o600);
        let c = config(&[
            ("CARE_DISCOURSE_URL", "https://forum.example.com/"),
            ("CARE_DISCOURSE_API_KEY_FILE", &file),
            ("CARE_DISCOURSE_API_USERNAME", "care_bot"),
            ("CARE_DISCOURSE_CATEGORY_IDS", "5, 9 5"),
        ])
        .unwrap();
        assert_eq!(c.base_url, "https://forum.example.com");
        assert_eq!(
            c.api_key.value_now().as_deref(),
            Some("sk-demo-discourse-key-0001")
        );
        assert_eq!(c.category_ids, Some(vec![5, 9]));
        assert!(c.allows_category(Some(9)));
        assert!(!c.allows_category(Some(7)));
        assert!(!c.allows_category(None));
        assert!(!format!("{c:?}").contains("sk-demo"));
        let open = config(&[
            ("CARE_DISCOURSE_URL", "http://127.0.0.1:4000"),
            ("CARE_DISCOURSE_API_KEY_FILE", &file),
            ("CARE_DISCOURSE_API_USERNAME", "care_bot"),
        ])
        .unwrap();
        assert_eq!(open.category_ids, None);
        assert!(open.allows_category(Some(7)) && open.allows_category(None));
    }

    #[test]
    fn bad_values_are_refused_by_name_never_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let file = key_file(&dir, "sk-demo key with spaces", 0o600);
        let errs = config(&[
            ("CARE_DISCOURSE_URL", "http://forum.example.com"),
            ("CARE_DISCOURSE_API_KEY_FILE", &file),
            ("CARE_DISCOURSE_API_USERNAME", "care bot!"),
            ("CARE_DISCOURSE_CATEGORY_IDS", "5, sk-demo-x, 0"),
        ])
        .unwrap_err();
        assert_eq!(errs.len(), 5, "{errs:?}");
        for e in &errs {
            assert!(e.starts_with("CARE_DISCOURSE_"), "{e}");
            assert!(!e.contains("sk-demo") && !e.contains("example.com"), "{e}");
        }
        let readable = key_file(&dir, "sk-demo-discourse-key-0001", 0o644);
        let errs = config(&[
            ("CARE_DISCOURSE_URL", "https://forum.example.com"),
            ("CARE_DISCOURSE_API_KEY_FILE", &readable),
            ("CARE_DISCOURSE_API_USERNAME", "care_bot"),
        ])
        .unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("chmod"), "{errs:?}");
    }
}

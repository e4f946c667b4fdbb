//! `CARE_ASC_*` and `CARE_LOCALES`, read through a getter so tests need no process environment.
//! Every problem is collected before failing, and no message contains a value: the private key
//! is read once here and its content never appears in a message, a log line or `Debug`.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `CARE_ASC_ISSUER_ID` | issuer id of the API key (App Store Connect › Users and Access › Integrations) | required |
//! | `CARE_ASC_KEY_ID` | key id of the `.p8` key (the token's `kid`) | required |
//! | `CARE_ASC_PRIVATE_KEY_FILE` | path of the `.p8` file (PKCS#8 PEM, P-256) | required |
//! | `CARE_ASC_APP_IDS` | allowlist of app ids, comma or space separated | required |
//! | `CARE_ASC_BASE_URL` | API root; `http://` only for loopback hosts | `https://api.appstoreconnect.apple.com` |
//! | `CARE_LOCALES` | locales a reply may be written in | [`DEFAULT_LOCALES`](super::locale::DEFAULT_LOCALES) |

use std::path::PathBuf;

use super::locale;

/// The public App Store Connect API.
pub const DEFAULT_BASE_URL: &str = "https://api.appstoreconnect.apple.com";
/// A `.p8` is a few hundred bytes; anything far larger is not one.
const MAX_KEY_FILE_BYTES: u64 = 16 * 1024;
/// More apps than anyone runs care for through one server; bounds the review lookups.
const MAX_APP_IDS: usize = 50;

/// The private key, kept out of `Debug` and dropped with the config.
#[derive(Clone)]
pub struct PrivateKeyPem(String);

impl PrivateKeyPem {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for PrivateKeyPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKeyPem(<redacted>)")
    }
}

/// Parsed App Store Connect configuration.
#[derive(Debug, Clone)]
pub struct AscConfig {
    pub issuer_id: String,
    pub key_id: String,
    pub private_key: PrivateKeyPem,
    /// The apps this server may read and answer reviews of.
    pub app_ids: Vec<String>,
    /// Without a trailing slash.
    pub base_url: String,
    /// Allowed reply locales, in their configured spelling.
    pub locales: Vec<String>,
}

impl AscConfig {
    /// Reads the configuration; `get` returns a variable's value. Reads the key file.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<AscConfig, Vec<String>> {
        let mut problems = Vec::new();
        let non_empty = |name: &str| {
            get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let mut required = |name: &str| {
            let value = non_empty(name);
            if value.is_none() {
                problems.push(format!(
                    "{name} is required by the App Store Connect tools of this role"
                ));
            }
            value.unwrap_or_default()
        };
        let issuer_id = required("CARE_ASC_ISSUER_ID");
        let key_id = required("CARE_ASC_KEY_ID");
        let key_file = required("CARE_ASC_PRIVATE_KEY_FILE");
        let app_list = required("CARE_ASC_APP_IDS");

        if !issuer_id.is_empty() && !is_token(&issuer_id, 64) {
            problems.push(
                "CARE_ASC_ISSUER_ID must be an issuer id (letters, digits and dashes)".into(),
            );
        }
        if !key_id.is_empty() && !is_token(&key_id, 32) {
            problems.push("CARE_ASC_KEY_ID must be a key id (letters and digits)".into());
        }

        let private_key = if key_file.is_empty() {
            None
        } else {
            match read_key(&PathBuf::from(&key_file)) {
                Ok(pem) => Some(pem),
                Err(reason) => {
                    problems.push(format!("CARE_ASC_PRIVATE_KEY_FILE {reason}"));
                    None
                }
            }
        };

        let mut app_ids: Vec<String> = Vec::new();
        for (i, id) in app_list
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .enumerate()
        {
            if is_token(id, 64) {
                if !app_ids.iter().any(|a| a == id) {
                    app_ids.push(id.to_owned());
                }
            } else {
                problems.push(format!("CARE_ASC_APP_IDS entry {} is not an app id", i + 1));
            }
        }
        if !app_list.is_empty() && app_ids.is_empty() {
            problems.push("CARE_ASC_APP_IDS names no app".into());
        }
        if app_ids.len() > MAX_APP_IDS {
            problems.push(format!(
                "CARE_ASC_APP_IDS names more than {MAX_APP_IDS} apps"
            ));
        }

        let base_url = match non_empty("CARE_ASC_BASE_URL") {
            None => DEFAULT_BASE_URL.to_owned(),
            Some(url) => {
                if !base_url_ok(&url) {
                    problems.push("CARE_ASC_BASE_URL must be an https:// URL (http:// only for 127.0.0.1, ::1 or localhost) without query or credentials".into());
                }
                url.trim_end_matches('/').to_owned()
            }
        };

        let locales = match non_empty("CARE_LOCALES") {
            None => locale::DEFAULT_LOCALES
                .iter()
                .map(|l| (*l).to_owned())
                .collect(),
            Some(list) => {
                let mut out: Vec<String> = Vec::new();
                for (i, item) in list
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|s| !s.is_empty())
                    .enumerate()
                {
                    if locale::is_locale_tag(item) {
                        if !out.iter().any(|l| l.eq_ignore_ascii_case(item)) {
                            out.push(item.to_owned());
                        }
                    } else {
                        problems.push(format!(
                            "CARE_LOCALES entry {} is not a locale like en-US",
                            i + 1
                        ));
                    }
                }
                if out.is_empty() {
                    problems.push("CARE_LOCALES names no locale".into());
                }
                out
            }
        };

        match (private_key, problems.is_empty()) {
            (Some(private_key), true) => Ok(AscConfig {
                issuer_id,
                key_id,
                private_key,
                app_ids,
                base_url,
                locales,
            }),
            _ => Err(problems),
        }
    }

    /// True when `app_id` is in the allowlist.
    pub fn allows(&self, app_id: &str) -> bool {
        self.app_ids.iter().any(|a| a == app_id)
    }
}

/// 1..=max of `[A-Za-z0-9-]`.
fn is_token(value: &str, max: usize) -> bool {
    !value.is_empty()
        && value.len() <= max
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Reads and shape-checks the `.p8`; the reason never quotes the file.
fn read_key(path: &std::path::Path) -> Result<PrivateKeyPem, &'static str> {
    let meta = std::fs::metadata(path).map_err(|_| "cannot be read")?;
    if !meta.is_file() || meta.len() > MAX_KEY_FILE_BYTES {
        return Err("is not a .p8 key file");
    }
    let text = std::fs::read_to_string(path).map_err(|_| "cannot be read")?;
    if !text.contains("-----BEGIN PRIVATE KEY-----") {
        return Err("is not a PKCS#8 PEM private key (.p8)");
    }
    // Refuses what the signer would refuse later, so a bad key stops the start, not a call.
    jsonwebtoken::EncodingKey::from_ec_pem(text.as_bytes())
        .map_err(|_| "does not hold a usable P-256 private key")?;
    Ok(PrivateKeyPem(text))
}

fn base_url_ok(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let loopback = matches!(parsed.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    let scheme_ok = parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback);
    scheme_ok
        && parsed.username().is_empty()
        && parsed.password().is_none()
        && parsed.query().is_none()
        && parsed.fragment().is_none()
        && parsed.host_str().is_some()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<AscConfig, Vec<String>> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        AscConfig::from_env(|k| map.get(k).cloned())
    }

    #[test]
    fn missing_everything_names_every_variable() {
        let errs = config(&[]).unwrap_err();
        assert_eq!(errs.len(), 4, "{errs:?}");
        for name in [
            "CARE_ASC_ISSUER_ID",
            "CARE_ASC_KEY_ID",
            "CARE_ASC_PRIVATE_KEY_FILE",
            "CARE_ASC_APP_IDS",
        ] {
            assert!(errs.iter().any(|e| e.contains(name)), "{name}: {errs:?}");
        }
    }

    #[test]
    fn a_file_that_is_not_a_key_is_refused_without_quoting_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("AuthKey_X.p8");
        std::fs::write(
            &path,
            "-----BEGIN PRIVATE KEY-----\nsk-demo-not-a-key\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let errs = config(&[
            ("CARE_ASC_ISSUER_ID", "69a6de7f-0000-47e3-e053-5b8c7c11a4d1"),
            ("CARE_ASC_KEY_ID", "2X9R4HXF34"),
            ("CARE_ASC_PRIVATE_KEY_FILE", path.to_str().unwrap()),
            ("CARE_ASC_APP_IDS", "1600000001"),
            ("CARE_ASC_BASE_URL", "http://example.com"),
            ("CARE_LOCALES", "en-US, english!"),
        ])
        .unwrap_err();
        assert_eq!(errs.len(), 3, "{errs:?}");
        for e in &errs {
            assert!(!e.contains("sk-demo"), "{e}");
            assert!(!e.contains("example.com"), "{e}");
        }
    }

    #[test]
    fn base_urls() {
        assert!(base_url_ok("https://api.appstoreconnect.apple.com"));
        assert!(base_url_ok("http://127.0.0.1:4000"));
        assert!(base_url_ok("http://localhost:4000/"));
        assert!(!base_url_ok("http://api.appstoreconnect.apple.com"));
        assert!(!base_url_ok("https://user:pw@host"));
        assert!(!base_url_ok("https://host/?x=1"));
        assert!(!base_url_ok("ftp://host"));
    }
}

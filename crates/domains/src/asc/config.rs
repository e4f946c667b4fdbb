//! `CARE_ASC_*` and `CARE_LOCALES`, read with the configuration kit (`care_core::env`): every
//! problem collected by variable name, never a value. The private key is read from a file nobody
//! else may read, and re-read when the file changes (`care_core::rotation`); it is held
//! unprintable, its content never appears in a message, a log line or `Debug`, and every value
//! it takes is an outbound-scan pattern.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `CARE_ASC_ISSUER_ID` | issuer id of the API key (App Store Connect › Users and Access › Integrations) | required |
//! | `CARE_ASC_KEY_ID` | key id of the `.p8` key (the token's `kid`) | required, unless `CARE_ASC_KEY_ID_FILE` is set |
//! | `CARE_ASC_KEY_ID_FILE` | instead of `CARE_ASC_KEY_ID`: a file holding the key id, re-read when it changes (a rotated key comes with a new id) | unset |
//! | `CARE_ASC_PRIVATE_KEY_FILE` | path of the `.p8` file (PKCS#8 PEM, P-256) | required |
//! | `CARE_ASC_APP_IDS` | allowlist of app ids, comma or space separated | required |
//! | `CARE_ASC_BASE_URL` | API root; `http://` only for loopback hosts | `https://api.appstoreconnect.apple.com` |
//! | `CARE_LOCALES` | locales a reply may be written in | [`DEFAULT_LOCALES`](crate::locale::DEFAULT_LOCALES) |

use std::sync::Arc;

use care_core::env::{EnvReader, EnvSource};
use care_core::rotation::RotatingSecret;

use crate::locale;

/// The public App Store Connect API.
pub const DEFAULT_BASE_URL: &str = "https://api.appstoreconnect.apple.com";
/// More apps than anyone runs care for through one server; bounds the review lookups.
const MAX_APP_IDS: usize = 50;
/// Who needs the required variables, in start errors.
const NEEDED_BY: &str = "the App Store Connect tools of this role";

/// Parsed App Store Connect configuration.
#[derive(Debug, Clone)]
pub struct AscConfig {
    pub issuer_id: String,
    pub key_id: KeyId,
    /// The `.p8` text (PKCS#8 PEM), re-read when its file changes; unprintable, and an
    /// outbound-scan pattern.
    pub private_key: Arc<RotatingSecret>,
    /// The apps this server may read and answer reviews of.
    pub app_ids: Vec<String>,
    /// Without a trailing slash.
    pub base_url: String,
    /// Allowed reply locales, in their configured spelling.
    pub locales: Vec<String>,
}

/// The key id (`kid`) of the `.p8`: fixed, or read from a file that rotates with the key.
#[derive(Debug, Clone)]
pub enum KeyId {
    Fixed(String),
    File(Arc<RotatingSecret>),
}

impl AscConfig {
    /// Reads the configuration (and the key file); `None` when anything is wrong, the reasons
    /// recorded in `r` by variable name.
    pub fn read(r: &mut EnvReader<'_>) -> Option<AscConfig> {
        let issuer_id = r.required("CARE_ASC_ISSUER_ID", NEEDED_BY);
        let key_id = read_key_id(r);
        let private_key =
            r.rotating_secret_file("CARE_ASC_PRIVATE_KEY_FILE", Some(NEEDED_BY), checked_key);
        let app_list = r.required("CARE_ASC_APP_IDS", NEEDED_BY);
        let mut ok = issuer_id.is_some() && app_list.is_some();

        if issuer_id.as_deref().is_some_and(|v| !is_token(v, 64)) {
            r.problem("CARE_ASC_ISSUER_ID must be an issuer id (letters, digits and dashes)");
            ok = false;
        }
        let app_ids = r.list("CARE_ASC_APP_IDS", "an app id", |id| is_token(id, 64));
        if app_list.is_some() && app_ids.is_empty() {
            r.problem("CARE_ASC_APP_IDS names no app");
            ok = false;
        }
        if app_ids.len() > MAX_APP_IDS {
            r.problem(format!(
                "CARE_ASC_APP_IDS names more than {MAX_APP_IDS} apps"
            ));
            ok = false;
        }
        let base_url = r.upstream_url("CARE_ASC_BASE_URL", Some(DEFAULT_BASE_URL));
        let locales = locale::read(r);

        match (issuer_id, key_id, private_key, base_url, locales) {
            (Some(issuer_id), Some(key_id), Some(private_key), Some(base_url), Some(locales))
                if ok =>
            {
                Some(AscConfig {
                    issuer_id,
                    key_id,
                    private_key,
                    app_ids,
                    base_url,
                    locales,
                })
            }
            _ => None,
        }
    }

    /// The configuration from `env` alone, every problem at once.
    pub fn from_env(env: &dyn EnvSource) -> Result<AscConfig, Vec<String>> {
        let mut r = EnvReader::new(env);
        let config = AscConfig::read(&mut r);
        r.finish()?;
        config.ok_or_else(|| vec!["App Store Connect configuration incomplete".to_owned()])
    }

    /// True when `app_id` is in the allowlist.
    pub fn allows(&self, app_id: &str) -> bool {
        self.app_ids.iter().any(|a| a == app_id)
    }
}

/// `CARE_ASC_KEY_ID`, or the file `CARE_ASC_KEY_ID_FILE` names (exactly one of them).
fn read_key_id(r: &mut EnvReader<'_>) -> Option<KeyId> {
    let fixed = r.optional("CARE_ASC_KEY_ID");
    let file_set = r.optional("CARE_ASC_KEY_ID_FILE").is_some();
    match (fixed, file_set) {
        (Some(_), true) => {
            r.problem("CARE_ASC_KEY_ID and CARE_ASC_KEY_ID_FILE are both set: set one");
            None
        }
        (Some(id), false) if is_token(&id, 32) => Some(KeyId::Fixed(id)),
        (Some(_), false) => {
            r.problem("CARE_ASC_KEY_ID must be a key id (letters and digits)");
            None
        }
        (None, true) => r
            .rotating_secret_file("CARE_ASC_KEY_ID_FILE", None, checked_key_id)
            .map(KeyId::File),
        (None, false) => {
            r.problem(format!(
                "CARE_ASC_KEY_ID (or CARE_ASC_KEY_ID_FILE) is required by {NEEDED_BY}"
            ));
            None
        }
    }
}

/// The key id in a key id file: one trimmed token.
fn checked_key_id(text: &str) -> Result<String, &'static str> {
    let id = text.trim();
    if is_token(id, 32) {
        Ok(id.to_owned())
    } else {
        Err("does not hold a key id (letters and digits)")
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

/// The `.p8`'s text once it passes [`check_key`] (at start and at every re-read).
fn checked_key(text: &str) -> Result<String, &'static str> {
    check_key(text)?;
    Ok(text.to_owned())
}

/// Shape-checks the `.p8`; the reason never quotes the file.
fn check_key(text: &str) -> Result<(), &'static str> {
    if !text.contains("-----BEGIN PRIVATE KEY-----") {
        return Err("is not a PKCS#8 PEM private key (.p8)");
    }
    // Refuses what the signer would refuse later, so a bad key stops the start, not a call.
    jsonwebtoken::EncodingKey::from_ec_pem(text.as_bytes())
        .map_err(|_| "does not hold a usable P-256 private key")?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use care_core::env::MapEnv;
    use std::os::unix::fs::PermissionsExt;

    fn config(pairs: &[(&str, &str)]) -> Result<AscConfig, Vec<String>> {
        AscConfig::from_env(&MapEnv::of(pairs.iter().copied()))
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
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
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
    fn a_key_file_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("AuthKey_X.p8");
        std::fs::write(&path, "-----BEGIN PRIVATE KEY-----\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let errs = config(&[
            ("CARE_ASC_ISSUER_ID", "69a6de7f-0000-47e3-e053-5b8c7c11a4d1"),
            ("CARE_ASC_KEY_ID", "2X9R4HXF34"),
            ("CARE_ASC_PRIVATE_KEY_FILE", path.to_str().unwrap()),
            ("CARE_ASC_APP_IDS", "1600000001"),
        ])
        .unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("CARE_ASC_PRIVATE_KEY_FILE"), "{errs:?}");
        assert!(errs[0].contains("chmod"), "{errs:?}");
    }
}

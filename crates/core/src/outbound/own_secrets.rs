//! The server's own secret values as the outbound scan looks for them: as configured, normalised,
//! in hex and in base64, compiled once (at the first scan) into literal matchers.

use std::fmt;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

use super::normalize::normalize;
use super::{MIN_ENCODED_CHARS, MIN_OWN_SECRET_CHARS, OutboundFinding};

/// The literal needles of every own secret, in two matchers. The needles are derived at once
/// (cheap); the matchers are built at the first scan, which only a call sending text out
/// makes: a process that never sends pays nothing for them at start-up.
pub(super) struct OwnSecrets {
    /// How many distinct secrets are held (after trimming and the length rule).
    count: usize,
    /// Needles for [`Matchers::exact`] and [`Matchers::folded`].
    exact: Vec<String>,
    folded: Vec<String>,
    /// `None` inside if a matcher could not be built; then every scan fails closed.
    matchers: OnceLock<Option<Matchers>>,
}

#[derive(Clone)]
struct Matchers {
    /// Needles whose case matters: secrets as written, base64 forms.
    exact: AhoCorasick,
    /// Needles made of hex digits, where case carries no meaning: hex secrets, hex forms.
    folded: AhoCorasick,
}

impl fmt::Debug for OwnSecrets {
    /// The count only: the matchers hold the secret values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnSecrets")
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl OwnSecrets {
    pub(super) fn new(secrets: Vec<String>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| s.chars().count() >= MIN_OWN_SECRET_CHARS)
            .collect();
        secrets.sort_unstable();
        secrets.dedup();

        let mut exact = Vec::new();
        let mut folded = Vec::new();
        for secret in &secrets {
            let normalized = normalize(secret);
            for form in [secret.as_str(), normalized.as_ref()] {
                if form.chars().count() < MIN_OWN_SECRET_CHARS {
                    continue;
                }
                if is_hex(form) {
                    folded.push(form.to_owned());
                } else {
                    exact.push(form.to_owned());
                }
                // At least 16 digits, as a form has at least MIN_OWN_SECRET_CHARS bytes.
                folded.push(hex::encode(form));
                exact.extend(base64_forms(form.as_bytes()));
            }
        }
        exact.sort_unstable();
        exact.dedup();
        folded.sort_unstable();
        folded.dedup();

        // Contiguous NFAs, not the DFA the builder would pick for this few needles: building
        // the DFA was a fifth of the process's start-up CPU and its tables stayed resident,
        // while outbound texts are short and scanned once each.
        Self {
            count: secrets.len(),
            exact,
            folded,
            matchers: OnceLock::new(),
        }
    }

    /// The matchers, built once.
    fn matchers(&self) -> Option<&Matchers> {
        self.matchers
            .get_or_init(|| {
                let exact = AhoCorasick::builder()
                    .kind(Some(AhoCorasickKind::ContiguousNFA))
                    .build(&self.exact)
                    .ok()?;
                let folded = AhoCorasick::builder()
                    .kind(Some(AhoCorasickKind::ContiguousNFA))
                    .ascii_case_insensitive(true)
                    .build(&self.folded)
                    .ok()?;
                Some(Matchers { exact, folded })
            })
            .as_ref()
    }

    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// `Err(OwnSecret)` if any needle occurs in `text`.
    pub(super) fn check(&self, text: &str) -> Result<(), OutboundFinding> {
        let Some(matchers) = self.matchers() else {
            return Err(OutboundFinding::ScannerUnavailable);
        };
        if matchers.exact.is_match(text) || matchers.folded.is_match(text) {
            return Err(OutboundFinding::OwnSecret);
        }
        Ok(())
    }
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The base64 text that `secret` alone decides, wherever it sits in an encoded stream.
///
/// Preceded by 0, 1 or 2 other bytes, the secret's bits start at bit 0, 8 or 16 of a 24-bit
/// group; only the 6-bit characters lying wholly inside the secret's bits are stable, so the
/// first characters (shared with the bytes before) and the last (shared with the bytes after,
/// or padding) are cut. Standard and URL-safe alphabets, so six needles, shorter ones dropped.
fn base64_forms(secret: &[u8]) -> Vec<String> {
    let mut forms = Vec::with_capacity(6);
    for before in 0..3_usize {
        let mut stream = vec![0_u8; before];
        stream.extend_from_slice(secret);
        let first = (8 * before).div_ceil(6);
        let end = 8 * stream.len() / 6;
        for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            if let Some(inner) = engine.encode(&stream).get(first..end)
                && inner.len() >= MIN_ENCODED_CHARS
            {
                forms.push(inner.to_owned());
            }
        }
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_forms_follow_the_documented_length_rule() {
        // Two alphabets times three positions; fewer when a stable part is under 12 characters.
        assert!(base64_forms(b"sk-demo8").is_empty());
        assert_eq!(base64_forms(b"sk-demo-9").len(), 2);
        assert_eq!(base64_forms(b"sk-demo-10").len(), 6);
    }

    #[test]
    fn debug_shows_the_count_only() {
        let secret = format!("{}{}", "sk-demo-", "debug-value");
        let own = OwnSecrets::new(vec![secret.clone(), secret.clone(), "short".to_owned()]);
        assert_eq!(own.len(), 1);
        assert!(!format!("{own:?}").contains("debug-value"));
    }
}

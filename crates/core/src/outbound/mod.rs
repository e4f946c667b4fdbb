//! The outbound secret scan: every external write's outgoing text passes it, approved or not.
//!
//! ARCHITECTURE invariant 10: no secret leaves the server. [`OutboundScanner::scan`] refuses text
//! that contains a private key, a credential-shaped token, a URL with a password, or one of the
//! server's own configured secret values. A refusal names only the *kind* of thing found
//! ([`OutboundFinding`]), never the matched text, so findings are safe to log and audit.
//!
//! # Patterns
//!
//! All patterns are compiled once into a single [`regex::RegexSet`], one pass per view:
//! PEM private keys (`-----BEGIN … PRIVATE KEY`: RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8, PGP),
//! Anthropic `sk-ant-` and OpenAI-style `sk-` / `sk-proj-` keys, GitHub `ghp_` `gho_` `ghu_`
//! `ghs_` `ghr_` and `github_pat_` tokens, Slack `xox?-` and `xapp-` tokens, AWS access key ids
//! (`AKIA` / `ASIA`), Google `AIza` keys, Stripe `sk_live_` / `rk_live_` keys, JWTs, Nostr
//! `nsec1` keys, and `scheme://user:password@host` URLs of any scheme (`mailto:` and plain
//! e-mail addresses have no `//` and pass).
//!
//! Token prefixes must start at an ASCII word boundary, so ordinary words such as "task-force",
//! "skeleton" or "ask-for-help" do not trip `sk-`, while a token glued to non-ASCII text
//! (Hangul, Arabic…) is still caught.
//!
//! # Own secrets
//!
//! The configured secret values (database password, API keys, mail password…) are matched as
//! exact, case-sensitive substrings after trimming surrounding whitespace (a value read from a
//! file often ends in a newline; the trimmed value is a substring of the original, so trimming
//! only widens the match). Empty values and values shorter than [`MIN_OWN_SECRET_CHARS`]
//! characters are ignored: they would match ordinary words and block harmless replies, and a
//! secret that short is not protected by this scan anyway. A secret made only of hex digits
//! matches in either case, since its case carries no meaning, and a secret that NFKC changes
//! is matched in its normalised form too.
//!
//! # Disguise
//!
//! Every text is scanned in up to three views, and a finding in any view refuses it with the
//! same [`OutboundFinding`] as if it were written plainly:
//!
//! 1. the text as written;
//! 2. normalised: Unicode Default_Ignorable_Code_Point characters (ZWSP, ZWJ, word joiner, soft
//!    hyphen, variation selectors, tag characters, Hangul fillers, CGJ…) removed, then NFKC, so
//!    fullwidth `ｓｋ－…` reads `sk-…`;
//! 3. the normalised text with `%XX` sequences percent-decoded, so a secret in a URL query, partly
//!    or wholly `%XX`-encoded, reads as itself.
//!
//! Case-insensitive patterns (`nsec1`) and hex needles match in either case in every view.
//! Own secrets are also matched in hex (either case) and in base64, standard and URL-safe, with
//! or without padding: for each of the three positions the secret's first byte can take in a
//! 24-bit group, the characters that the secret alone decides. An encoded form is matched only
//! if it is at least [`MIN_ENCODED_CHARS`] characters long, so short encodings cannot collide
//! with ordinary words: hex forms always qualify (an 8-character secret is 16 digits or more);
//! base64 forms qualify in every position for secrets of 10 bytes or more.
//!
//! The own secrets' needles are built in [`OutboundScanner::new`] (and rebuilt when a rotated
//! credential is [learned](OutboundScanner::learn)) into two Aho-Corasick matchers (case-sensitive, and ASCII case-insensitive for hex); a scan is a few
//! linear passes over the text, and ASCII text without `%` is scanned once.

mod normalize;
mod own_secrets;
mod patterns;

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, Weak};

use crate::rotation::RotatingSecret;

use own_secrets::OwnSecrets;
use patterns::PATTERNS;

/// Own secret values shorter than this (in characters, after trimming) are not matched.
pub const MIN_OWN_SECRET_CHARS: usize = 8;

/// Hex and base64 forms of own secrets shorter than this (in characters) are not matched.
pub const MIN_ENCODED_CHARS: usize = 12;

/// What the scan found; carries no matched text, so it is safe to log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum OutboundFinding {
    /// A PEM `-----BEGIN … PRIVATE KEY-----` block.
    #[error("outbound text contains a private key")]
    PrivateKeyPem,
    /// A credential-shaped token; `kind` names the issuer, e.g. `"github"`.
    #[error("outbound text contains an API token ({kind})")]
    ApiToken {
        /// The issuer of the token shape, e.g. `"openai"`, `"github"`, `"slack"`.
        kind: &'static str,
    },
    /// An AWS access key id (`AKIA…` / `ASIA…`).
    #[error("outbound text contains an AWS access key id")]
    AwsAccessKey,
    /// A JSON Web Token.
    #[error("outbound text contains a JWT")]
    Jwt,
    /// A URL carrying `user:password@`.
    #[error("outbound text contains a URL with credentials")]
    UrlWithCredentials,
    /// One of the server's own configured secret values.
    #[error("outbound text contains a configured secret value")]
    OwnSecret,
    /// The patterns could not be compiled, so the text was refused unscanned (fail closed).
    #[error("outbound scanner unavailable")]
    ScannerUnavailable,
}

impl OutboundFinding {
    /// A stable, lowercase label for the audit log.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::PrivateKeyPem => "private_key_pem",
            Self::ApiToken { kind } => PATTERNS
                .iter()
                .find_map(|(_, finding, label)| {
                    matches!(finding, Self::ApiToken { kind: k } if k == kind).then_some(*label)
                })
                .unwrap_or("api_token"),
            Self::AwsAccessKey => "aws_access_key",
            Self::Jwt => "jwt",
            Self::UrlWithCredentials => "url_with_credentials",
            Self::OwnSecret => "own_secret",
            Self::ScannerUnavailable => "scanner_unavailable",
        }
    }
}

/// Scans outgoing text for secrets; see the module documentation for what it looks for.
///
/// Clones share their own secrets: a value one of them [learns](OutboundScanner::learn) (a
/// rotated credential) is refused by all.
#[derive(Clone)]
pub struct OutboundScanner {
    shared: Arc<RwLock<Known>>,
}

/// The own secrets' values (kept to rebuild the matchers when one is learned) and matchers.
struct Known {
    values: Vec<String>,
    matchers: Arc<OwnSecrets>,
    /// Rotating credentials whose file is looked at before each scan (weak: a credential
    /// holds its scanners).
    followed: Vec<Weak<RotatingSecret>>,
}

impl fmt::Debug for OutboundScanner {
    /// Shows how many own secrets are held, never their values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutboundScanner")
            .field("own_secrets", &self.own_secrets().len())
            .finish()
    }
}

impl OutboundScanner {
    /// A scanner that also refuses the given configured secret values (see the module docs for
    /// which values are ignored).
    #[must_use]
    pub fn new(own_secrets: Vec<String>) -> Self {
        Self {
            shared: Arc::new(RwLock::new(Known {
                matchers: Arc::new(OwnSecrets::new(own_secrets.clone())),
                values: own_secrets,
                followed: Vec::new(),
            })),
        }
    }

    /// Adds an own secret (a credential re-read after rotation); every value learned before
    /// stays refused, so text carrying a revoked credential is still blocked.
    pub fn learn(&self, secret: &str) {
        let mut known = self.shared.write().unwrap_or_else(PoisonError::into_inner);
        if known.values.iter().any(|v| v == secret) {
            return;
        }
        known.values.push(secret.to_owned());
        known.matchers = Arc::new(OwnSecrets::new(known.values.clone()));
    }

    /// Learns every value `secret` takes (as [`RotatingSecret::watch`]) and re-reads its file,
    /// if it changed, at the start of every scan: a credential written to the file is refused
    /// from then on, even before anything used it.
    pub fn follow(&self, secret: &Arc<RotatingSecret>) {
        secret.watch(self.clone());
        let mut known = self.shared.write().unwrap_or_else(PoisonError::into_inner);
        known.followed.push(Arc::downgrade(secret));
    }

    fn own_secrets(&self) -> Arc<OwnSecrets> {
        let known = self.shared.read().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(&known.matchers)
    }

    /// `Ok` if `text` may leave the server, else the first kind of secret found.
    pub fn scan(&self, text: &str) -> Result<(), OutboundFinding> {
        // Outside the lock: a changed file makes the credential call `learn`.
        let followed = self
            .shared
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .followed
            .clone();
        for secret in followed.iter().filter_map(Weak::upgrade) {
            secret.refresh();
        }
        let views = normalize::views(text);
        let own_secrets = self.own_secrets();
        // Own secrets first, in every view: that finding is the most precise one.
        views.iter().try_for_each(|view| own_secrets.check(view))?;
        views.iter().try_for_each(|view| patterns::check(view))
    }

    /// Scans each text separately; the first finding wins.
    pub fn scan_all<'a>(
        &self,
        texts: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), OutboundFinding> {
        texts.into_iter().try_for_each(|text| self.scan(text))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod disguise_tests;

//! The outbound secret scan: every external write's outgoing text passes it, approved or not.
//!
//! ARCHITECTURE invariant 10: no secret leaves the server. [`OutboundScanner::scan`] refuses text
//! that contains a private key, a credential-shaped token, a URL with a password, or one of the
//! server's own configured secret values. A refusal names only the *kind* of thing found
//! ([`OutboundFinding`]), never the matched text, so findings are safe to log and audit.
//!
//! # Patterns
//!
//! All patterns are compiled once into a single [`RegexSet`] and checked in one pass:
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
//! secret that short is not protected by this scan anyway.

use std::fmt;
use std::sync::LazyLock;

use regex::RegexSet;

/// Own secret values shorter than this (in characters, after trimming) are not matched.
pub const MIN_OWN_SECRET_CHARS: usize = 8;

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

/// `(?-u:\b)`: an ASCII word boundary, so a prefix glued to a letter ("task-") does not count
/// but one glued to Hangul or punctuation does.
macro_rules! token {
    ($body:literal) => {
        concat!(r"(?-u:\b)", $body)
    };
}

/// Pattern, finding, audit label. Order decides which finding is reported when several match:
/// the more specific shape comes first (`sk-ant-` before `sk-`).
const PATTERNS: &[(&str, OutboundFinding, &str)] = &[
    (
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY",
        OutboundFinding::PrivateKeyPem,
        "private_key_pem",
    ),
    (
        token!(r"sk-ant-[A-Za-z0-9_-]{20,}"),
        OutboundFinding::ApiToken { kind: "anthropic" },
        "api_token_anthropic",
    ),
    (
        token!(r"sk-[A-Za-z0-9_-]{20,}"),
        OutboundFinding::ApiToken { kind: "openai" },
        "api_token_openai",
    ),
    (
        token!(r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
        OutboundFinding::ApiToken { kind: "github" },
        "api_token_github",
    ),
    (
        token!(r"(?:xox[abeprs]|xapp)-[A-Za-z0-9-]{10,}"),
        OutboundFinding::ApiToken { kind: "slack" },
        "api_token_slack",
    ),
    (
        token!(r"AIza[A-Za-z0-9_-]{35}"),
        OutboundFinding::ApiToken { kind: "google" },
        "api_token_google",
    ),
    (
        token!(r"[rs]k_live_[A-Za-z0-9]{10,}"),
        OutboundFinding::ApiToken { kind: "stripe" },
        "api_token_stripe",
    ),
    (
        // bech32 data characters: digits but 1, lowercase letters but b, i, o; either case.
        token!(r"(?i:nsec1[02-9ac-hj-np-z]{58})"),
        OutboundFinding::ApiToken { kind: "nostr" },
        "api_token_nostr",
    ),
    (
        token!(r"(?:AKIA|ASIA)[A-Z0-9]{16}"),
        OutboundFinding::AwsAccessKey,
        "aws_access_key",
    ),
    (
        // `eyJ` is base64url for `{"`; the signature may be empty (`alg: none`).
        token!(r"eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*"),
        OutboundFinding::Jwt,
        "jwt",
    ),
    (
        // Userinfo may have an empty user (`redis://:pw@host`) but needs a password; `/`, `?`
        // and `#` end the authority, so `https://host:443/@someone` passes.
        r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:[^\s/?#@]+@",
        OutboundFinding::UrlWithCredentials,
        "url_with_credentials",
    ),
];

/// The compiled pattern set, or `None` if compilation failed (then every scan fails closed).
static PATTERN_SET: LazyLock<Option<RegexSet>> =
    LazyLock::new(|| RegexSet::new(PATTERNS.iter().map(|(pattern, _, _)| *pattern)).ok());

/// Scans outgoing text for secrets; see the module documentation for what it looks for.
#[derive(Clone)]
pub struct OutboundScanner {
    own_secrets: Vec<String>,
}

impl fmt::Debug for OutboundScanner {
    /// Shows how many own secrets are held, never their values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutboundScanner")
            .field("own_secrets", &self.own_secrets.len())
            .finish()
    }
}

impl OutboundScanner {
    /// A scanner that also refuses the given configured secret values (see the module docs for
    /// which values are ignored).
    #[must_use]
    pub fn new(own_secrets: Vec<String>) -> Self {
        let mut own_secrets: Vec<String> = own_secrets
            .into_iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| s.chars().count() >= MIN_OWN_SECRET_CHARS)
            .collect();
        own_secrets.sort_unstable();
        own_secrets.dedup();
        Self { own_secrets }
    }

    /// `Ok` if `text` may leave the server, else the first kind of secret found.
    pub fn scan(&self, text: &str) -> Result<(), OutboundFinding> {
        // Own secrets first: that finding is the most precise one.
        if self.own_secrets.iter().any(|s| text.contains(s.as_str())) {
            return Err(OutboundFinding::OwnSecret);
        }
        let Some(set) = PATTERN_SET.as_ref() else {
            return Err(OutboundFinding::ScannerUnavailable);
        };
        match set.matches(text).iter().next() {
            None => Ok(()),
            Some(index) => Err(PATTERNS
                .get(index)
                .map_or(OutboundFinding::ScannerUnavailable, |(_, finding, _)| {
                    *finding
                })),
        }
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
mod tests {
    use super::*;

    fn scanner() -> OutboundScanner {
        OutboundScanner::new(Vec::new())
    }

    /// A fake PEM block, assembled so the source file itself holds no key header.
    fn pem(kind: &str) -> String {
        let dashes = "-".repeat(5);
        format!(
            "{dashes}BEGIN {kind}PRIVATE KEY{dashes}\nFAKEFAKEFAKEFAKE\n{dashes}END {kind}PRIVATE KEY{dashes}\n"
        )
    }

    #[test]
    fn patterns_compile() {
        assert!(PATTERN_SET.is_some());
        for (pattern, _, _) in PATTERNS {
            assert!(regex::Regex::new(pattern).is_ok(), "{pattern}");
        }
    }

    #[test]
    fn labels_are_distinct_and_match_the_table() {
        for (_, finding, label) in PATTERNS {
            assert_eq!(finding.label(), *label);
        }
        let mut labels: Vec<&str> = PATTERNS.iter().map(|(_, _, l)| *l).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), PATTERNS.len());
        assert_eq!(OutboundFinding::OwnSecret.label(), "own_secret");
        assert_eq!(
            OutboundFinding::ApiToken { kind: "unknown" }.label(),
            "api_token"
        );
    }

    #[test]
    fn benign_customer_care_text_passes() {
        let s = scanner();
        for text in [
            "",
            "Thanks for the review! Our task-force is on it and the skeleton screen is fixed.",
            "I posted my ask-for-help in the forum yesterday.",
            "Please write to support@example.com or mailto:help@example.org.",
            "See https://example.com/a?b=c and http://localhost:8080/status#top.",
            "Profile: https://medium.com/@someone and https://example.com:8443/@team/page",
            "Version v2.14.3-beta.1 (build 20240611) fixes it; commit 3f2a9c1e4b7d8a6f5e0c1b2a3d4e5f6a7b8c9d0e.",
            "The button colour is #1a2b3c, order ORD-2024-000123, ticket 550e8400-e29b-41d4-a716-446655440000.",
            "Call +82 10-1234-5678; the price is $19.99 / 19,99 €.",
            "Set the locale to sk-SK, and the risk-assessment-for-the-whole-team-2024 is done.",
            "Disk-management-and-backup-solutions-are-great.",
            "업데이트 후에도 문제가 계속되면 support@example.com 으로 연락 주세요.",
            "ログインできない場合は https://example.jp/help をご覧ください。",
            "Vielen Dank! Die Aufgabe ist erledigt, Bestellnummer 4711-0815.",
            "Merci pour votre avis, la version 3.2.1 corrige le problème.",
            "Gracias, el pedido #A-99812 ya fue enviado.",
            "شكراً لتقييمك! تم إصلاح المشكلة في الإصدار 2.0",
            "आपकी समीक्षा के लिए धन्यवाद, समस्या ठीक कर दी गई है।",
            "Спасибо за отзыв! Исправлено в версии 5.1.",
            "The key word here is PRIVATE KEY management, and we never BEGIN without consent.",
            "Our API uses a header like `Authorization: Bearer <token>` (no token shown).",
        ] {
            assert_eq!(s.scan(text), Ok(()), "{text}");
        }
    }

    #[test]
    fn fake_tokens_are_blocked() {
        let s = scanner();
        let token = |kind: &'static str| OutboundFinding::ApiToken { kind };
        let cases = [
            (
                format!("{}{}", "sk-", "demo-0000000000000000000000"),
                token("openai"),
            ),
            (format!("{}{}", "sk-proj-", "x".repeat(40)), token("openai")),
            (
                format!("{}{}", "sk-ant-", "api03-xxxxxxxxxxxxxxxxxxxx"),
                token("anthropic"),
            ),
            (format!("{}{}", "ghp_", "x".repeat(36)), token("github")),
            (format!("{}{}", "gho_", "x".repeat(36)), token("github")),
            (format!("{}{}", "ghu_", "x".repeat(36)), token("github")),
            (format!("{}{}", "ghs_", "x".repeat(36)), token("github")),
            (format!("{}{}", "ghr_", "x".repeat(36)), token("github")),
            (
                format!("{}{}", "github_pat_", "x".repeat(40)),
                token("github"),
            ),
            (
                format!("{}{}", "xoxb-", "0000000000-0000000000-xxxx"),
                token("slack"),
            ),
            (
                format!("{}{}", "xoxp-", "0000000000-xxxxxxxx"),
                token("slack"),
            ),
            (
                format!("{}{}", "xapp-", "1-A0000-0000-xxxx"),
                token("slack"),
            ),
            (format!("{}{}", "AIza", "x".repeat(35)), token("google")),
            (format!("{}{}", "sk_live_", "x".repeat(24)), token("stripe")),
            (format!("{}{}", "rk_live_", "x".repeat(24)), token("stripe")),
            (format!("{}{}", "nsec1", "q".repeat(58)), token("nostr")),
            (
                format!("{}{}", "AKIA", "FAKEFAKEFAKE0000"),
                OutboundFinding::AwsAccessKey,
            ),
            (
                format!("{}{}", "ASIA", "FAKEFAKEFAKE0000"),
                OutboundFinding::AwsAccessKey,
            ),
            (
                format!(
                    "{}.{}.{}",
                    "eyJhbGciOiJub25lIn0", "eyJzdWIiOiJmYWtlIn0", "ZmFrZQ"
                ),
                OutboundFinding::Jwt,
            ),
            (
                format!("{}.{}.", "eyJhbGciOiJub25lIn0", "eyJzdWIiOiJmYWtlIn0"),
                OutboundFinding::Jwt,
            ),
        ];
        for (secret, expected) in cases {
            for text in [
                secret.clone(),
                format!("Here you go: {secret} — keep it safe."),
                format!("{{\"token\":\"{secret}\"}}"),
                format!("키{secret}"),
                format!("line one\n{secret}\n"),
            ] {
                assert_eq!(s.scan(&text), Err(expected), "{text}");
            }
        }
    }

    #[test]
    fn fake_private_keys_are_blocked() {
        let s = scanner();
        for kind in ["RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", "", "PGP "] {
            let text = format!("Config attached:\n{}", pem(kind));
            assert_eq!(s.scan(&text), Err(OutboundFinding::PrivateKeyPem), "{kind}");
        }
    }

    #[test]
    fn urls_with_credentials_are_blocked() {
        let s = scanner();
        for (scheme, rest) in [
            ("postgres", "care:hunter2hunter2@db.internal:5432/care"),
            ("mysql", "root:pw@127.0.0.1/shop"),
            ("redis", ":s3cret@cache:6379/0"),
            ("amqp", "guest:guest@localhost:5672/"),
            ("https", "user:pass@example.com/path"),
            ("mongodb+srv", "app:pa%40ss@cluster0.example.net/db"),
        ] {
            let text = format!("Try connecting with {scheme}://{rest} please");
            assert_eq!(
                s.scan(&text),
                Err(OutboundFinding::UrlWithCredentials),
                "{text}"
            );
        }
    }

    #[test]
    fn own_secrets_are_blocked_exactly_and_case_sensitively() {
        let secret = format!("{}{}", "correct-horse-", "battery-staple");
        let s = OutboundScanner::new(vec![
            format!("{secret}\n"),
            String::new(),
            "short".to_owned(),
            "  ".to_owned(),
        ]);
        assert_eq!(
            s.scan(&format!("the password is {secret}!")),
            Err(OutboundFinding::OwnSecret)
        );
        assert_eq!(s.scan(&secret.to_uppercase()), Ok(()));
        // Short and empty values are ignored, so ordinary words pass.
        assert_eq!(s.scan("a short reply"), Ok(()));
        assert_eq!(s.own_secrets.len(), 1);
    }

    #[test]
    fn own_secret_wins_over_a_pattern() {
        let key = format!("{}{}", "ghp_", "y".repeat(36));
        let s = OutboundScanner::new(vec![key.clone()]);
        assert_eq!(s.scan(&key), Err(OutboundFinding::OwnSecret));
    }

    #[test]
    fn scan_all_reports_the_first_finding() {
        let s = scanner();
        assert_eq!(s.scan_all(["hello", "thanks", ""]), Ok(()));
        let key = format!("{}{}", "AKIA", "FAKEFAKEFAKE0000");
        assert_eq!(
            s.scan_all(["subject", key.as_str(), "body"]),
            Err(OutboundFinding::AwsAccessKey)
        );
        let texts = [String::from("a"), key];
        assert_eq!(
            s.scan_all(texts.iter().map(String::as_str)),
            Err(OutboundFinding::AwsAccessKey)
        );
    }

    #[test]
    fn debug_and_display_never_show_secret_values() {
        let secret = format!("{}{}", "correct-horse-", "battery-staple");
        let s = OutboundScanner::new(vec![secret.clone()]);
        assert!(!format!("{s:?}").contains(&secret));
        let finding = s.scan(&secret).unwrap_err();
        assert!(!format!("{finding} {finding:?}").contains(&secret));
    }
}

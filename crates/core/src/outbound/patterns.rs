//! The token-shaped patterns of the outbound scan: the table, its compiled set, and one check.

use std::sync::LazyLock;

use regex::RegexSet;

use super::OutboundFinding;

/// `(?-u:\b)`: an ASCII word boundary, so a prefix glued to a letter ("task-") does not count
/// but one glued to Hangul or punctuation does.
macro_rules! token {
    ($body:literal) => {
        concat!(r"(?-u:\b)", $body)
    };
}

/// Pattern, finding, audit label. Order decides which finding is reported when several match:
/// the more specific shape comes first (`sk-ant-` before `sk-`).
pub(super) const PATTERNS: &[(&str, OutboundFinding, &str)] = &[
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
pub(super) static PATTERN_SET: LazyLock<Option<RegexSet>> =
    LazyLock::new(|| RegexSet::new(PATTERNS.iter().map(|(pattern, _, _)| *pattern)).ok());

/// `Ok` if no pattern matches `text`, else the finding of the first pattern in table order.
pub(super) fn check(text: &str) -> Result<(), OutboundFinding> {
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

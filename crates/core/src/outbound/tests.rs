//! The scan's original tests: benign text passes, token shapes, keys and own secrets are refused.

use super::patterns::PATTERN_SET;
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
    assert_eq!(s.own_secrets().len(), 1);
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

#[test]
fn a_learned_secret_is_refused_by_every_clone_and_the_old_one_still_is() {
    // Not token-shaped, so only the own-secret check can refuse them.
    let old = format!("{}{}", "correct-horse-", "rotated-old");
    let new = format!("{}{}", "correct-horse-", "rotated-new");
    let s = OutboundScanner::new(vec![old.clone()]);
    let clone = s.clone();
    assert_eq!(clone.scan(&format!("key {new}")), Ok(()));
    s.learn(&new);
    s.learn(&new);
    for scanner in [&s, &clone] {
        assert_eq!(
            scanner.scan(&format!("key {new}")),
            Err(OutboundFinding::OwnSecret)
        );
        assert_eq!(
            scanner.scan(&format!("key {old}")),
            Err(OutboundFinding::OwnSecret)
        );
        assert_eq!(scanner.own_secrets().len(), 2);
    }
}

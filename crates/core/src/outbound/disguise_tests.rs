//! Tests of the scan seeing through disguise: invisible characters, compatibility forms, hex,
//! base64 and percent-encoding, and benign multilingual text that must still pass.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

use super::*;
use crate::config::Config;

/// A fake own secret with `@`, `/`, `?` and `>`: percent-encoding changes it, and its base64
/// holds `+` or `/` in every alignment, so the two base64 alphabets differ. Matches no pattern.
fn own() -> String {
    format!("{}{}", "sk-demo-", "p@ss/w0rd??>>staple")
}

/// A fake 64-digit hex key as an own secret, like the server's Nostr secret key in hex.
fn own_hex() -> String {
    format!("{}{}", "5eed", "0123456789abcdef".repeat(15))
        .get(..64)
        .unwrap()
        .to_owned()
}

fn scanner() -> OutboundScanner {
    OutboundScanner::new(vec![own(), own_hex()])
}

/// Fake tokens and the finding each must give.
fn fake_tokens() -> Vec<(String, OutboundFinding)> {
    vec![
        (
            format!("{}{}", "sk-", "demo-0000000000000000000000"),
            OutboundFinding::ApiToken { kind: "openai" },
        ),
        (
            format!("{}{}", "ghp_", "demo".repeat(9)),
            OutboundFinding::ApiToken { kind: "github" },
        ),
        (
            format!("{}{}", "nsec1", "q".repeat(58)),
            OutboundFinding::ApiToken { kind: "nostr" },
        ),
    ]
}

/// ZWSP, ZWJ, WJ, soft hyphen, VS16, a tag character, Hangul filler, CGJ.
const INVISIBLE: [char; 8] = [
    '\u{200B}',
    '\u{200D}',
    '\u{2060}',
    '\u{00AD}',
    '\u{FE0F}',
    '\u{E0020}',
    '\u{3164}',
    '\u{034F}',
];

/// `text` with `c` after every `every` characters.
fn split_by(text: &str, c: char, every: usize) -> String {
    let mut out = String::new();
    for (i, ch) in text.chars().enumerate() {
        if i > 0 && i % every == 0 {
            out.push(c);
        }
        out.push(ch);
    }
    out
}

/// ASCII `!`..`~` as their fullwidth forms (U+FF01..U+FF5E).
fn fullwidth(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '!'..='~' => char::from_u32(u32::from(c) + 0xFEE0).unwrap(),
            other => other,
        })
        .collect()
}

/// `secret` in a few surroundings a reply could give it.
fn in_replies(secret: &str) -> [String; 4] {
    [
        secret.to_owned(),
        format!("Here you go: {secret} — keep it safe."),
        format!("키{secret}"),
        format!("{{\"value\":\"{secret}\"}}"),
    ]
}

fn assert_refused(s: &OutboundScanner, secret: &str, expected: OutboundFinding) {
    for text in in_replies(secret) {
        assert_eq!(s.scan(&text), Err(expected), "{}", text.escape_unicode());
    }
}

#[test]
fn secrets_split_by_invisible_characters_are_refused() {
    let s = scanner();
    let mut cases = fake_tokens();
    cases.push((own(), OutboundFinding::OwnSecret));
    cases.push((own_hex(), OutboundFinding::OwnSecret));
    for (secret, expected) in cases {
        assert_eq!(s.scan(&secret), Err(expected), "plain");
        for c in INVISIBLE {
            for every in [1, 3, 11] {
                assert_refused(&s, &split_by(&secret, c, every), expected);
            }
        }
        // All of them at once, mixed.
        let mut mixed = String::new();
        for (i, ch) in secret.chars().enumerate() {
            mixed.push(ch);
            mixed.extend(INVISIBLE.get(i));
        }
        assert_refused(&s, &mixed, expected);
    }
}

#[test]
fn fullwidth_secrets_are_refused() {
    let s = scanner();
    let mut cases = fake_tokens();
    cases.push((own(), OutboundFinding::OwnSecret));
    for (secret, expected) in cases {
        let wide = fullwidth(&secret);
        assert_ne!(wide, secret);
        assert_refused(&s, &wide, expected);
        assert_refused(&s, &split_by(&wide, '\u{200B}', 4), expected);
    }
    assert_eq!(
        fullwidth(&format!("{}{}", "sk-", "demo")),
        "ｓｋ－ｄｅｍｏ",
        "the helper writes fullwidth forms"
    );
}

#[test]
fn own_secret_in_hex_is_refused_in_either_case() {
    let s = scanner();
    let lower = hex::encode(own());
    for text in [lower.clone(), lower.to_uppercase(), fullwidth(&lower)] {
        assert_refused(&s, &text, OutboundFinding::OwnSecret);
    }
    // A hex-shaped secret's case carries no meaning.
    assert_refused(&s, &own_hex().to_uppercase(), OutboundFinding::OwnSecret);
    assert_refused(
        &s,
        &hex::encode_upper(own_hex()),
        OutboundFinding::OwnSecret,
    );
}

#[test]
fn own_secret_in_base64_is_refused_in_every_alignment() {
    let s = scanner();
    let prefixes: [&[u8]; 5] = [b"", b"x", b"\xff", b"xy", b"\x00\xfe"];
    let suffixes: [&[u8]; 3] = [b"", b"!", b"\n\xff"];
    for prefix in prefixes {
        for suffix in suffixes {
            let stream = [prefix, own().as_bytes(), suffix].concat();
            assert_ne!(STANDARD.encode(&stream), URL_SAFE.encode(&stream));
            for engine in [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD] {
                let encoded = engine.encode(&stream);
                assert_refused(&s, &encoded, OutboundFinding::OwnSecret);
                assert_refused(
                    &s,
                    &format!("Attachment (base64): {encoded} — end"),
                    OutboundFinding::OwnSecret,
                );
            }
        }
    }
}

#[test]
fn own_secret_percent_encoded_is_refused() {
    let s = scanner();
    let secret = own();
    let fully_upper: String = secret.bytes().map(|b| format!("%{b:02X}")).collect();
    let fully_lower: String = secret.bytes().map(|b| format!("%{b:02x}")).collect();
    let partly = secret
        .replace('@', "%40")
        .replace('/', "%2F")
        .replace('?', "%3f")
        .replace('>', "%3E");
    assert_ne!(partly, secret);
    for encoded in [fully_upper, fully_lower, partly] {
        assert_refused(&s, &encoded, OutboundFinding::OwnSecret);
        assert_refused(
            &s,
            &format!("Log in at https://example.com/login?next=%2Fhome&pw={encoded}&lang=ko"),
            OutboundFinding::OwnSecret,
        );
    }
}

#[test]
fn database_password_is_refused_decoded_and_as_written() {
    let vars = [
        (
            "DATABASE_URL",
            "postgres://care:p%40ss-w%2Frd-sk-demo@db/care",
        ),
        ("CARE_AUDIT_SALT", "sk-demo-audit-salt-0000"),
    ];
    let config = Config::from_env(&crate::env::MapEnv::of(vars)).unwrap();
    let s = OutboundScanner::new(
        config
            .own_secrets()
            .iter()
            .map(|s| crate::env::ExposeSecret::expose_secret(s).to_owned())
            .collect(),
    );
    for text in [
        "The password is p@ss-w/rd-sk-demo.",
        "The password is p%40ss-w%2Frd-sk-demo.",
        "The password is p\u{200B}@ss-w/rd-sk-demo.",
    ] {
        assert_eq!(s.scan(text), Err(OutboundFinding::OwnSecret), "{text}");
    }
}

#[test]
fn encoded_forms_of_short_secrets_stay_quiet() {
    // An 8-byte secret's base64 is under MIN_ENCODED_CHARS in every alignment: not matched.
    let secret = format!("{}{}", "sk-", "demo8");
    let s = OutboundScanner::new(vec![secret.clone()]);
    assert_eq!(s.own_secrets().len(), 1);
    assert_eq!(s.scan(&secret), Err(OutboundFinding::OwnSecret));
    assert_eq!(
        s.scan(&hex::encode(&secret)),
        Err(OutboundFinding::OwnSecret)
    );
    assert_eq!(s.scan(&STANDARD.encode(&secret)), Ok(()));
}

#[test]
fn benign_multilingual_text_passes() {
    let secrets = [scanner(), OutboundScanner::new(Vec::new())];
    for text in [
        "주문하신 상품이 발송되었습니다. 불편을 드려 죄송합니다!",
        "ご連絡ありがとうございます！　注文番号：１２３４５６７８９０（ご確認ください）。",
        "ＳＫＵ－１２３４５ と ｓｋｉｌｌ－ｂａｓｅｄ の設定を確認しました。",
        "شكراً\u{061C} لتواصلك! رقم الطلب ١٢٣٤٥\u{061C}-٦٧",
        "Thanks ❤\u{FE0F} from the team 👩\u{200D}💻 and 👨\u{200D}👩\u{200D}👧\u{200D}👦 🏳\u{FE0F}\u{200D}🌈",
        "Viele Grüße aus der Straße — Maßnahmen sind erledigt, STRASSE und Fuß.",
        "İstanbul'daki mağazamız: İyi günler! IŞIK ılık ıslak",
        "ขอบคุณ\u{200B}ครับ สินค้า\u{200B}จัดส่ง\u{200B}แล้ว",
        "क्\u{200D}ष और क्\u{200C}ष दोनों सही हैं।",
        "Order 3F2A9C1E4B7D8A6F5E0C1B2A3D4E5F6A7B8C9D0E1F2A3B4C5D6E7F8A9B0C1D2E shipped.",
        "Invoice 0xDEADBEEFCAFEBABE0123456789ABCDEF, ref 00000000000000000000000000000000.",
        "Tracking 1Z999AA10123456784 and 9400111899223197428490.",
        "Words like Internationalization, Constantinople and SGVsbG8gd29ybGQ= are harmless.",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/ and dGhhbmtzIGZvciB3cml0aW5n",
        "Search https://example.com/search?q=caf%C3%A9%20au%20lait&lang=fr — 100% done, 50%off, %zz.",
        "The ﬁnal ² ① ㎏ ™ signs fold, and that is fine.",
        "Set the locale to sk-SK, and the risk-assessment-for-the-whole-team-2024 is done.",
        "ｔａｓｋ－ｆｏｒｃｅ ａｓｋ－ｆｏｒ－ｈｅｌｐ",
    ] {
        for s in &secrets {
            assert_eq!(s.scan(text), Ok(()), "{text}");
        }
    }
}

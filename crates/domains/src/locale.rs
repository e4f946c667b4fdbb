//! The locale gate of the replies every domain sends (`asc_review_reply`, `mail_send`): the
//! locale must be allowed (`CARE_LOCALES`), and when language detection of the body is
//! reliable, the detected language must be the locale's.
//!
//! # Default locales (16)
//!
//! App Store Connect's own localization codes for the storefront languages with the most
//! reviews: `en-US`, `en-GB`, `en-AU`, `de-DE`, `fr-FR`, `es-ES`, `es-MX`, `it`, `ja`, `ko`,
//! `zh-Hans`, `zh-Hant`, `pt-BR`, `ru`, `nl-NL`, `ar-SA`. `CARE_LOCALES` replaces the list.
//!
//! # Detection
//!
//! `whatlang` decides; a result it marks unreliable (short or mixed text) is not held against
//! the reply. Japanese written only in kanji is detected as Mandarin, so `ja` accepts both.
//! A configured locale whose language is not in [`expected_languages`] is checked against the
//! allowlist only.

use care_core::decision::{self, Rule};
use care_core::env::EnvReader;
use care_core::error::{ErrorCode, ToolError};
use whatlang::Lang;

/// The locales a reply may be written in when `CARE_LOCALES` is unset.
pub const DEFAULT_LOCALES: [&str; 16] = [
    "en-US", "en-GB", "en-AU", "de-DE", "fr-FR", "es-ES", "es-MX", "it", "ja", "ko", "zh-Hans",
    "zh-Hant", "pt-BR", "ru", "nl-NL", "ar-SA",
];

/// A BCP 47-like tag: a 2–3 letter language, then up to two subtags of 2–8 letters or digits.
pub fn is_locale_tag(tag: &str) -> bool {
    let mut parts = tag.split(['-', '_']);
    let lang_ok = parts
        .next()
        .is_some_and(|l| (2..=3).contains(&l.len()) && l.bytes().all(|b| b.is_ascii_alphabetic()));
    let rest: Vec<&str> = parts.collect();
    lang_ok
        && tag.len() <= 16
        && rest.len() <= 2
        && rest
            .iter()
            .all(|p| (2..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// The languages a body in `locale` may be detected as; empty when we cannot tell.
pub fn expected_languages(locale: &str) -> &'static [Lang] {
    let primary = locale
        .split(['-', '_'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match primary.as_str() {
        "en" => &[Lang::Eng],
        "de" => &[Lang::Deu],
        "fr" => &[Lang::Fra],
        "es" => &[Lang::Spa],
        "it" => &[Lang::Ita],
        "ja" => &[Lang::Jpn, Lang::Cmn],
        "ko" => &[Lang::Kor],
        "zh" => &[Lang::Cmn],
        "pt" => &[Lang::Por],
        "ru" => &[Lang::Rus],
        "nl" => &[Lang::Nld],
        "ar" => &[Lang::Ara],
        "tr" => &[Lang::Tur],
        "sv" => &[Lang::Swe],
        "da" => &[Lang::Dan],
        "fi" => &[Lang::Fin],
        "no" | "nb" => &[Lang::Nob],
        "pl" => &[Lang::Pol],
        "cs" => &[Lang::Ces],
        "el" => &[Lang::Ell],
        "he" => &[Lang::Heb],
        "hi" => &[Lang::Hin],
        "id" => &[Lang::Ind],
        "th" => &[Lang::Tha],
        "uk" => &[Lang::Ukr],
        "vi" => &[Lang::Vie],
        "hu" => &[Lang::Hun],
        "ro" => &[Lang::Ron],
        "hr" => &[Lang::Hrv],
        "sk" => &[Lang::Slk],
        "ca" => &[Lang::Cat],
        _ => &[],
    }
}

/// The allowed spelling of `locale` (matched case-insensitively), or LOCALE_REJECTED; then the
/// language check of `body`.
pub fn check<'a>(allowed: &'a [String], locale: &str, body: &str) -> Result<&'a str, ToolError> {
    let Some(canonical) = allowed.iter().find(|l| l.eq_ignore_ascii_case(locale)) else {
        return Err(
            ToolError::new(ErrorCode::LocaleRejected).with_detail("locale not in CARE_LOCALES")
        );
    };
    let expected = expected_languages(canonical);
    if expected.is_empty() {
        decision::passed(Rule::Locale);
        return Ok(canonical);
    }
    match whatlang::detect(body) {
        Some(info) if info.is_reliable() && !expected.contains(&info.lang()) => Err(
            ToolError::new(ErrorCode::LocaleRejected).with_detail(format!(
                "body detected as {} for locale {canonical}",
                info.lang().code()
            )),
        ),
        _ => {
            decision::passed(Rule::Locale);
            Ok(canonical)
        }
    }
}

/// `CARE_LOCALES`, or the default list; `None` after recording a problem.
pub fn read(r: &mut EnvReader<'_>) -> Option<Vec<String>> {
    if r.optional("CARE_LOCALES").is_none() {
        return Some(DEFAULT_LOCALES.iter().map(|l| (*l).to_owned()).collect());
    }
    let listed = r.list("CARE_LOCALES", "a locale like en-US", is_locale_tag);
    let mut out: Vec<String> = Vec::new();
    for item in listed {
        if !out.iter().any(|l| l.eq_ignore_ascii_case(&item)) {
            out.push(item);
        }
    }
    if out.is_empty() {
        r.problem("CARE_LOCALES names no locale");
        return None;
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn defaults() -> Vec<String> {
        DEFAULT_LOCALES.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn every_default_locale_is_a_tag_with_a_language() {
        for l in DEFAULT_LOCALES {
            assert!(is_locale_tag(l), "{l}");
            assert!(!expected_languages(l).is_empty(), "{l}");
        }
        assert!(!is_locale_tag("english"));
        assert!(!is_locale_tag("en US"));
        assert!(!is_locale_tag(""));
    }

    #[test]
    fn matching_language_passes_and_a_mismatch_is_rejected() {
        let allowed = defaults();
        let ko = "소중한 리뷰 감사합니다! 알림 문제는 다음 업데이트에서 해결될 예정입니다.";
        let de = "Vielen Dank für Ihre Bewertung! Wir beheben den Absturz mit dem nächsten Update.";
        let en =
            "Thank you for the review! We are fixing the notification problem in the next update.";
        assert_eq!(check(&allowed, "ko", ko).unwrap(), "ko");
        assert_eq!(check(&allowed, "de-de", de).unwrap(), "de-DE");
        assert_eq!(check(&allowed, "en-US", en).unwrap(), "en-US");
        assert_eq!(
            check(&allowed, "en-US", de).unwrap_err().code,
            ErrorCode::LocaleRejected
        );
        assert_eq!(
            check(&allowed, "ko", en).unwrap_err().code,
            ErrorCode::LocaleRejected
        );
        assert_eq!(
            check(&allowed, "sv", en).unwrap_err().code,
            ErrorCode::LocaleRejected
        );
    }

    #[test]
    fn unreliable_detection_is_not_held_against_the_reply() {
        assert!(check(&defaults(), "de-DE", "OK!").is_ok());
    }
}

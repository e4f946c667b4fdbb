//! The views of a text the outbound scan looks at: as written, normalised, and percent-decoded.

use std::borrow::Cow;

use icu_normalizer::ComposingNormalizerBorrowed;
use icu_properties::props::DefaultIgnorableCodePoint;
use icu_properties::{CodePointSetData, CodePointSetDataBorrowed};

/// Unicode Default_Ignorable_Code_Point: characters that render as nothing (ZWSP, ZWJ, WJ, soft
/// hyphen, variation selectors, tag characters, Hangul fillers…), so they can split a secret
/// without changing how it reads.
const IGNORABLE: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<DefaultIgnorableCodePoint>();

/// NFKC folds compatibility forms (fullwidth letters, ligatures, superscripts) to plain ones.
const NFKC: ComposingNormalizerBorrowed<'static> = ComposingNormalizerBorrowed::new_nfkc();

fn is_ignorable(c: char) -> bool {
    IGNORABLE.contains(c)
}

/// `text` without default-ignorable code points, then in NFKC. Borrows when nothing changes.
pub(super) fn normalize(text: &str) -> Cow<'_, str> {
    // ASCII holds no ignorable code point and is already NFKC: the common case costs one pass.
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    let stripped: Cow<'_, str> = if text.chars().any(is_ignorable) {
        Cow::Owned(text.chars().filter(|c| !is_ignorable(*c)).collect())
    } else {
        Cow::Borrowed(text)
    };
    match NFKC.normalize(&stripped) {
        Cow::Borrowed(_) => stripped,
        Cow::Owned(mut composed) => {
            // No compatibility mapping in today's data yields an ignorable code point; stripped
            // again anyway, so a data update cannot reopen the gap.
            composed.retain(|c| !is_ignorable(c));
            Cow::Owned(composed)
        }
    }
}

/// `%XX` sequences decoded (either case of hex digit); invalid UTF-8 becomes U+FFFD, and a `%`
/// not followed by two hex digits stays as it is.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    match percent_encoding::percent_decode_str(text).decode_utf8_lossy() {
        Cow::Borrowed(_) => None,
        Cow::Owned(decoded) => Some(decoded),
    }
}

/// The text as written, then normalised, then that percent-decoded; a view equal to the one
/// before it is left out. Scanning the raw text too means normalising can only add findings.
pub(super) fn views(text: &str) -> Vec<Cow<'_, str>> {
    let mut views = vec![Cow::Borrowed(text)];
    if let Cow::Owned(normalized) = normalize(text) {
        views.push(Cow::Owned(normalized));
    }
    let last = views.last().map_or(text, |view| view.as_ref());
    if let Some(decoded) = percent_decode(last) {
        views.push(Cow::Owned(decoded));
    }
    views
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignorable_code_points_are_removed() {
        for c in [
            '\u{200B}',
            '\u{200D}',
            '\u{2060}',
            '\u{00AD}',
            '\u{FE0F}',
            '\u{E0020}',
            '\u{3164}',
            '\u{034F}',
            '\u{061C}',
            '\u{FFA0}',
            '\u{180E}',
        ] {
            assert!(is_ignorable(c), "U+{:04X}", u32::from(c));
            assert_eq!(
                normalize(&format!("ab{c}cd")),
                "abcd",
                "U+{:04X}",
                u32::from(c)
            );
        }
        for c in ['a', ' ', '\u{00A0}', '\u{3000}', '가', 'ß', 'İ'] {
            assert!(!is_ignorable(c), "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn compatibility_forms_fold_and_ascii_is_borrowed() {
        assert_eq!(normalize("ｓｋ－ｄｅｍｏ"), "sk-demo");
        assert_eq!(normalize("ﬁle ²"), "file 2");
        assert!(matches!(normalize("plain ascii"), Cow::Borrowed(_)));
        assert!(matches!(normalize("업데이트 ß"), Cow::Borrowed(_)));
    }

    #[test]
    fn views_skip_repeats() {
        assert_eq!(views("hello").len(), 1);
        assert_eq!(views("100%").len(), 1);
        assert_eq!(views("a%40b"), ["a%40b", "a@b"]);
        assert_eq!(views("ａ%40b"), ["ａ%40b", "a%40b", "a@b"]);
    }
}

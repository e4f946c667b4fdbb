//! Which code points a person cannot see as themselves, from Unicode's own property data
//! (ICU4X compiled data), so the set follows Unicode instead of a hand list.

use icu_properties::props::{DefaultIgnorableCodePoint, Emoji, GeneralCategory, VariationSelector};
use icu_properties::{CodePointMapData, CodePointSetData};

/// ZERO WIDTH NON-JOINER: kept inside words (Persian, Indic scripts).
pub(super) const ZWNJ: char = '\u{200c}';
/// ZERO WIDTH JOINER: kept inside words and emoji sequences.
pub(super) const ZWJ: char = '\u{200d}';
/// VARIATION SELECTOR-15 (text presentation): kept right after an emoji.
pub(super) const VS15: char = '\u{fe0e}';
/// VARIATION SELECTOR-16 (emoji presentation): kept right after an emoji.
pub(super) const VS16: char = '\u{fe0f}';
/// LEFT-TO-RIGHT MARK: always kept.
pub(super) const LRM: char = '\u{200e}';
/// RIGHT-TO-LEFT MARK: always kept.
pub(super) const RLM: char = '\u{200f}';

/// Whether `c` is invisible, zero-width, a control or formatting character, unassigned,
/// private-use, or a space other than U+0020: the set shown as escapes unless an exception of
/// the module doc applies. `\n` is in the set (it is a control); the block layout keeps it.
pub fn in_escaped_set(c: char) -> bool {
    if CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || CodePointSetData::new::<VariationSelector>().contains(c)
    {
        return true;
    }
    match CodePointMapData::<GeneralCategory>::new().get(c) {
        GeneralCategory::Control
        | GeneralCategory::Format
        | GeneralCategory::Unassigned
        | GeneralCategory::PrivateUse
        | GeneralCategory::Surrogate
        | GeneralCategory::LineSeparator
        | GeneralCategory::ParagraphSeparator => true,
        // NBSP, the en/em spaces, U+3000 and friends look like a space but are not one.
        GeneralCategory::SpaceSeparator => c != ' ',
        _ => false,
    }
}

/// Whether `c` has the Emoji property (the code points a VS15/VS16 may follow).
pub(super) fn is_emoji(c: char) -> bool {
    CodePointSetData::new::<Emoji>().contains(c)
}

/// Whether `c` is VS15 or VS16, the presentation selectors an emoji may carry.
pub(super) fn is_presentation_selector(c: char) -> bool {
    c == VS15 || c == VS16
}

/// Whether `c` is ZWJ or ZWNJ.
pub(super) fn is_joiner(c: char) -> bool {
    c == ZWJ || c == ZWNJ
}

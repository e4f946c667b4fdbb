//! The model-facing fence: whatever a stranger writes, the fenced text opens and closes exactly
//! once, holds no tag, no raw control or bidi code point, and decodes back to the input (so
//! two different texts never fence alike).
#![no_main]

use care_core::fence::{FENCE_CLOSE, FENCE_OPEN, escape_for_display, fence};
use libfuzzer_sys::fuzz_target;

fn is_raw_hazard(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
        || ('\u{e0000}'..='\u{e007f}').contains(&c)
}

fuzz_target!(|text: &str| {
    let fenced = fence(text);
    let inner = fenced
        .strip_prefix(FENCE_OPEN)
        .and_then(|s| s.strip_suffix(FENCE_CLOSE))
        .expect("fence keeps its tags at both ends");
    assert!(
        !inner.contains('<') && !inner.contains('>'),
        "a tag inside the fence"
    );
    assert!(
        !inner.chars().any(is_raw_hazard),
        "a raw hazard inside the fence"
    );
    assert_eq!(
        escape_for_display(text),
        inner,
        "the two entry points disagree"
    );
    let back = care_fuzz::unfence_inner(inner).expect("every escape is well-formed");
    assert_eq!(back, text, "the fence lost or changed text");
});

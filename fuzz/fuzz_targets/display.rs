//! The person-facing escaping (approval cards, the operator CLI): a line value never breaks its
//! line, the count of escapes is right, the output is all visible with no raw Nostr reference,
//! and it decodes back to the input (one-to-one).
#![no_main]

use care_core::display::{escape_block, escape_line, is_all_visible};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let line = escape_line(text);
    assert!(!line.text.contains('\n'), "a line value broke its line");
    assert!(
        is_all_visible(&line.text),
        "an invisible code point on a line"
    );
    assert_eq!(
        line.text.matches("\\u{").count(),
        line.escaped,
        "escape count"
    );
    assert_eq!(
        care_fuzz::unescape_code_points(&line.text).as_deref(),
        Some(text)
    );

    for shown in [&line, &escape_block(text)] {
        assert!(
            !shown.text.to_ascii_lowercase().contains("nostr:"),
            "a Nostr reference a chat client would render"
        );
        assert_eq!(shown.text.matches("\\u{3a}").count(), shown.references);
    }

    let block = escape_block(text);
    assert_eq!(block.text.matches('\n').count(), text.matches('\n').count());
    assert_eq!(
        block.text.matches("\\u{").count(),
        block.escaped,
        "escape count"
    );
    for piece in block.text.split('\n') {
        assert!(
            is_all_visible(piece),
            "an invisible code point in a block line"
        );
    }
    assert_eq!(
        care_fuzz::unescape_code_points(&block.text).as_deref(),
        Some(text)
    );
});

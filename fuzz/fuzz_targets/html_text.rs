//! HTML from strangers (forum posts, mail bodies) to text: no panic escapes the renderers, and
//! the text stays proportionate to the input (a small post cannot become megabytes for the
//! model to read).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|html: &str| {
    let bound = 64 * html.len() + 4096;
    let forum = care_domains::discourse::text::plain_text(html);
    assert!(
        forum.len() <= bound,
        "forum text of {} bytes from {}",
        forum.len(),
        html.len()
    );
    let mail = care_domains::mail::html::to_text(html);
    assert!(
        mail.len() <= bound,
        "mail text of {} bytes from {}",
        mail.len(),
        html.len()
    );
});

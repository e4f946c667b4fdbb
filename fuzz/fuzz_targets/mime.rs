//! MIME from strangers: a fetched part decoded under whatever transfer encoding, charset and
//! type BODYSTRUCTURE claimed, and encoded-word file names. Never a panic, no CR left, and a
//! file name stays one line.
#![no_main]

use arbitrary::Arbitrary;
use care_domains::mail::model::{decode_part, decode_words};
use care_domains::mail::structure::Leaf;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    mime: u8,
    charset: Option<&'a str>,
    encoding: u8,
    name: &'a str,
    raw: &'a [u8],
}

const MIMES: [&str; 4] = [
    "text/plain",
    "text/html",
    "application/octet-stream",
    "text/x-other",
];
const ENCODINGS: [&str; 5] = ["7bit", "8bit", "base64", "quoted-printable", "x-uuencode"];

fuzz_target!(|input: Input<'_>| {
    let leaf = Leaf {
        section: vec![1],
        mime: MIMES[usize::from(input.mime) % MIMES.len()].to_owned(),
        charset: input.charset.map(str::to_owned),
        encoding: ENCODINGS[usize::from(input.encoding) % ENCODINGS.len()].to_owned(),
        size: u32::try_from(input.raw.len()).unwrap_or(u32::MAX),
        name: None,
        attachment: false,
    };
    let text = decode_part(input.raw, &leaf);
    assert!(!text.contains('\r'), "a CR survived decoding");
    let name = decode_words(input.name);
    assert!(
        !name.contains('\n') && !name.contains('\r'),
        "a file name broke its line: {name:?}"
    );
});

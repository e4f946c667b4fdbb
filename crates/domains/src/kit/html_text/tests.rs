//! The bound engages on every shape of deep nesting, and nothing below it changes a reading.

use super::*;

const WIDTH: usize = 100;

fn nested(open: &str, close: &str, levels: usize, inner: &str) -> String {
    format!("{}{inner}{}", open.repeat(levels), close.repeat(levels))
}

/// How many bytes the bounded parse read, or `None` if it read the whole document.
fn stopped_after(html: &str) -> Option<usize> {
    match parse_bounded(html) {
        Parsed::Dom(_) => None,
        Parsed::TooDeep { parsed_bytes } => Some(parsed_bytes),
    }
}

#[test]
fn ordinary_documents_read_exactly_as_html2text_reads_them() {
    let documents = [
        concat!(
            r#"<p>See <a href="https://example.com/help?a=1">the help page</a>.</p>"#,
            r#"<aside class="quote"><div class="title">bob:</div><blockquote><p>it crashes</p></blockquote></aside>"#,
            r#"<pre><code class="lang-sh">care --sync
  --force</code></pre><p>Run <code>a &lt; b</code>.</p><img src="s.png" alt="the error">"#,
        ),
        "<html><head><title>t</title><style>p{}</style></head><body><table><tr><td>a</td><td>b</td></tr></table><ul><li>one<li>two</ul></body></html>",
        "<p>unclosed <b>bold <i>both</b> italic</i><p>next",
        "<template><p>inside</p></template><svg><g><text>drawn</text></g></svg><math><mi>x</mi></math>",
        &nested("<div>", "</div>", 200, "deep but fine"),
        &nested("<ul><li>", "</li></ul>", 60, "a real outline"),
        &format!("<p>{}</p>", "word ".repeat(2_000)),
        "",
        "plain text, no markup at all",
        "<p>caf\u{e9} \u{1F600} \u{5B57}</p>",
    ];
    // The widths the mail and forum domains use; at 100 the 60-level outline is too narrow
    // for html2text, which refuses it: then the text is read without layout.
    for width in [100, 10_000] {
        for html in documents {
            let (text, reading) = to_text(html, width).unwrap();
            match layout().string_from_read(html.as_bytes(), width) {
                Ok(expected) => {
                    assert_eq!(reading, Reading::LaidOut, "{html}");
                    assert_eq!(text, expected, "{html}");
                }
                Err(_) => {
                    assert_eq!(reading, Reading::Flattened, "{html}");
                    assert!(text.contains("a real outline"), "{text}");
                }
            }
        }
    }
}

#[test]
fn a_quote_chain_too_deep_for_the_width_keeps_its_text() {
    // 60 quote levels need 120 columns: html2text refuses a mail's 100.
    let html = format!("{}the first message", "<blockquote>".repeat(60));
    let (text, reading) = to_text(&html, 100).unwrap();
    assert_eq!(reading, Reading::Flattened);
    assert_eq!(text, format!("{FLATTENED_NOTE}\nthe first message"));
}

#[test]
fn a_layout_heavier_than_the_bound_is_read_flat() {
    // 250 quotes around 32,000 paragraphs: within the depth bound, but html2text would write
    // every paragraph with 250 prefixes (31 MB).
    let html = format!(
        "{}{}",
        "<blockquote>".repeat(250),
        "<p>z</p>".repeat(32_000)
    );
    let Parsed::Dom(dom) = parse_bounded(&html) else {
        panic!("within the depth bound");
    };
    assert!(weight::depth_sum(&dom, MAX_LAYOUT_WEIGHT) > MAX_LAYOUT_WEIGHT);
    let (text, reading) = to_text(&html, 10_000).unwrap();
    assert_eq!(reading, Reading::Flattened);
    assert!(text.len() < html.len(), "{} bytes", text.len());
    assert_eq!(text.matches('z').count(), 32_000);
}

#[test]
fn a_layout_many_times_its_html_is_read_flat() {
    // Found by the `html_text` fuzz target: 90 quotes around 280 paragraphs (3.9 KB) weigh
    // within their budget, but every line carries 90 prefixes: hundreds of KB of text.
    let html = format!("{}{}", "<blockquote>".repeat(90), "<p>z</p>".repeat(280));
    let Parsed::Dom(dom) = parse_bounded(&html) else {
        panic!("within the depth bound");
    };
    assert!(weight::depth_sum(&dom, u64::MAX) <= weight_budget(html.len()));
    let laid_out = layout().string_from_read(html.as_bytes(), 10_000).unwrap();
    assert!(laid_out.len() > growth_budget(html.len()));
    let (text, reading) = to_text(&html, 10_000).unwrap();
    assert_eq!(reading, Reading::Flattened);
    assert_eq!(text.matches('z').count(), 280);
}

#[test]
fn no_small_document_grows_past_its_budget() {
    // The fuzz target's shapes at its 4 KB inputs, at both domains' widths.
    let shapes = [
        nested("<blockquote>", "", 90, &"<p>z</p>".repeat(280)),
        nested("<blockquote>", "", 45, &"word ".repeat(700)),
        nested("<ul><li>", "", 100, &"<li>z".repeat(600)),
        nested("<ol><li>", "", 40, &"<li>z".repeat(600)),
        nested("<dl><dd>", "", 60, &"z<br>".repeat(600)),
        format!("<table><tr>{}</tr></table>", "<td>x</td>".repeat(390)),
        format!(
            "<table>{}{}</table>",
            "<tr><td>aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa</td></tr>",
            "<tr><td>".repeat(450)
        ),
    ];
    for html in &shapes {
        for width in [100, 10_000] {
            let (text, _) = to_text(html, width).unwrap();
            assert!(
                text.len() <= growth_budget(html.len()),
                "{}: {} bytes from {}",
                &html[..30],
                text.len(),
                html.len()
            );
        }
    }
}

#[test]
fn the_weight_is_the_sum_of_the_depths_and_stops_past_its_limit() {
    let Parsed::Dom(dom) = parse_bounded("<p>a</p>") else {
        panic!("shallow");
    };
    // html 1, head 2, body 2, p 3, the text 4.
    assert_eq!(weight::depth_sum(&dom, u64::MAX), 12);
    assert!(weight::depth_sum(&dom, 5) > 5);
    assert!(weight::depth_sum(&dom, 5) < 12);
}

#[test]
fn a_table_of_many_columns_is_laid_out_without_growing() {
    // With borders, every border line spans all 25,600 columns: 256 MB of text.
    let html = format!("<table><tr>{}</tr></table>", "<td>x</td>".repeat(25_600));
    let (text, reading) = to_text(&html, 10_000).unwrap();
    assert_eq!(reading, Reading::LaidOut);
    assert!(text.len() < html.len(), "{} bytes", text.len());
    assert_eq!(text.matches('x').count(), 25_600);
    let table = "<table><tr><th>Device</th><th>Version</th></tr><tr><td>iPhone 15</td><td>17.2</td></tr></table>";
    assert_eq!(
        to_text(table, 100).unwrap().0,
        "Device    Version\niPhone 15 17.2   \n"
    );
}

#[test]
fn every_shape_of_deep_nesting_is_stopped_early_and_read_flat() {
    const LEVELS: usize = 20_000;
    let shapes = [
        nested("<div>", "</div>", LEVELS, "needle"),
        nested("<ul><li>", "</li></ul>", LEVELS, "needle"),
        nested("<blockquote>", "", LEVELS, "needle"),
        nested("<b>", "", LEVELS, "needle"),
        nested("<span>", "", LEVELS, "needle"),
        // Fostered out of the table, then nested inside the fostered element.
        format!("<table>{}", nested("<div>", "", LEVELS, "needle")),
        // A template's contents are a detached fragment: the count must not restart in one.
        nested("<template>", "", LEVELS, "needle"),
        nested("<div><template>", "", LEVELS, "needle"),
        nested("<svg><g>", "", LEVELS, "needle"),
        nested("<math><mrow>", "", LEVELS, "needle"),
        nested("<table><tr><td>", "", LEVELS, "needle"),
    ];
    for html in &shapes {
        let parsed = stopped_after(html);
        let shape = &html[..40];
        let Some(parsed) = parsed else {
            panic!("{shape}: parsed to the end");
        };
        // The parse stopped within a piece or two of the bound, not at the end.
        assert!(
            parsed <= 16 * MAX_DEPTH + 2 * PIECE_BYTES,
            "{shape}: {parsed} bytes"
        );
        let (text, reading) = to_text(html, WIDTH).unwrap();
        assert_eq!(reading, Reading::Flattened, "{shape}");
        assert!(text.starts_with(FLATTENED_NOTE), "{shape}");
        assert!(text.contains("needle"), "{shape}");
    }
}

#[test]
fn the_bound_sits_at_max_depth() {
    // `html` and `body` are the first two levels; the text node is one below the last div.
    let within = nested("<div>", "</div>", MAX_DEPTH - 3, "x");
    let beyond = nested("<div>", "</div>", MAX_DEPTH - 1, "x");
    // The parse itself decides: neither document is near the weight or growth bounds.
    assert!(matches!(parse_bounded(&within), Parsed::Dom(_)));
    assert!(matches!(parse_bounded(&beyond), Parsed::TooDeep { .. }));
    assert_eq!(to_text(&within, WIDTH).unwrap().1, Reading::LaidOut);
    assert_eq!(to_text(&beyond, WIDTH).unwrap().1, Reading::Flattened);
}

#[test]
fn a_flat_reading_keeps_every_word_and_drops_what_is_not_text() {
    let html = format!(
        "{}<p>Hello&nbsp;<b>there</b> &amp; welcome</p>\
         <script>var s = '</div><p>not text</p>';</script><style>p{{color:red}}</style>\
         <title>meta</title><a href=\"https://example.com/x\">the link</a>\
         <img alt=\"a diagram\"><textarea>typed &lt;here&gt;</textarea><!-- a comment --><p>bye",
        "<div>".repeat(MAX_DEPTH + 10)
    );
    let (text, reading) = to_text(&html, WIDTH).unwrap();
    assert_eq!(reading, Reading::Flattened);
    let body = text.strip_prefix(FLATTENED_NOTE).unwrap();
    assert!(body.contains("Hello there & welcome"), "{body}");
    assert!(body.contains("the link (https://example.com/x)"), "{body}");
    assert!(body.contains("[a diagram]"), "{body}");
    assert!(body.contains("typed <here>"), "{body}");
    assert!(body.ends_with("bye"), "{body}");
    for absent in ["not text", "color", "meta", "a comment", "<", "var s"] {
        assert!(
            !body.replace("<here>", "").contains(absent),
            "{absent}: {body}"
        );
    }
}

#[test]
fn the_largest_hostile_post_is_read_whole() {
    // 256 KiB of nesting, the size the forum and mail domains accept.
    let levels = 256 * 1024 / "<ul><li>w".len();
    let html = "<ul><li>w".repeat(levels);
    let (text, reading) = to_text(&html, WIDTH).unwrap();
    assert_eq!(reading, Reading::Flattened);
    let body = text.strip_prefix(FLATTENED_NOTE).unwrap();
    assert_eq!(body.matches('w').count(), levels);
}

#[test]
fn pieces_end_on_character_boundaries_and_cover_the_text() {
    let text = format!("{}\u{1F600}{}", "a".repeat(1_022), "\u{e9}".repeat(700));
    let cut: Vec<&str> = pieces(&text, PIECE_BYTES).collect();
    assert!(cut.iter().all(|p| !p.is_empty() && p.len() <= PIECE_BYTES));
    assert_eq!(cut.concat(), text);
    assert_eq!(pieces("\u{1F600}", 2).collect::<Vec<_>>(), ["\u{1F600}"]);
    assert_eq!(pieces("", 8).count(), 0);
}

//! A stranger's text cut to a length the model can take, shared so that every domain counts
//! and cuts alike: by characters (never inside one), and saying whether it cut.

/// `text` cut to its first `max` characters, and whether anything was cut.
pub fn to_chars(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((i, _)) => (text[..i].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_by_characters_and_says_so() {
        assert_eq!(to_chars("héllo", 2), ("hé".to_owned(), true));
        assert_eq!(to_chars("héllo", 5), ("héllo".to_owned(), false));
        assert_eq!(to_chars("", 0), (String::new(), false));
        assert_eq!(to_chars("ab", 0), (String::new(), true));
    }
}

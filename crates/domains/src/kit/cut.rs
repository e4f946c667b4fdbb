//! A stranger's text cut to a length the model can take, shared so that every domain counts
//! and cuts alike: by characters (never inside one), and saying whether it cut.

/// `text` cut to its first `max` characters, and whether anything was cut.
pub fn to_chars(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((i, _)) => (text[..i].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

/// Fences a stranger's text cut to a bound, remembering whether any of an item's text was
/// cut (its `truncated`).
#[derive(Debug, Default)]
pub struct CutFence {
    pub cut: bool,
}

impl CutFence {
    /// `text` cut to `max` characters and fenced.
    pub fn fence(&mut self, text: &str, max: usize) -> String {
        let (kept, was_cut) = to_chars(text, max);
        self.cut |= was_cut;
        care_core::fence::fence(&kept)
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

    #[test]
    fn a_cut_fence_remembers_any_cut() {
        let mut text = CutFence::default();
        assert_eq!(text.fence("ab", 2), care_core::fence::fence("ab"));
        assert!(!text.cut);
        assert_eq!(text.fence("a<b", 2), care_core::fence::fence("a<"));
        assert_eq!(text.fence("c", 1), care_core::fence::fence("c"));
        assert!(text.cut);
    }
}

//! JSON string literals in text that may still be arriving: where one ends, and what it
//! says.
//!
//! Owns: the escape rule that tells a string's closing quote from an escaped one
//! ([`StringEnd`], fed a piece at a time, so a backslash at the end of one streamed
//! fragment still escapes the quote that starts the next), and decoding the string a
//! text begins with once it has arrived whole ([`leading_string`]).
//! Does not own: the structure around strings (objects, nesting), which its callers
//! track: the streamed tool-call arguments (`provider`) and the streamed `path` the
//! agent parses a file ahead for.
//! Invariant: only ASCII bytes are structural here, and UTF-8 continuation bytes never
//! look like ASCII, so scanning bytes is exact on any UTF-8 text.

/// Finds the closing quote of a JSON string, given the bytes of its body (what follows
/// the opening quote) in as many pieces as they arrive.
#[derive(Clone, Copy, Debug, Default)]
pub struct StringEnd {
    /// The last byte seen was a backslash that escapes the next one.
    escaped: bool,
}

impl StringEnd {
    /// Takes the next byte of the string's body; true when it is the closing quote.
    pub fn is_end(&mut self, byte: u8) -> bool {
        match (self.escaped, byte) {
            (true, _) => {
                self.escaped = false;
                false
            }
            (false, b'\\') => {
                self.escaped = true;
                false
            }
            (false, b'"') => true,
            _ => false,
        }
    }

    /// Takes the next piece of the string's body: the offset in `piece` of the closing
    /// quote, or `None` when the string goes on past `piece`.
    pub fn find(&mut self, piece: &[u8]) -> Option<usize> {
        piece.iter().position(|&byte| self.is_end(byte))
    }
}

/// The JSON string `text` begins with, decoded, and the text after it; `None` when
/// `text` does not begin with a string, the string has not ended yet, or it is not
/// valid JSON (an unknown escape, a lone surrogate, a raw control character).
pub fn leading_string(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let end = StringEnd::default().find(body.as_bytes())? + 2;
    let decoded = serde_json::from_str(&text[..end]).ok()?;
    Some((decoded, &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `pieces` to one scanner; the piece and offset of the closing quote.
    fn end_of(pieces: &[&str]) -> Option<(usize, usize)> {
        let mut end = StringEnd::default();
        pieces
            .iter()
            .enumerate()
            .find_map(|(index, piece)| Some((index, end.find(piece.as_bytes())?)))
    }

    #[test]
    fn a_string_ends_at_its_first_unescaped_quote() {
        assert_eq!(end_of(&["abc\" rest"]), Some((0, 3)));
        assert_eq!(end_of(&["\""]), Some((0, 0)));
        assert_eq!(end_of(&[r#"say \"hi\"" rest"#]), Some((0, 10)));
        // An escaped backslash escapes nothing after it.
        assert_eq!(end_of(&[r#"dir\\" rest"#]), Some((0, 5)));
        assert_eq!(end_of(&[r#"a\\\"b""#]), Some((0, 6)));
        assert_eq!(end_of(&["no end yet"]), None);
        assert_eq!(end_of(&[r"ends in an escape \"]), None);
    }

    #[test]
    fn an_escape_split_across_pieces_still_escapes() {
        assert_eq!(end_of(&["a\\", "\"b", "\"c"]), Some((2, 0)));
        assert_eq!(end_of(&["a\\", "\\", "\"c"]), Some((2, 0)));
        assert_eq!(end_of(&["a", "", "\\", "u0022", "\""]), Some((4, 0)));
    }

    #[test]
    fn multibyte_text_is_scanned_exactly() {
        let body = "é}ü🦀\"after";
        assert_eq!(end_of(&[body]), Some((0, body.find('"').unwrap())));
        // Cut inside a character: bytes, not chars, are fed.
        let bytes = body.as_bytes();
        let mut end = StringEnd::default();
        assert_eq!(end.find(&bytes[..1]), None);
        assert_eq!(end.find(&bytes[1..]), Some(body.find('"').unwrap() - 1));
    }

    #[test]
    fn decodes_the_leading_string_and_returns_the_rest() {
        assert_eq!(
            leading_string(r#""src/lib.rs", "x": 1}"#),
            Some(("src/lib.rs".into(), r#", "x": 1}"#))
        );
        assert_eq!(
            leading_string(r#""a \"b\" \\ \/ \n\t\u00e9""#),
            Some(("a \"b\" \\ / \n\té".into(), ""))
        );
        assert_eq!(leading_string(r#""""#), Some((String::new(), "")));
    }

    #[test]
    fn decodes_surrogate_pairs_and_refuses_lone_surrogates() {
        assert_eq!(
            leading_string(r#""crab \ud83e\udd80!" tail"#),
            Some(("crab 🦀!".into(), " tail"))
        );
        assert_eq!(leading_string(r#""\ud83e""#), None);
        assert_eq!(leading_string(r#""\udd80x""#), None);
    }

    #[test]
    fn nothing_until_a_whole_valid_string_leads() {
        assert_eq!(leading_string(""), None);
        assert_eq!(leading_string(r#" "leading space""#), None);
        assert_eq!(leading_string("7, \"a\""), None);
        assert_eq!(leading_string(r#""unfinished"#), None);
        assert_eq!(leading_string(r#""escaped end \""#), None);
        assert_eq!(leading_string(r#""bad \q escape""#), None);
        assert_eq!(leading_string("\"raw\nnewline\""), None);
    }
}

//! `@` mentions of workspace files in a message: `@src/main.rs`, `@src/main.rs:10-40`,
//! `@"notes/meeting 3.md"`.
//!
//! Owns: the token grammar, in one place for both sides: the composer writes tokens
//! ([`token`]) and completes the one being typed ([`typing`]); the agent finds them in a
//! sent message ([`mentions`]) and attaches the files.
//! Does not own: whether a token names a file (a decorator like `@property` is a token
//! too: the reader checks the path), reading files, or completion.
//! Invariant: pure and linear in the text; what [`token`] writes, [`mentions`] reads
//! back as the same path.
//!
//! The grammar:
//!
//! ```text
//! mention = "@" target [ ":" lines ]
//! target  = quoted | bare
//! quoted  = '"' 1*(any character but '"' and line breaks) '"'
//! bare    = 1*(any character but whitespace), less trailing punctuation
//! lines   = LINE | START "-" END        ; ASCII decimal, 1 <= START <= END
//! ```
//!
//! - The `@` starts the text or follows whitespace, so `a@b.com` holds no mention.
//! - A bare target ends at whitespace, and punctuation at its end is the sentence's,
//!   not the path's: `see @a.rs, then @b.rs.` names `a.rs` and `b.rs`. The trailing
//!   characters taken off are `. , ; : ! ? ) ] } > ' "` and the backtick.
//! - A bare target whose end reads as `:LINE` or `:START-END` carries that range; a
//!   suffix that is not a valid range (`:0`, `:9-3`, `:4-`) stays part of the path.
//! - A path with whitespace is quoted: `@"dir with space/file.txt":3`. A path can hold
//!   a `"` only in the bare form; one that needs both has no token.
//! - After a quoted target, a range counts when it runs up to whitespace or trailing
//!   punctuation; anything else there is left as text.
//! - `@` alone, `@,`, a range with no path (`@:10`) and `@"` without its closing
//!   quote on the same line are not mentions.

use std::ops::Range;

/// One mention found in a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mention {
    /// Workspace-relative, as written (unquoted).
    pub path: String,
    /// 1-based and inclusive; `:LINE` is `(LINE, LINE)`.
    pub lines: Option<(usize, usize)>,
    /// Bytes of the message the token covers, from its `@` to the end of its range
    /// (trailing punctuation excluded), for replacing it.
    pub span: Range<usize>,
}

/// The mention being typed at the end of `text` (the cursor's line up to the cursor),
/// for completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Typing<'a> {
    /// Byte offset of the `@` in `text`.
    pub start: usize,
    /// What follows the `@` (and the opening quote): what to complete.
    pub query: &'a str,
    /// The token opened with `@"`.
    pub quoted: bool,
}

/// What ends a bare path when it comes last: the sentence's punctuation.
const TRAILING: &[char] = &[
    '.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '\'', '"', '`',
];

/// Every mention in `text`, in order.
pub fn mentions(text: &str) -> Vec<Mention> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find('@') {
        let at = from + offset;
        let starts_word = text[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        match starts_word.then(|| read_at(text, at)).flatten() {
            Some(mention) => {
                from = mention.span.end;
                found.push(mention);
            }
            None => from = at + 1,
        }
    }
    found
}

/// The text that mentions `path` (`@src/a.rs`, or `@"my dir/a.rs"` when the bare form
/// would read differently), or `None` when no token names it: an empty path, one with
/// a control character, or one that needs quotes and holds a `"`.
pub fn token(path: &str) -> Option<String> {
    if path.is_empty() || path.chars().any(char::is_control) {
        return None;
    }
    let reads_back = |token: &str| {
        matches!(
            mentions(token).as_slice(),
            [only] if only.path == path && only.lines.is_none() && only.span == (0..token.len())
        )
    };
    let bare = format!("@{path}");
    if reads_back(&bare) {
        return Some(bare);
    }
    if path.contains('"') {
        return None;
    }
    let quoted = format!("@\"{path}\"");
    reads_back(&quoted).then_some(quoted)
}

/// The mention being typed at the end of `text`: an `@` that starts a word, followed
/// by no whitespace (or, after `@"`, by no second quote). `None` while a range is being
/// typed after a bare path (`@a.rs:1`): there is nothing left to complete.
pub fn typing(text: &str) -> Option<Typing<'_>> {
    let word_start = text
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(offset, c)| offset + c.len_utf8());
    if let Some(query) = text[word_start..].strip_prefix('@') {
        return match query.strip_prefix('"') {
            Some(quoted) if !quoted.contains('"') => Some(Typing {
                start: word_start,
                query: quoted,
                quoted: true,
            }),
            Some(_) => None,
            None if query.contains(':') => None,
            None => Some(Typing {
                start: word_start,
                query,
                quoted: false,
            }),
        };
    }
    // A quoted path with whitespace in it: only the last `@"` can still be open.
    let start = text.rfind("@\"")?;
    let query = &text[start + 2..];
    let starts_word = text[..start]
        .chars()
        .next_back()
        .is_none_or(char::is_whitespace);
    (starts_word && !query.contains(['"', '\n', '\r'])).then_some(Typing {
        start,
        query,
        quoted: true,
    })
}

/// The mention whose `@` is at byte `at`, if one is there.
fn read_at(text: &str, at: usize) -> Option<Mention> {
    let rest = &text[at + 1..];
    if let Some(inner) = rest.strip_prefix('"') {
        let close = inner.find(['"', '\n', '\r'])?;
        if close == 0 || !inner[close..].starts_with('"') {
            return None;
        }
        let path = &inner[..close];
        // `@` + quote + path + quote.
        let end = at + 1 + 1 + close + 1;
        let word = bare_word(&text[end..]);
        let lines = word.strip_prefix(':').and_then(parse_lines);
        let span_end = if lines.is_some() {
            end + word.len()
        } else {
            end
        };
        return Some(Mention {
            path: path.to_string(),
            lines,
            span: at..span_end,
        });
    }
    let word = bare_word(rest);
    if word.is_empty() || word.starts_with('"') {
        return None;
    }
    let (path, lines) = match word.rsplit_once(':') {
        Some((path, range)) => match parse_lines(range) {
            // `@:10` is a range of nothing.
            Some(_) if path.is_empty() => return None,
            Some(lines) => (path, Some(lines)),
            None => (word, None),
        },
        None => (word, None),
    };
    Some(Mention {
        path: path.to_string(),
        lines,
        span: at..at + 1 + word.len(),
    })
}

/// The start of `text` up to whitespace, less trailing punctuation.
fn bare_word(text: &str) -> &str {
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    text[..end].trim_end_matches(TRAILING)
}

/// `LINE` or `START-END`, 1-based, `START <= END`.
fn parse_lines(range: &str) -> Option<(usize, usize)> {
    // `usize::from_str` takes a leading `+`; a range is digits only.
    let number = |digits: &str| {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<usize>().ok().filter(|&n| n >= 1)
    };
    let (start, end) = match range.split_once('-') {
        Some((start, end)) => (number(start)?, number(end)?),
        None => {
            let line = number(range)?;
            (line, line)
        }
    };
    (start <= end).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;

    use super::*;

    /// `(path, lines)` of each mention.
    fn found(text: &str) -> Vec<(String, Option<(usize, usize)>)> {
        mentions(text)
            .into_iter()
            .map(|mention| (mention.path, mention.lines))
            .collect()
    }

    fn one(path: &str, lines: Option<(usize, usize)>) -> Vec<(String, Option<(usize, usize)>)> {
        vec![(path.to_string(), lines)]
    }

    /// The text each mention's span covers.
    fn spans(text: &str) -> Vec<&str> {
        mentions(text)
            .into_iter()
            .map(|mention| &text[mention.span])
            .collect()
    }

    #[test]
    fn a_bare_path_ends_at_whitespace() {
        assert_eq!(found("@src/main.rs"), one("src/main.rs", None));
        assert_eq!(
            found("look at @src/a.rs and @b.rs\nthen @c/d"),
            vec![
                ("src/a.rs".into(), None),
                ("b.rs".into(), None),
                ("c/d".into(), None)
            ]
        );
        assert_eq!(spans("x @a.rs y"), ["@a.rs"]);
        assert_eq!(mentions("x @a.rs y")[0].span, 2..7);
        assert_eq!(found("\t@.github/ci.yml"), one(".github/ci.yml", None));
        assert_eq!(found("@../up"), one("../up", None), "checked by the reader");
        assert_eq!(found("@ünï/cödé.rs ok"), one("ünï/cödé.rs", None));
    }

    #[test]
    fn the_at_sign_must_start_a_word() {
        for text in ["mail a@b.com", "a@b", "x=@a.rs", "(@a.rs)", "user@host:1-2"] {
            assert_eq!(found(text), vec![], "{text:?}");
        }
        assert_eq!(found("a@b @c"), one("c", None));
    }

    #[test]
    fn trailing_punctuation_belongs_to_the_sentence() {
        assert_eq!(found("@a.rs,"), one("a.rs", None));
        assert_eq!(found("see @a.rs."), one("a.rs", None));
        assert_eq!(found("(see @a.rs)."), one("a.rs", None));
        assert_eq!(found("is it @a.rs?!"), one("a.rs", None));
        assert_eq!(
            found("\"@a.rs\""),
            vec![],
            "a quote before the @ is no whitespace"
        );
        assert_eq!(found("say '@a.rs'"), vec![]);
        assert_eq!(found("x @a.rs' y"), one("a.rs", None));
        assert_eq!(found("`@a.rs`"), vec![]);
        assert_eq!(found("x @a.rs` y"), one("a.rs", None));
        assert_eq!(found("@a.rs: it fails"), one("a.rs", None));
        assert_eq!(spans("see @a.rs, @b.rs."), ["@a.rs", "@b.rs"]);
        assert_eq!(
            found("@f(1).txt"),
            one("f(1).txt", None),
            "only the end is trimmed"
        );
    }

    #[test]
    fn a_lone_at_sign_or_only_punctuation_is_no_mention() {
        for text in [
            "@", "@ x", "x @", "@,", "@...", "@:", "@\n", "@@", "@:10", "@:3-4",
        ] {
            let expected = if text == "@@" { one("@", None) } else { vec![] };
            assert_eq!(found(text), expected, "{text:?}");
        }
    }

    #[test]
    fn a_line_or_a_range_after_a_colon() {
        assert_eq!(found("@a.rs:10-40"), one("a.rs", Some((10, 40))));
        assert_eq!(found("@a.rs:7"), one("a.rs", Some((7, 7))));
        assert_eq!(found("@a.rs:7-7"), one("a.rs", Some((7, 7))));
        assert_eq!(found("@a.rs:10-40, then"), one("a.rs", Some((10, 40))));
        assert_eq!(found("@a.rs:10."), one("a.rs", Some((10, 10))));
        assert_eq!(found("@a.rs:10:"), one("a.rs", Some((10, 10))));
        assert_eq!(spans("(@x) @a.rs:10-40)."), ["@a.rs:10-40"]);
        assert_eq!(found("@c:d:3"), one("c:d", Some((3, 3))));
    }

    #[test]
    fn a_suffix_that_is_no_valid_range_stays_in_the_path() {
        for (text, path) in [
            ("@a.rs:0", "a.rs:0"),
            ("@a.rs:0-3", "a.rs:0-3"),
            ("@a.rs:9-3", "a.rs:9-3"),
            ("@a.rs:4-", "a.rs:4-"),
            ("@a.rs:-4", "a.rs:-4"),
            ("@a.rs:+4", "a.rs:+4"),
            ("@a.rs:1-+4", "a.rs:1-+4"),
            ("@a.rs:1.5", "a.rs:1.5"),
            ("@a.rs:x", "a.rs:x"),
            ("@a.rs:٣", "a.rs:٣"),
            (
                "@a.rs:99999999999999999999999",
                "a.rs:99999999999999999999999",
            ),
        ] {
            assert_eq!(found(text), one(path, None), "{text:?}");
        }
    }

    #[test]
    fn the_quoted_form_holds_whitespace() {
        assert_eq!(
            found("read @\"dir with space/file.txt\" now"),
            one("dir with space/file.txt", None)
        );
        assert_eq!(
            found("@\"my notes.md\":3-5, ok"),
            one("my notes.md", Some((3, 5)))
        );
        assert_eq!(spans("@\"my notes.md\":3-5, ok"), ["@\"my notes.md\":3-5"]);
        assert_eq!(spans("@\"a b\". x"), ["@\"a b\""]);
        assert_eq!(
            spans("@\"a b\":9-3 x"),
            ["@\"a b\""],
            "a bad range is left as text"
        );
        assert_eq!(found("@\"a b\":9-3 x"), one("a b", None));
        assert_eq!(found("@\"a b\"xyz"), one("a b", None));
        assert_eq!(
            found("@\"@x\" @y"),
            vec![("@x".into(), None), ("y".into(), None)]
        );
    }

    #[test]
    fn an_unclosed_or_empty_quote_is_no_mention() {
        for text in ["@\"a b", "@\"a b\nc\"", "@\"\"", "@\"", "@\"a\rb\""] {
            assert_eq!(found(text), vec![], "{text:?}");
        }
        assert_eq!(found("@\"open @b.rs"), one("b.rs", None));
    }

    #[test]
    fn tokens_read_back_as_their_path() {
        for (path, token_text) in [
            ("src/main.rs", "@src/main.rs"),
            ("dir with space/file.txt", "@\"dir with space/file.txt\""),
            ("ends.with.dot.", "@\"ends.with.dot.\""),
            ("f(1)", "@\"f(1)\""),
            ("log:10", "@\"log:10\""),
            ("\"quoted", "@\"quoted"),
            ("a\"b", "@a\"b"),
        ] {
            let written = token(path);
            if path == "\"quoted" {
                assert_eq!(
                    written, None,
                    "a leading quote needs quoting, and cannot be"
                );
                continue;
            }
            assert_eq!(written.as_deref(), Some(token_text), "{path:?}");
        }
        assert_eq!(token(""), None);
        assert_eq!(token("a\nb"), None);
        assert_eq!(token("a \"b"), None);
    }

    #[test]
    fn the_token_being_typed_is_the_last_word_after_an_at_sign() {
        let typing_at = |text| typing(text).map(|t| (t.start, t.query, t.quoted));
        assert_eq!(typing_at("@"), Some((0, "", false)));
        assert_eq!(typing_at("see @src/ma"), Some((4, "src/ma", false)));
        assert_eq!(typing_at("see @src/ma "), None);
        assert_eq!(typing_at("mail a@b"), None);
        assert_eq!(typing_at("@a.rs:1"), None, "a range is being typed");
        assert_eq!(typing_at("x @\"dir wi"), Some((2, "dir wi", true)));
        assert_eq!(typing_at("x @\"dir\""), None);
        assert_eq!(typing_at("x @\"a b\" c"), None);
        assert_eq!(typing_at("x y@\"a b"), None);
        assert_eq!(typing_at("ü\u{3000}@é"), Some((5, "é", false)));
        assert_eq!(typing_at(""), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever the path, the token written for it (if any) reads back as it, alone
        /// and inside a sentence.
        #[test]
        fn a_written_token_reads_back(path in "[a-z /.,:\"'()@0-9-]{1,12}") {
            if let Some(written) = token(&path) {
                let sentence = format!("see {written} now");
                let read = mentions(&sentence);
                prop_assert_eq!(read.len(), 1, "{}", sentence);
                prop_assert_eq!(&read[0].path, &path);
                prop_assert_eq!(read[0].lines, None);
                prop_assert_eq!(&sentence[read[0].span.clone()], written.as_str());
            } else {
                prop_assert!(path.contains('"'), "{:?} has no token", path);
            }
        }

        /// Any text: spans are in order, inside the text, and start with an `@`.
        #[test]
        fn spans_are_ordered_and_start_with_the_at_sign(text in "[a@\" :.,0-9\n-]{0,40}") {
            let mut last_end = 0;
            for mention in mentions(&text) {
                prop_assert!(mention.span.start >= last_end);
                prop_assert!(text[mention.span.clone()].starts_with('@'));
                prop_assert!(!mention.path.is_empty());
                last_end = mention.span.end;
            }
        }
    }
}

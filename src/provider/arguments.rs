//! Streamed tool-call arguments, and the moment they are complete.
//!
//! The chat completions wire has no "this call is done" event: a call ends when the
//! next one starts or the response finishes. But a JSON object is complete the moment
//! its closing brace arrives — nothing valid can follow it — so duet can start the call
//! then, while the model is still writing. [`ArgumentsBuffer`] notices that moment with
//! one pass over each fragment instead of re-parsing the whole text every time.

use crate::json_string::StringEnd;

/// Accumulates argument fragments and tracks JSON nesting outside of strings.
#[derive(Debug, Default)]
pub(crate) struct ArgumentsBuffer {
    text: String,
    depth: u32,
    /// Inside a string: where it ends, however the fragments cut its escapes.
    string: Option<StringEnd>,
    /// The top level is an object that has opened (and maybe closed).
    object_started: bool,
    /// The top level is something other than an object; it never completes early.
    not_an_object: bool,
    closed: bool,
}

impl ArgumentsBuffer {
    pub(crate) fn push(&mut self, fragment: &str) {
        self.text.push_str(fragment);
        // The structural characters are ASCII, and UTF-8 continuation bytes never
        // look like ASCII, so scanning bytes is exact.
        for &byte in fragment.as_bytes() {
            self.scan(byte);
        }
    }

    fn scan(&mut self, byte: u8) {
        if self.closed || self.not_an_object {
            return;
        }
        if let Some(string) = &mut self.string {
            if string.is_end(byte) {
                self.string = None;
            }
            return;
        }
        match byte {
            b'"' => self.string = Some(StringEnd::default()),
            b'{' | b'[' if self.depth == 0 && !self.object_started => {
                if byte == b'{' {
                    self.object_started = true;
                    self.depth = 1;
                } else {
                    self.not_an_object = true;
                }
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                self.closed = self.object_started && self.depth == 0;
            }
            byte if byte.is_ascii_whitespace() => {}
            _ if self.depth == 0 => self.not_an_object = true,
            _ => {}
        }
    }

    /// True when the text so far is exactly one complete JSON object (with optional
    /// surrounding whitespace).
    pub(crate) fn is_complete_object(&self) -> bool {
        self.closed
            && serde_json::from_str::<serde_json::Value>(&self.text).is_ok_and(|v| v.is_object())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub(crate) fn into_text(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete_after(fragments: &[&str]) -> Vec<bool> {
        let mut buffer = ArgumentsBuffer::default();
        fragments
            .iter()
            .map(|fragment| {
                buffer.push(fragment);
                buffer.is_complete_object()
            })
            .collect()
    }

    #[test]
    fn completes_exactly_when_the_object_closes() {
        assert_eq!(
            complete_after(&["{\"pa", "th\": \"a", ".txt\"", "}"]),
            [false, false, false, true]
        );
    }

    #[test]
    fn braces_inside_strings_and_escapes_do_not_count() {
        assert_eq!(
            complete_after(&[
                r#"{"code": "fn f() {}"#,
                r#" \"}\" "#,
                r#"", "n": {"a": [1]}"#,
                "}"
            ]),
            [false, false, false, true]
        );
    }

    #[test]
    fn non_objects_and_broken_json_never_complete_early() {
        assert_eq!(complete_after(&["[1, 2]"]), [false]);
        assert_eq!(complete_after(&["\"text\""]), [false]);
        assert_eq!(
            complete_after(&["{\"a\": }"]),
            [false],
            "closed but invalid"
        );
        assert_eq!(complete_after(&["x{}"]), [false]);
    }

    #[test]
    fn multibyte_text_is_scanned_exactly() {
        assert_eq!(
            complete_after(&["{\"s\": \"é}ü\\", "\"\"", "}"]),
            [false, false, true]
        );
    }
}

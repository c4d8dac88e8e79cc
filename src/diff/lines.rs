//! Splitting text into lines that keep their exact terminators.
//!
//! Owns: what a line is (text up to and including `\n`; `\r\n` is one terminator) and
//! how its terminator is named.
//! Does not own: comparing lines or grouping them into hunks.
//! Invariant: concatenating the pieces [`split_lines`] returns gives back the input
//! byte for byte, so anything rebuilt from them is exact.

use serde::{Deserialize, Serialize};

/// How a line ends. A `\r` that is not followed by `\n` is part of the line's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineEnding {
    Lf,
    CrLf,
    /// The last line of a file that does not end with a newline.
    Missing,
}

impl LineEnding {
    /// The terminator's bytes (empty for [`LineEnding::Missing`]).
    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "\n",
            LineEnding::CrLf => "\r\n",
            LineEnding::Missing => "",
        }
    }
}

/// The lines of `text`, each with its terminator; the last one may have none.
/// Empty text has no lines.
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A line from [`split_lines`] as its text and its terminator.
pub(crate) fn split_ending(line: &str) -> (&str, LineEnding) {
    if let Some(text) = line.strip_suffix("\r\n") {
        (text, LineEnding::CrLf)
    } else if let Some(text) = line.strip_suffix('\n') {
        (text, LineEnding::Lf)
    } else {
        (line, LineEnding::Missing)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn lines_keep_their_terminators_and_rejoin_exactly() {
        let text = "a\r\nb\n\nc\rd";
        let lines = split_lines(text);
        assert_eq!(lines, ["a\r\n", "b\n", "\n", "c\rd"]);
        assert_eq!(lines.concat(), text);
        let split: Vec<_> = lines.into_iter().map(split_ending).collect();
        assert_eq!(
            split,
            [
                ("a", LineEnding::CrLf),
                ("b", LineEnding::Lf),
                ("", LineEnding::Lf),
                ("c\rd", LineEnding::Missing),
            ]
        );
        assert!(split_lines("").is_empty());
    }
}

//! How a hunk's lines map onto the views: which old line sits beside which new one,
//! where the whole-file view marks each change, and when line endings must be shown.
//!
//! Owns: these pure functions of [`Hunk`]s.
//! Does not own: rows, styles or widths (`diff_view`).
//! Invariant: every line of a hunk lands somewhere: in exactly one pair, or (whole
//! file) as an added line or in one removal count.

use std::collections::{BTreeMap, VecDeque};

use crate::diff::{Hunk, HunkLine, LineEnding, LineKind};

/// The hunk's lines as (old, new) pairs for two columns: context on both sides, each
/// removed line beside the added line that replaces it, leftovers alone.
pub(super) fn pair_lines(lines: &[HunkLine]) -> Vec<(Option<&HunkLine>, Option<&HunkLine>)> {
    let mut pairs = Vec::with_capacity(lines.len());
    let mut removed = VecDeque::new();
    for line in lines {
        match line.kind {
            LineKind::Removed => removed.push_back(line),
            LineKind::Added => pairs.push((removed.pop_front(), Some(line))),
            LineKind::Context => {
                pairs.extend(removed.drain(..).map(|old| (Some(old), None)));
                pairs.push((Some(line), Some(line)));
            }
        }
    }
    pairs.extend(removed.drain(..).map(|old| (Some(old), None)));
    pairs
}

/// Whether the changed lines of `hunk` end in different ways (a CRLF → LF change would
/// otherwise show as identical `-`/`+` lines).
pub(super) fn has_mixed_endings(hunk: &Hunk) -> bool {
    let mut endings = hunk
        .lines
        .iter()
        .filter(|line| line.kind != LineKind::Context && line.ending != LineEnding::Missing)
        .map(|line| line.ending);
    endings
        .next()
        .is_some_and(|first| endings.any(|ending| ending != first))
}

/// Where the whole-file view marks each hunk's changes.
pub(super) struct ChangeMarks {
    /// 0-based new line index → the hunk that added it.
    pub(super) added: BTreeMap<usize, usize>,
    /// 0-based new line index → (hunk, lines removed just before it).
    pub(super) removed_before: BTreeMap<usize, (usize, usize)>,
}

impl ChangeMarks {
    pub(super) fn of(hunks: &[Hunk]) -> Self {
        let mut marks = ChangeMarks {
            added: BTreeMap::new(),
            removed_before: BTreeMap::new(),
        };
        for (index, hunk) in hunks.iter().enumerate() {
            // Where the next line of the new file would go.
            let mut next_new = hunk.new.index();
            for line in &hunk.lines {
                match (line.kind, line.new_line) {
                    (LineKind::Removed, _) => {
                        marks.removed_before.entry(next_new).or_insert((index, 0)).1 += 1;
                    }
                    (LineKind::Added, Some(new)) => {
                        marks.added.insert(new.saturating_sub(1), index);
                        next_new = new;
                    }
                    (_, Some(new)) => next_new = new,
                    (_, None) => {}
                }
            }
        }
        marks
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::diff::hunks;

    fn texts(pairs: &[(Option<&HunkLine>, Option<&HunkLine>)]) -> Vec<(String, String)> {
        let text = |line: Option<&HunkLine>| line.map_or("·".to_string(), |l| l.text.clone());
        pairs
            .iter()
            .map(|(old, new)| (text(*old), text(*new)))
            .collect()
    }

    #[test]
    fn replaced_lines_pair_up_and_leftovers_stand_alone() {
        let [hunk] = hunks(Some("a\nb\nc\nd\n"), "a\nB\nd\nx\ny\n")
            .try_into()
            .unwrap();
        let pairs = pair_lines(&hunk.lines);
        let expected = [
            ("a", "a"),
            ("b", "B"),
            ("c", "·"),
            ("d", "d"),
            ("·", "x"),
            ("·", "y"),
        ];
        assert_eq!(
            texts(&pairs),
            expected.map(|(old, new)| (old.to_string(), new.to_string()))
        );
    }

    #[test]
    fn whole_file_marks_name_added_lines_and_where_lines_went() {
        let before: String = ('a'..='p').map(|c| format!("{c}\n")).collect();
        let after = before.replace("b\n", "B\n").replace("o\n", "");
        let found = hunks(Some(&before), &after);
        assert_eq!(found.len(), 2);
        let marks = ChangeMarks::of(&found);
        assert_eq!(marks.added, BTreeMap::from([(1, 0)]));
        // Line 2 was replaced in place; line 15 went missing just before the new line 15.
        assert_eq!(
            marks.removed_before,
            BTreeMap::from([(1, (0, 1)), (14, (1, 1))])
        );
    }

    #[test]
    fn endings_matter_only_when_changed_lines_disagree() {
        let [crlf_to_lf] = hunks(Some("a\r\nb\r\n"), "a\r\nb\n").try_into().unwrap();
        assert!(has_mixed_endings(&crlf_to_lf));
        let [same] = hunks(Some("a\r\nb\r\n"), "a\r\nc\r\n").try_into().unwrap();
        assert!(!has_mixed_endings(&same));
    }
}

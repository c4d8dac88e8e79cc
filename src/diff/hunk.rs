//! Splitting a proposed change into hunks a person can accept one by one.
//!
//! Owns: the [`Hunk`] model (ranges, header, numbered body lines), how hunks are found
//! (line diff, [`CONTEXT_LINES`] of context, changes more than twice that apart split),
//! and hunk ids.
//! Does not own: applying a choice of hunks (`apply`) or wording it for the model.
//! Invariant: the hunks are a pure function of `(before, after)`, and a hunk's id is a
//! function of its own lines, never of its position (only an id already taken earlier
//! in the same diff, by an identical hunk or a hash clash, makes it take the next
//! salted one), so recomputing the diff names the same hunks the same way and an
//! unrelated change elsewhere leaves them alone.

use std::collections::HashSet;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use similar::{DiffOp, DiffTag};

use super::align::align;
use super::lines::{LineEnding, split_ending, split_lines};
use super::{CONTEXT_LINES, HunkId};

/// A run of lines as a unified diff header writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRange {
    /// 1-based number of the first line; for an empty range, the number of the line it
    /// follows (0 = the start of the file), as in `@@ -0,0 +1 @@`.
    pub start: usize,
    pub len: usize,
}

impl LineRange {
    /// The range of `len` lines starting at 0-based line `index`.
    pub(crate) fn at(index: usize, len: usize) -> Self {
        let start = if len == 0 { index } else { index + 1 };
        LineRange { start, len }
    }

    /// The 0-based index of the first line (or of the insertion point when empty).
    pub fn index(&self) -> usize {
        if self.len == 0 {
            self.start
        } else {
            self.start.saturating_sub(1)
        }
    }

    /// The 0-based indices the range covers.
    pub fn indices(&self) -> Range<usize> {
        self.index()..self.index() + self.len
    }
}

impl std::fmt::Display for LineRange {
    /// `start,len`, or just `start` for one line, as unified headers write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.len == 1 {
            write!(f, "{}", self.start)
        } else {
            write!(f, "{},{}", self.start, self.len)
        }
    }
}

/// What a line of a hunk does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// Unchanged, shown for orientation.
    Context,
    Removed,
    Added,
}

impl LineKind {
    /// The prefix a unified diff gives the line.
    pub fn marker(self) -> char {
        match self {
            LineKind::Context => ' ',
            LineKind::Removed => '-',
            LineKind::Added => '+',
        }
    }
}

/// One line of a hunk's body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkLine {
    pub kind: LineKind,
    /// The line without its terminator.
    pub text: String,
    pub ending: LineEnding,
    /// 1-based number in `before`; `None` for added lines.
    pub old_line: Option<usize>,
    /// 1-based number in `after`; `None` for removed lines.
    pub new_line: Option<usize>,
}

/// A group of nearby changes with up to [`CONTEXT_LINES`] unchanged lines around it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    pub id: HunkId,
    /// Where the hunk sits in `before`.
    pub old: LineRange,
    /// Where the hunk sits in `after`.
    pub new: LineRange,
    /// `@@ -old +new @@`.
    pub header: String,
    /// Context, removed and added lines in unified diff order.
    pub lines: Vec<HunkLine>,
}

impl Hunk {
    /// The hunk as unified diff text: the header, then one line per body line with its
    /// original terminator, and `\ No newline at end of file` after a last line that
    /// has none.
    pub fn to_unified(&self) -> String {
        let mut out = String::new();
        self.write_unified(&mut out);
        out
    }

    pub(crate) fn write_unified(&self, out: &mut String) {
        out.push_str(&self.header);
        out.push('\n');
        for line in &self.lines {
            out.push(line.kind.marker());
            out.push_str(&line.text);
            out.push_str(line.ending.as_str());
            if line.ending == LineEnding::Missing {
                out.push_str(NO_NEWLINE_MARK);
            }
        }
    }
}

/// Follows a line that has no terminator, on a line of its own.
pub(crate) const NO_NEWLINE_MARK: &str = "\n\\ No newline at end of file\n";

/// The hunks of `before` → `after` in file order. A new file (`before` is `None`) is
/// one hunk against nothing, even when `after` is empty, so creating it can be
/// accepted or rejected like any other hunk.
pub fn hunks(before: Option<&str>, after: &str) -> Vec<Hunk> {
    let old = split_lines(before.unwrap_or_default());
    let new = split_lines(after);
    hunks_of_lines(&old, &new, before.is_none())
}

/// [`hunks`] over lines already split, for callers that need the lines too.
pub(crate) fn hunks_of_lines(old: &[&str], new: &[&str], creates_file: bool) -> Vec<Hunk> {
    let ops = align(old, new);
    let mut bodies: Vec<Body> = similar::group_diff_ops(ops, CONTEXT_LINES)
        .iter()
        .filter_map(|group| Body::from_ops(group, old, new))
        .collect();
    if bodies.is_empty() && creates_file {
        bodies.push(Body::empty());
    }
    let mut ids = IdAllocator::default();
    bodies
        .into_iter()
        .map(|body| {
            let id = ids.next(&body.lines);
            body.into_hunk(id)
        })
        .collect()
}

/// A hunk before it has an id.
struct Body {
    old: LineRange,
    new: LineRange,
    lines: Vec<HunkLine>,
}

impl Body {
    fn empty() -> Self {
        Body {
            old: LineRange::at(0, 0),
            new: LineRange::at(0, 0),
            lines: Vec::new(),
        }
    }

    /// The hunk for one group of diff ops; `None` for a group without ops.
    fn from_ops(group: &[DiffOp], old: &[&str], new: &[&str]) -> Option<Self> {
        let first = group.first()?;
        let last = group.last()?;
        let old_span = first.old_range().start..last.old_range().end;
        let new_span = first.new_range().start..last.new_range().end;
        let mut lines = Vec::with_capacity(old_span.len() + new_span.len());
        for op in group {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => {
                    lines.extend(
                        old_range
                            .zip(new_range)
                            .map(|(o, n)| body_line(LineKind::Context, old[o], Some(o), Some(n))),
                    );
                }
                DiffTag::Delete | DiffTag::Insert | DiffTag::Replace => {
                    lines.extend(
                        old_range.map(|o| body_line(LineKind::Removed, old[o], Some(o), None)),
                    );
                    lines.extend(
                        new_range.map(|n| body_line(LineKind::Added, new[n], None, Some(n))),
                    );
                }
            }
        }
        Some(Body {
            old: LineRange::at(old_span.start, old_span.len()),
            new: LineRange::at(new_span.start, new_span.len()),
            lines,
        })
    }

    fn into_hunk(self, id: HunkId) -> Hunk {
        Hunk {
            id,
            header: format!("@@ -{} +{} @@", self.old, self.new),
            old: self.old,
            new: self.new,
            lines: self.lines,
        }
    }
}

/// A body line from a split line and its 0-based indices.
fn body_line(kind: LineKind, line: &str, old: Option<usize>, new: Option<usize>) -> HunkLine {
    let (text, ending) = split_ending(line);
    HunkLine {
        kind,
        text: text.to_string(),
        ending,
        old_line: old.map(|index| index + 1),
        new_line: new.map(|index| index + 1),
    }
}

/// Hands out hunk ids for one diff, in file order.
#[derive(Default)]
struct IdAllocator {
    taken: HashSet<String>,
}

impl IdAllocator {
    /// The id for a hunk with these lines: a hash of their kinds, texts and
    /// terminators (not their numbers, which shift when other hunks change). A hunk
    /// whose id is already taken — identical content, or a rare hash clash — gets the
    /// hash salted with 1, 2, … until it is free, so ids stay distinct and the same
    /// diff always yields the same ones.
    fn next(&mut self, lines: &[HunkLine]) -> HunkId {
        let base = content_hash(lines);
        let mut salt: u64 = 0;
        loop {
            let hash = if salt == 0 {
                base
            } else {
                Fnv::default()
                    .bytes(&base.to_le_bytes())
                    .bytes(&salt.to_le_bytes())
                    .finish()
            };
            let id = format_id(hash);
            if self.taken.insert(id.clone()) {
                return HunkId(id);
            }
            salt += 1;
        }
    }
}

fn content_hash(lines: &[HunkLine]) -> u64 {
    // 0xFF never occurs in UTF-8, so it cleanly separates one line from the next.
    lines
        .iter()
        .fold(Fnv::default(), |hash, line| {
            let ending = match line.ending {
                LineEnding::Lf => b'n',
                LineEnding::CrLf => b'r',
                LineEnding::Missing => b'x',
            };
            hash.bytes(&[line.kind.marker() as u8])
                .bytes(line.text.as_bytes())
                .bytes(&[ending, 0xFF])
        })
        .finish()
}

/// Folds the hash to 32 bits, 8 hex digits: short enough for a person to type, and
/// the allocator resolves the rare clash.
fn format_id(hash: u64) -> String {
    format!("{:08x}", (hash >> 32) ^ (hash & 0xFFFF_FFFF))
}

/// 64-bit FNV-1a: tiny, and unlike `std`'s hasher its output is fixed forever, so ids
/// survive a compiler upgrade.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn bytes(mut self, bytes: &[u8]) -> Self {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    fn finish(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn unified_hunks(before: Option<&str>, after: &str) -> String {
        hunks(before, after).iter().map(Hunk::to_unified).collect()
    }

    /// `"1\n2\n…\n{n}\n"` with the given lines replaced.
    fn numbered_lines(n: usize, replaced: &[(usize, &str)]) -> String {
        (1..=n)
            .map(|line| {
                let text = replaced
                    .iter()
                    .find(|(at, _)| *at == line)
                    .map_or(line.to_string(), |(_, text)| text.to_string());
                format!("{text}\n")
            })
            .collect()
    }

    fn headers(before: &str, after: &str) -> Vec<String> {
        hunks(Some(before), after)
            .into_iter()
            .map(|hunk| hunk.header)
            .collect()
    }

    #[test]
    fn each_kind_of_change_renders_as_unified_hunks() {
        let table: &[(&str, Option<&str>, &str, &str)] = &[
            (
                "single change",
                Some("a\nb\nc\n"),
                "a\nB\nc\n",
                "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
            ),
            (
                "insert at start",
                Some("a\nb\n"),
                "new\na\nb\n",
                "@@ -1,2 +1,3 @@\n+new\n a\n b\n",
            ),
            (
                "insert at end",
                Some("a\nb\n"),
                "a\nb\nc\n",
                "@@ -1,2 +1,3 @@\n a\n b\n+c\n",
            ),
            (
                "delete all",
                Some("a\nb\n"),
                "",
                "@@ -1,2 +0,0 @@\n-a\n-b\n",
            ),
            ("new file", None, "x\ny\n", "@@ -0,0 +1,2 @@\n+x\n+y\n"),
            ("new empty file", None, "", "@@ -0,0 +0,0 @@\n"),
            (
                "no final newline before",
                Some("a\nb"),
                "a\nb\n",
                "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
            ),
            (
                "no final newline after",
                Some("a\nb\n"),
                "a\nb",
                "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n",
            ),
            (
                "no final newline on either side",
                Some("a\nb"),
                "a\nc",
                "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
            ),
            (
                "crlf",
                Some("a\r\nb\r\nc\r\n"),
                "a\r\nB\r\nc\r\n",
                "@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n",
            ),
            (
                "line ending change only",
                Some("a\r\nb\r\n"),
                "a\r\nb\n",
                "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+b\n",
            ),
            ("no change", Some("a\nb\n"), "a\nb\n", ""),
            ("empty to empty", Some(""), "", ""),
        ];
        for (name, before, after, expected) in table {
            assert_eq!(unified_hunks(*before, after), *expected, "{name}");
        }
    }

    #[test]
    fn changes_up_to_six_lines_apart_share_a_hunk() {
        let before = numbered_lines(20, &[]);
        // Six unchanged lines (6–11) between the changes: their contexts meet.
        let six_apart = numbered_lines(20, &[(5, "five"), (12, "twelve")]);
        assert_eq!(headers(&before, &six_apart), ["@@ -2,14 +2,14 @@"]);
        // Seven (6–12): two hunks, with line 9 shown by neither.
        let seven_apart = numbered_lines(20, &[(5, "five"), (13, "thirteen")]);
        assert_eq!(
            headers(&before, &seven_apart),
            ["@@ -2,7 +2,7 @@", "@@ -10,7 +10,7 @@"]
        );
    }

    #[test]
    fn body_lines_carry_text_endings_and_both_line_numbers() {
        let [hunk] = hunks(Some("keep\r\nold\r\nlast"), "keep\r\nnew\r\nadded\r\nlast")
            .try_into()
            .unwrap();
        let line = |kind, text: &str, ending, old_line, new_line| HunkLine {
            kind,
            text: text.into(),
            ending,
            old_line,
            new_line,
        };
        assert_eq!(
            hunk,
            Hunk {
                id: hunk.id.clone(),
                old: LineRange { start: 1, len: 3 },
                new: LineRange { start: 1, len: 4 },
                header: "@@ -1,3 +1,4 @@".into(),
                lines: vec![
                    line(
                        LineKind::Context,
                        "keep",
                        LineEnding::CrLf,
                        Some(1),
                        Some(1)
                    ),
                    line(LineKind::Removed, "old", LineEnding::CrLf, Some(2), None),
                    line(LineKind::Added, "new", LineEnding::CrLf, None, Some(2)),
                    line(LineKind::Added, "added", LineEnding::CrLf, None, Some(3)),
                    line(
                        LineKind::Context,
                        "last",
                        LineEnding::Missing,
                        Some(3),
                        Some(4)
                    ),
                ],
            }
        );
    }

    #[test]
    fn empty_ranges_name_the_line_they_follow() {
        let cases = [
            (LineRange::at(0, 0), "0,0", 0),
            (LineRange::at(4, 0), "4,0", 4),
        ];
        for (range, shown, index) in cases {
            assert_eq!(
                (range.to_string(), range.index()),
                (shown.to_string(), index)
            );
            assert!(range.indices().is_empty());
        }
        let one = LineRange::at(4, 1);
        assert_eq!((one.to_string(), one.indices()), ("5".to_string(), 4..5));
    }

    #[test]
    fn ids_are_short_hex_and_stable_across_recomputation() {
        let before = numbered_lines(40, &[]);
        let after = numbered_lines(40, &[(3, "three"), (20, "twenty"), (35, "x")]);
        let first = hunks(Some(&before), &after);
        assert_eq!(first.len(), 3);
        for hunk in &first {
            assert_eq!(hunk.id.0.len(), 8, "{}", hunk.id);
            assert!(
                hunk.id
                    .0
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            );
        }
        assert_eq!(hunks(Some(&before), &after), first);
    }

    #[test]
    fn an_unrelated_change_leaves_other_hunk_ids_alone() {
        let before = numbered_lines(60, &[]);
        let ids = |after: &str| -> Vec<HunkId> {
            hunks(Some(&before), after)
                .into_iter()
                .map(|h| h.id)
                .collect()
        };
        let original = ids(&numbered_lines(60, &[(20, "twenty"), (40, "forty")]));
        // A change before both shifts their line numbers; one between them too.
        let with_extra = ids(&numbered_lines(
            60,
            &[(2, "two"), (20, "twenty"), (30, "x"), (40, "forty")],
        ));
        assert_eq!(with_extra.len(), 4);
        assert_eq!(
            [&with_extra[1], &with_extra[3]],
            [&original[0], &original[1]]
        );
    }

    #[test]
    fn identical_hunks_get_distinct_ids_in_file_order() {
        let block = "a\nb\nc\nX\nd\ne\nf\n";
        let before = format!("{block}separator\n{block}");
        let after = before.replace('X', "Y");
        let found = hunks(Some(&before), &after);
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[0].lines,
            found[1]
                .lines
                .iter()
                .map(|line| HunkLine {
                    old_line: line.old_line.map(|n| n - 8),
                    new_line: line.new_line.map(|n| n - 8),
                    ..line.clone()
                })
                .collect::<Vec<_>>()
        );
        assert_ne!(found[0].id, found[1].id);
        // The first keeps the plain content id, so it matches a lone copy of the hunk.
        let lone = hunks(Some(block), &block.replace('X', "Y"));
        assert_eq!(lone[0].id, found[0].id);
    }

    #[test]
    fn clashing_ids_are_salted_until_free() {
        let lines = [HunkLine {
            kind: LineKind::Added,
            text: "x".into(),
            ending: LineEnding::Lf,
            old_line: None,
            new_line: Some(1),
        }];
        let mut ids = IdAllocator::default();
        let issued: Vec<HunkId> = (0..5).map(|_| ids.next(&lines)).collect();
        let distinct: HashSet<&HunkId> = issued.iter().collect();
        assert_eq!(distinct.len(), 5);
        // Deterministic: a fresh allocator hands out the same sequence.
        let mut again = IdAllocator::default();
        assert_eq!(
            (0..5).map(|_| again.next(&lines)).collect::<Vec<_>>(),
            issued
        );
    }
}

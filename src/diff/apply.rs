//! Applying the hunks a person accepted to the file they were proposed for.
//!
//! Owns: turning `(before, after, accepted ids)` into the text to write, and the record
//! of which hunk landed where ([`Applied`]).
//! Does not own: asking anyone, writing the file, or finding hunks (`hunk`).
//! Invariant: the result is `before` with exactly the accepted hunks replaced by their
//! `after` lines, every other byte untouched; accepting all hunks gives `after` and
//! accepting none gives `before`, byte for byte.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::HunkId;
use super::hunk::{Hunk, LineRange, hunks_of_lines};
use super::lines::split_lines;

/// What became of one hunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkOutcome {
    pub hunk: Hunk,
    pub applied: bool,
    /// Where the hunk's lines (its `after` side if applied, its `before` side if not)
    /// sit in the resulting text.
    pub now: LineRange,
}

/// The result of accepting some hunks of a change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The file's new content; `None` when the file was new and its hunk was rejected,
    /// so the file must not be created.
    pub text: Option<String>,
    /// Every hunk of the change, in file order.
    pub hunks: Vec<HunkOutcome>,
}

impl Applied {
    /// Ids of the applied hunks, in file order.
    pub fn applied_ids(&self) -> Vec<HunkId> {
        self.ids_where(true)
    }

    /// Ids of the rejected hunks, in file order.
    pub fn rejected_ids(&self) -> Vec<HunkId> {
        self.ids_where(false)
    }

    fn ids_where(&self, applied: bool) -> Vec<HunkId> {
        self.hunks
            .iter()
            .filter(|outcome| outcome.applied == applied)
            .map(|outcome| outcome.hunk.id.clone())
            .collect()
    }
}

/// Why a choice of hunks cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HunkError {
    #[error(
        "{} not part of this change ({}); accept hunks by the ids shown with its diff",
        name_unknown(.unknown),
        name_known(.known)
    )]
    UnknownHunks {
        unknown: Vec<HunkId>,
        /// The change's hunk ids, in file order.
        known: Vec<HunkId>,
    },
}

fn name_unknown(unknown: &[HunkId]) -> String {
    match unknown {
        [one] => format!("hunk `{one}` is"),
        many => format!("hunks {} are", backticked(many)),
    }
}

fn name_known(known: &[HunkId]) -> String {
    match known {
        [] => "it has no hunks".to_string(),
        [one] => format!("its only hunk is `{one}`"),
        many => format!("its hunks are {}", backticked(many)),
    }
}

fn backticked(ids: &[HunkId]) -> String {
    ids.iter()
        .map(|id| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `before` with exactly the `accepted` hunks of `before` → `after` applied. The hunks
/// are recomputed, so ids from an earlier [`super::hunks`] call of the same change
/// match. Naming an id twice is the same as naming it once; naming one the change
/// does not have is an error, never silently ignored.
pub fn apply(before: Option<&str>, after: &str, accepted: &[HunkId]) -> Result<Applied, HunkError> {
    let old = split_lines(before.unwrap_or_default());
    let new = split_lines(after);
    let hunks = hunks_of_lines(&old, &new, before.is_none());
    let accepted = known_ids(&hunks, accepted)?;

    let mut text = String::with_capacity(after.len().max(before.map_or(0, str::len)));
    let mut outcomes = Vec::with_capacity(hunks.len());
    // Old lines already copied or replaced, and lines written so far.
    let mut consumed = 0;
    let mut written = 0;
    for hunk in hunks {
        let region = hunk.old.indices();
        let unchanged = &old[consumed..region.start];
        let applied = accepted.contains(&hunk.id);
        let lines = if applied {
            &new[hunk.new.indices()]
        } else {
            &old[region.clone()]
        };
        text.extend(unchanged.iter().chain(lines).copied());
        written += unchanged.len();
        outcomes.push(HunkOutcome {
            now: LineRange::at(written, lines.len()),
            applied,
            hunk,
        });
        written += lines.len();
        consumed = region.end;
    }
    text.extend(old[consumed..].iter().copied());

    let exists = before.is_some() || outcomes.iter().any(|outcome| outcome.applied);
    Ok(Applied {
        text: exists.then_some(text),
        hunks: outcomes,
    })
}

/// `accepted` as a set, or the error naming every id that is not one of `hunks`.
fn known_ids<'a>(hunks: &[Hunk], accepted: &'a [HunkId]) -> Result<HashSet<&'a HunkId>, HunkError> {
    let known: HashSet<&HunkId> = hunks.iter().map(|hunk| &hunk.id).collect();
    let mut named = HashSet::new();
    let unknown: Vec<HunkId> = accepted
        .iter()
        .filter(|id| !known.contains(id) && named.insert(*id))
        .cloned()
        .collect();
    if unknown.is_empty() {
        return Ok(accepted.iter().collect());
    }
    Err(HunkError::UnknownHunks {
        unknown,
        known: hunks.iter().map(|hunk| hunk.id.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::diff::hunk::{LineKind, hunks};
    use crate::diff::lines::LineEnding;
    use crate::diff::test_support::Rng;

    /// A hunk as `before` sees it: where it sits there and its lines with their
    /// `before` numbers. Applied on its own, a hunk keeps all of this; only its `after`
    /// numbers shift with whatever else was applied.
    type SeenFromBefore = (
        LineRange,
        Vec<(LineKind, String, LineEnding, Option<usize>)>,
    );

    fn seen_from_before(hunk: &Hunk) -> SeenFromBefore {
        let lines = hunk
            .lines
            .iter()
            .map(|line| (line.kind, line.text.clone(), line.ending, line.old_line))
            .collect();
        (hunk.old, lines)
    }

    fn ids<'a>(hunks: impl IntoIterator<Item = &'a Hunk>) -> Vec<HunkId> {
        hunks.into_iter().map(|hunk| hunk.id.clone()).collect()
    }

    /// Applies `chosen` and checks everything `apply` promises: the ids are split as
    /// chosen, all gives `after` and none gives `before` exactly, diffing the result
    /// against `before` finds exactly the chosen hunks, and each outcome's `now` range
    /// holds that hunk's lines.
    fn assert_applies_exactly(before: Option<&str>, after: &str, chosen: &[HunkId]) {
        let all = hunks(before, after);
        let (accepted, rejected): (Vec<&Hunk>, Vec<&Hunk>) =
            all.iter().partition(|hunk| chosen.contains(&hunk.id));
        let applied = apply(before, after, chosen).unwrap();
        let case = format!("{before:?} -> {after:?}, accepting {chosen:?}");
        assert_eq!(
            applied.applied_ids(),
            ids(accepted.iter().copied()),
            "{case}"
        );
        assert_eq!(applied.rejected_ids(), ids(rejected), "{case}");
        let Some(text) = &applied.text else {
            assert!(before.is_none() && accepted.is_empty(), "{case}");
            return;
        };
        if accepted.len() == all.len() {
            assert_eq!(text, after, "{case}");
        }
        if accepted.is_empty() {
            assert_eq!(Some(text.as_str()), before, "{case}");
        }
        let redone: Vec<SeenFromBefore> =
            hunks(before, text).iter().map(seen_from_before).collect();
        let wanted: Vec<SeenFromBefore> = accepted.into_iter().map(seen_from_before).collect();
        assert_eq!(redone, wanted, "{case}");

        let lines: Vec<&str> = split_lines(text);
        for outcome in &applied.hunks {
            let dropped = if outcome.applied {
                LineKind::Removed
            } else {
                LineKind::Added
            };
            let expected: Vec<String> = outcome
                .hunk
                .lines
                .iter()
                .filter(|line| line.kind != dropped)
                .map(|line| format!("{}{}", line.text, line.ending.as_str()))
                .collect();
            assert_eq!(lines[outcome.now.indices()], expected, "{case}");
        }
    }

    /// Every subset of the change's hunks, or `samples` random ones when there are many.
    fn subsets(all: &[Hunk], rng: &mut Rng, samples: usize) -> Vec<Vec<HunkId>> {
        let pick = |mask: u64| {
            all.iter()
                .enumerate()
                .filter(|(i, _)| mask >> i & 1 == 1)
                .map(|(_, hunk)| hunk.id.clone())
                .collect()
        };
        if all.len() <= 6 {
            (0..1u64 << all.len()).map(pick).collect()
        } else {
            let mut chosen: Vec<Vec<HunkId>> = (0..samples)
                .map(|_| pick(rng.below(usize::MAX) as u64))
                .collect();
            chosen.push(ids(all));
            chosen.push(Vec::new());
            chosen
        }
    }

    fn four_hunk_change() -> (String, String) {
        let before: String = (1..=40).map(|n| format!("{n}\n")).collect();
        let before = before.trim_end().to_string();
        let after = before
            .replace("\n3\n", "\nthree\n")
            .replace("\n11\n", "\n11\n11½\n")
            .replace("\n22\n", "\n")
            .replace("\n38\n", "\nx\ny\n")
            + "\n";
        (before, after)
    }

    #[test]
    fn every_subset_of_a_four_hunk_change_applies_exactly() {
        let (before, after) = four_hunk_change();
        let all = hunks(Some(&before), &after);
        let headers: Vec<&str> = all.iter().map(|hunk| hunk.header.as_str()).collect();
        assert_eq!(
            headers,
            [
                "@@ -1,6 +1,6 @@",
                "@@ -9,6 +9,7 @@",
                "@@ -19,7 +20,6 @@",
                "@@ -35,6 +35,7 @@"
            ]
        );
        let every = subsets(&all, &mut Rng::new(1), 0);
        assert_eq!(every.len(), 16);
        for chosen in every {
            assert_applies_exactly(Some(&before), &after, &chosen);
        }
    }

    #[test]
    fn all_gives_after_and_none_gives_before_or_no_file() {
        let cases: [(Option<&str>, &str); 5] = [
            (Some("a\nb\n"), "a\nc"),
            (Some("x\r\ny\r\n"), "y\r\n"),
            (Some(""), "new\n"),
            (None, "created\n"),
            (None, ""),
        ];
        for (before, after) in cases {
            let all = ids(&hunks(before, after));
            assert_eq!(
                apply(before, after, &all).unwrap().text.as_deref(),
                Some(after)
            );
            let none = apply(before, after, &[]).unwrap();
            assert_eq!(none.text.as_deref(), before, "{before:?}");
        }
    }

    #[test]
    fn naming_a_hunk_twice_applies_it_once() {
        let (before, after) = four_hunk_change();
        let first = hunks(Some(&before), &after)[0].id.clone();
        let twice = apply(Some(&before), &after, &[first.clone(), first.clone()]).unwrap();
        assert_eq!(twice, apply(Some(&before), &after, &[first]).unwrap());
    }

    #[test]
    fn unknown_ids_are_an_error_that_names_them() {
        let known = hunks(Some("a\n"), "b\n")[0].id.clone();
        let error = apply(
            Some("a\n"),
            "b\n",
            &[
                known.clone(),
                HunkId("deadbeef".into()),
                HunkId("deadbeef".into()),
            ],
        )
        .unwrap_err();
        assert_eq!(
            error,
            HunkError::UnknownHunks {
                unknown: vec![HunkId("deadbeef".into())],
                known: vec![known.clone()],
            }
        );
        assert_eq!(
            error.to_string(),
            format!(
                "hunk `deadbeef` is not part of this change (its only hunk is `{known}`); \
                 accept hunks by the ids shown with its diff"
            )
        );
        let none = apply(
            Some("a\n"),
            "a\n",
            &[HunkId("1".into()), HunkId("2".into())],
        );
        assert_eq!(
            none.unwrap_err().to_string(),
            "hunks `1`, `2` are not part of this change (it has no hunks); accept hunks by \
             the ids shown with its diff"
        );
    }

    #[test]
    fn a_large_file_with_scattered_changes_applies_every_other_hunk() {
        let before: String = (0..10_000).map(|n| format!("line {n}\n")).collect();
        let after: String = (0..10_000)
            .map(|n| match n % 50 {
                10 => format!("changed {n}\n"),
                30 if n % 100 == 30 => format!("line {n}\nadded {n}\n"),
                _ => format!("line {n}\n"),
            })
            .collect();
        let all = hunks(Some(&before), &after);
        assert_eq!(all.len(), 300);
        let every_other: Vec<HunkId> = all.iter().step_by(2).map(|h| h.id.clone()).collect();
        assert_applies_exactly(Some(&before), &after, &every_other);
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// Short lines that repeat (many equally good alignments), multi-byte text,
        /// blank lines and very long lines.
        fn line() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => "l[0-4]",
                2 => "[aé€😀 ]{0,6}",
                1 => Just(String::new()),
                1 => "[xy]{200,600}",
            ]
        }

        /// An edit at a relative position: remove, replace or insert a line.
        #[derive(Clone, Debug)]
        enum LineEdit {
            Remove(usize),
            Replace(usize, String),
            Insert(usize, String),
        }

        fn line_edit() -> impl Strategy<Value = LineEdit> {
            prop_oneof![
                any::<usize>().prop_map(LineEdit::Remove),
                (any::<usize>(), line()).prop_map(|(at, l)| LineEdit::Replace(at, l)),
                (any::<usize>(), line()).prop_map(|(at, l)| LineEdit::Insert(at, l)),
            ]
        }

        fn edited(lines: &[String], edits: Vec<LineEdit>) -> Vec<String> {
            let mut out = lines.to_vec();
            for edit in edits {
                match edit {
                    LineEdit::Remove(at) if !out.is_empty() => {
                        out.remove(at % out.len());
                    }
                    LineEdit::Replace(at, l) if !out.is_empty() => {
                        let at = at % out.len();
                        out[at] = l;
                    }
                    LineEdit::Remove(_) | LineEdit::Replace(..) => {}
                    LineEdit::Insert(at, l) => out.insert(at % (out.len() + 1), l),
                }
            }
            out
        }

        fn joined(lines: &[String], crlf: bool, final_newline: bool) -> String {
            let ending = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(ending);
            if final_newline && !lines.is_empty() {
                text.push_str(ending);
            }
            text
        }

        /// (before, after): `None` before is a new file; either side may use CRLF,
        /// lack a final newline or be empty.
        fn change() -> impl Strategy<Value = (Option<String>, String)> {
            (
                proptest::collection::vec(line(), 0..30),
                proptest::collection::vec(line_edit(), 0..8),
                any::<[bool; 5]>(),
            )
                .prop_map(
                    |(lines, edits, [crlf_before, crlf_after, nl_before, nl_after, new_file])| {
                        let after = joined(&edited(&lines, edits), crlf_after, nl_after);
                        let before = (!new_file).then(|| joined(&lines, crlf_before, nl_before));
                        (before, after)
                    },
                )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]

            #[test]
            fn any_subset_of_hunks_applies_exactly((before, after) in change(), mask in any::<u64>()) {
                let all = hunks(before.as_deref(), &after);
                let chosen: Vec<HunkId> = all
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask.rotate_right(*i as u32) & 1 == 1)
                    .map(|(_, hunk)| hunk.id.clone())
                    .collect();
                assert_applies_exactly(before.as_deref(), &after, &chosen);
                assert_applies_exactly(before.as_deref(), &after, &ids(&all));
                assert_applies_exactly(before.as_deref(), &after, &[]);
            }
        }
    }
}

//! The line alignment behind every hunk: which lines of `before` are kept, which
//! removed and which added.
//!
//! Owns: the choice among the many equally short alignments. It is always a shortest
//! edit script (fewest removed plus added lines), and always the same one: walking from
//! the top, a pair of equal lines is kept; otherwise a line of `before` is removed if a
//! shortest script is still possible after that, else a line of `after` is added.
//! Does not own: grouping changes into hunks, or anything about files.
//! Invariant: the alignment restricts cleanly. If `partial` is `before` with only some
//! change blocks of `before` → `after` applied, the alignment of `before` → `partial`
//! consists of exactly those blocks, line for line, so the hunks a person accepted are
//! the hunks a fresh diff of the result shows. A general diff (heuristic Myers,
//! patience) does not promise this: once other blocks are gone it may slide or re-pair
//! repeated lines differently.
//!
//! Why the invariant holds: a shortest script of `before` → `after` with some blocks
//! undone is a shortest script of `before` → `partial` (a shorter one plus the undone
//! blocks would beat the shortest `before` → `after`). The same argument, run from any
//! point of the walk, shows that "removing here still allows a shortest script" has the
//! same answer for both targets, so both walks take the same steps. The exact search
//! needs memory quadratic in the number of edits, so past [`MAX_EDITS`] (a near
//! rewrite) `similar`'s Myers diff is used instead: `apply` stays exact, but a fresh
//! diff of a partial result may group its lines differently.

use std::collections::HashMap;

use similar::{Algorithm, DiffOp};

/// Most removed plus added lines searched exactly; the search table then holds about
/// `MAX_EDITS² / 2` numbers (8 MiB).
const MAX_EDITS: usize = 2048;

/// The ops turning `old` into `new`: maximal equal runs, and between them one op per
/// block of changes (removed lines first, then added ones).
pub(crate) fn align(old: &[&str], new: &[&str]) -> Vec<DiffOp> {
    let (old_ids, new_ids) = intern(old, new);
    match SuffixCosts::search(&old_ids, &new_ids, MAX_EDITS) {
        Some(costs) => costs.walk(&old_ids, &new_ids),
        None => similar::capture_diff_slices(Algorithm::Myers, old, new),
    }
}

/// Lines as small numbers, equal exactly when the lines (terminators included) are.
fn intern(old: &[&str], new: &[&str]) -> (Vec<u32>, Vec<u32>) {
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut id_of = |line| {
        let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        *ids.entry(line).or_insert(next)
    };
    let old_ids = old.iter().map(|line| id_of(*line)).collect();
    let new_ids = new.iter().map(|line| id_of(*line)).collect();
    (old_ids, new_ids)
}

/// Marks a diagonal no path of that cost reaches.
const UNREACHED: u32 = u32::MAX;

/// How many edits the rest of the files need from any point, found by Myers' search run
/// from the end: `rows[d]` holds, for each diagonal, how far back toward the start a
/// path of `d` edits reaches. Because the cost never grows toward the start along a
/// diagonal, "the rest from here costs at most `d`" is "row `d` reaches here".
struct SuffixCosts {
    old_len: usize,
    new_len: usize,
    /// Rows `0..=distance` back to back; row `d` has `d + 1` entries, for diagonals
    /// `-d, -d + 2, …, d` in reversed coordinates (`x` lines from the end of `old`, `y`
    /// from the end of `new`, diagonal `x - y`), each the furthest `x` or [`UNREACHED`].
    rows: Vec<u32>,
    /// The fewest edits that turn `old` into `new`.
    distance: usize,
}

impl SuffixCosts {
    /// `None` when more than `max_edits` edits are needed, or the files are too long to
    /// number with `u32`.
    fn search(old: &[u32], new: &[u32], max_edits: usize) -> Option<Self> {
        let too_long = |len: usize| u32::try_from(len).map_or(true, |len| len == UNREACHED);
        if too_long(old.len()) || too_long(new.len()) {
            return None;
        }
        let mut costs = SuffixCosts {
            old_len: old.len(),
            new_len: new.len(),
            rows: Vec::new(),
            distance: 0,
        };
        // Walking backward from the end: step x consumes old[len - 1 - x].
        let same = |x: usize, y: usize| old[old.len() - 1 - x] == new[new.len() - 1 - y];
        for d in 0..=max_edits {
            for slot in 0..=d {
                let k = 2 * slot as isize - d as isize;
                let Some(mut x) = costs.entry_start(d, k) else {
                    costs.rows.push(UNREACHED);
                    continue;
                };
                let mut y = (x as isize - k) as usize;
                while x < old.len() && y < new.len() && same(x, y) {
                    x += 1;
                    y += 1;
                }
                costs.rows.push(x as u32);
                if x == old.len() && y == new.len() {
                    // The walk reads only rows below `d`; the rest of this one is not needed.
                    costs.distance = d;
                    return Some(costs);
                }
            }
        }
        None
    }

    /// Where a path of `d` edits enters diagonal `k`, before following equal lines:
    /// one edit from the furthest point of row `d - 1` on a neighbouring diagonal,
    /// kept inside the grid (at an edge, the point one step back on that neighbour is
    /// reachable too, so stopping at the edge is).
    fn entry_start(&self, d: usize, k: isize) -> Option<usize> {
        let (old_len, new_len) = (self.old_len as isize, self.new_len as isize);
        if k > old_len || k < -new_len {
            return None;
        }
        if d == 0 {
            return Some(0);
        }
        let prev = d - 1;
        // From diagonal k + 1 by adding a line (y grows), or from k - 1 by removing one.
        let by_adding = self.reach(prev, k + 1);
        let by_removing = self.reach(prev, k - 1).map(|x| x + 1);
        let x = by_adding.max(by_removing)? as isize;
        Some(x.min(old_len).min(new_len + k) as usize)
    }

    /// The furthest `x` row `d` reaches on diagonal `k`, if any.
    fn reach(&self, d: usize, k: isize) -> Option<usize> {
        if k.unsigned_abs() > d || (k + d as isize) % 2 != 0 {
            return None;
        }
        let index = d * (d + 1) / 2 + (k + d as isize) as usize / 2;
        match self.rows.get(index) {
            Some(&x) if x != UNREACHED => Some(x as usize),
            _ => None,
        }
    }

    /// Whether turning `old[i..]` into `new[j..]` takes at most `d` edits.
    fn within(&self, d: usize, i: usize, j: usize) -> bool {
        let x = self.old_len - i;
        let y = self.new_len - j;
        self.reach(d, x as isize - y as isize)
            .is_some_and(|furthest| furthest >= x)
    }

    /// The alignment described in the module doc, as ops.
    fn walk(&self, old: &[u32], new: &[u32]) -> Vec<DiffOp> {
        let mut ops = Vec::new();
        let (mut i, mut j) = (0, 0);
        // Edits still needed from (i, j) on.
        let mut left = self.distance;
        let mut block_start: Option<(usize, usize)> = None;
        while i < old.len() || j < new.len() {
            if i < old.len() && j < new.len() && old[i] == new[j] {
                if let Some(start) = block_start.take() {
                    ops.push(change_op(start, (i, j)));
                }
                let start = (i, j);
                while i < old.len() && j < new.len() && old[i] == new[j] {
                    i += 1;
                    j += 1;
                }
                ops.push(DiffOp::Equal {
                    old_index: start.0,
                    new_index: start.1,
                    len: i - start.0,
                });
                continue;
            }
            block_start.get_or_insert((i, j));
            let remove = j == new.len()
                || (i < old.len()
                    && left
                        .checked_sub(1)
                        .is_some_and(|rest| self.within(rest, i + 1, j)));
            if remove {
                i += 1;
            } else {
                j += 1;
            }
            left = left.saturating_sub(1);
        }
        if let Some(start) = block_start {
            ops.push(change_op(start, (i, j)));
        }
        ops
    }
}

/// The op for the change block from `start` to `end` (both `(old, new)` indices).
fn change_op(start: (usize, usize), end: (usize, usize)) -> DiffOp {
    let (old_index, new_index) = start;
    let (old_len, new_len) = (end.0 - old_index, end.1 - new_index);
    match (old_len, new_len) {
        (_, 0) => DiffOp::Delete {
            old_index,
            old_len,
            new_index,
        },
        (0, _) => DiffOp::Insert {
            old_index,
            new_index,
            new_len,
        },
        _ => DiffOp::Replace {
            old_index,
            old_len,
            new_index,
            new_len,
        },
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::diff::test_support::{Rng, edited, random_lines};

    /// The alignment rule of the module doc computed the slow, obvious way: a full
    /// table of suffix costs. Returns the kept `(old, new)` pairs and the edit count.
    fn reference(old: &[&str], new: &[&str]) -> (Vec<(usize, usize)>, usize) {
        let (n, m) = (old.len(), new.len());
        let mut cost = vec![vec![0usize; m + 1]; n + 1];
        for i in (0..=n).rev() {
            for j in (0..=m).rev() {
                cost[i][j] = if i == n {
                    m - j
                } else if j == m {
                    n - i
                } else if old[i] == new[j] {
                    cost[i + 1][j + 1]
                } else {
                    1 + cost[i + 1][j].min(cost[i][j + 1])
                };
            }
        }
        let (mut i, mut j, mut kept) = (0, 0, Vec::new());
        while i < n || j < m {
            if i < n && j < m && old[i] == new[j] {
                kept.push((i, j));
                i += 1;
                j += 1;
            } else if j == m || (i < n && cost[i + 1][j] < cost[i][j]) {
                i += 1;
            } else {
                j += 1;
            }
        }
        (kept, cost[0][0])
    }

    /// Checks that `ops` walk both sides in order without gaps, pairing only equal
    /// lines, and returns the kept pairs and the edit count.
    fn kept_pairs(old: &[&str], new: &[&str], ops: &[DiffOp]) -> (Vec<(usize, usize)>, usize) {
        let (mut i, mut j, mut kept, mut edits) = (0, 0, Vec::new(), 0);
        for op in ops {
            let (tag, olds, news) = op.as_tag_tuple();
            assert_eq!((olds.start, news.start), (i, j), "gap before {op:?}");
            if tag == similar::DiffTag::Equal {
                for (o, n) in olds.clone().zip(news.clone()) {
                    assert_eq!(old[o], new[n]);
                    kept.push((o, n));
                }
            } else {
                edits += olds.len() + news.len();
            }
            (i, j) = (olds.end, news.end);
        }
        assert_eq!((i, j), (old.len(), new.len()), "ops stop early");
        (kept, edits)
    }

    fn strs(lines: &[String]) -> Vec<&str> {
        lines.iter().map(String::as_str).collect()
    }

    #[test]
    fn matches_the_slow_reference_on_repetitive_random_inputs() {
        let mut rng = Rng::new(7);
        for case in 0..600 {
            let pool = 1 + rng.below(5);
            let old = random_lines(&mut rng, 30, pool);
            let new = if rng.one_in(5) {
                random_lines(&mut rng, 30, pool)
            } else {
                edited(&mut rng, &old, pool)
            };
            let (old, new) = (strs(&old), strs(&new));
            let ops = align(&old, &new);
            assert_eq!(
                kept_pairs(&old, &new, &ops),
                reference(&old, &new),
                "case {case}: {old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn blocks_list_removed_lines_before_added_ones() {
        let ops = align(&["a", "b", "c"], &["x", "b", "y", "z"]);
        assert_eq!(
            ops,
            [
                DiffOp::Replace {
                    old_index: 0,
                    old_len: 1,
                    new_index: 0,
                    new_len: 1
                },
                DiffOp::Equal {
                    old_index: 1,
                    new_index: 1,
                    len: 1
                },
                DiffOp::Replace {
                    old_index: 2,
                    old_len: 1,
                    new_index: 2,
                    new_len: 2
                },
            ]
        );
        assert_eq!(align(&[], &[]), []);
    }

    #[test]
    fn rewrites_past_the_edit_limit_still_align_every_line() {
        let old: Vec<String> = (0..MAX_EDITS).map(|i| format!("old {i}")).collect();
        let mut new: Vec<String> = (0..MAX_EDITS).map(|i| format!("new {i}")).collect();
        new[MAX_EDITS / 2] = old[MAX_EDITS / 2].clone();
        let (old, new) = (strs(&old), strs(&new));
        let (ids_old, ids_new) = intern(&old, &new);
        assert!(SuffixCosts::search(&ids_old, &ids_new, MAX_EDITS).is_none());
        let (kept, edits) = kept_pairs(&old, &new, &align(&old, &new));
        assert_eq!(kept, [(MAX_EDITS / 2, MAX_EDITS / 2)]);
        assert_eq!(edits, 2 * MAX_EDITS - 2);
    }
}

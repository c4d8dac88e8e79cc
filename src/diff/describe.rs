//! The account of a partly approved change that goes back to the model.
//!
//! Owns: the wording and layout of that account.
//! Does not own: choosing or applying hunks.
//! Invariant: every hunk of the change is named as applied or rejected together with
//! the file's current lines where it was, so the model never has to guess what landed;
//! the account stays short however large the hunks are.

use super::HunkId;
use super::apply::{Applied, HunkOutcome};
use super::hunk::{HunkLine, LineKind};
use super::lines::LineEnding;

/// Hunks described in detail; the rest are only listed by id.
const MAX_SECTIONS: usize = 20;
/// Changed lines of one hunk shown before the rest are counted instead.
const EXCERPT_LINES: usize = 12;
/// Numbered file lines shown for one hunk before the rest are counted instead.
const CURRENT_LINES: usize = 12;
/// Characters of one line shown.
const LINE_CHARS: usize = 240;

impl Applied {
    /// What the model is told after the user approved some hunks of its change to
    /// `path`: which hunks were applied and which rejected (id, header, excerpt), the
    /// user's `reason`, and the file's current numbered lines at each hunk.
    pub fn describe_partial(&self, path: &str, reason: Option<&str>) -> String {
        let mut out = self.headline(path);
        if let Some(reason) = reason.map(str::trim).filter(|reason| !reason.is_empty()) {
            out.push_str(&format!("The user said: {reason}\n"));
        }
        out.push_str(&format!(
            "Applied: {}. Rejected: {}.\n",
            id_list(&self.applied_ids()),
            id_list(&self.rejected_ids())
        ));
        for outcome in self.hunks.iter().take(MAX_SECTIONS) {
            out.push('\n');
            push_excerpt(&mut out, outcome);
            if self.text.is_some() {
                push_current_lines(&mut out, path, outcome);
            }
        }
        if let Some(hidden) = self
            .hunks
            .len()
            .checked_sub(MAX_SECTIONS)
            .filter(|&n| n > 0)
        {
            out.push_str(&format!(
                "\n… {} after these not shown; their ids are listed above. Read the file \
                 before editing those parts again.\n",
                count(hidden, "more hunk")
            ));
        }
        out
    }

    fn headline(&self, path: &str) -> String {
        let total = self.hunks.len();
        let applied = self.hunks.iter().filter(|outcome| outcome.applied).count();
        if self.text.is_none() {
            format!("`{path}` was not created: the user rejected the new file.\n")
        } else if total == 0 {
            format!("Your change to `{path}` changed nothing; the file is as it was.\n")
        } else if applied == 0 {
            format!(
                "None of your change to `{path}` was applied: the user rejected {}; the \
                 file is unchanged.\n",
                if total == 1 {
                    "its only hunk".to_string()
                } else {
                    format!("all {total} hunks")
                }
            )
        } else if applied == total {
            format!(
                "All of your change to `{path}` was applied ({}).\n",
                count(total, "hunk")
            )
        } else {
            format!(
                "Only part of your change to `{path}` was applied: the user accepted {applied} \
                 of {total} hunks, so the file is not what you proposed. Work from the lines \
                 below, not from your edit.\n"
            )
        }
    }
}

/// `count(1, "hunk")` → `"1 hunk"`, `count(3, "hunk")` → `"3 hunks"`.
fn count(n: usize, noun: &str) -> String {
    let suffix = if n == 1 { "" } else { "s" };
    format!("{n} {noun}{suffix}")
}

fn id_list(ids: &[HunkId]) -> String {
    if ids.is_empty() {
        return "none".to_string();
    }
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The hunk's id, header and changed lines (without terminators; the numbered lines
/// that follow show the context).
fn push_excerpt(out: &mut String, outcome: &HunkOutcome) {
    let hunk = &outcome.hunk;
    let status = if outcome.applied {
        "Applied"
    } else {
        "Rejected"
    };
    out.push_str(&format!("{status} hunk {} {}\n", hunk.id, hunk.header));
    let lines: Vec<&HunkLine> = hunk
        .lines
        .iter()
        .filter(|line| line.kind != LineKind::Context)
        .collect();
    push_capped(
        out,
        &lines,
        EXCERPT_LINES,
        |_, line| {
            let mark = if line.ending == LineEnding::Missing {
                "\n\\ No newline at end of file"
            } else {
                ""
            };
            format!("{}{}{mark}", line.kind.marker(), cut(&line.text))
        },
        |hidden| format!("… {} not shown", count(hidden, "more changed line")),
    );
}

/// The lines the file now has where the hunk was, numbered like the read tool.
fn push_current_lines(out: &mut String, path: &str, outcome: &HunkOutcome) {
    let dropped = if outcome.applied {
        LineKind::Removed
    } else {
        LineKind::Added
    };
    let lines: Vec<&HunkLine> = outcome
        .hunk
        .lines
        .iter()
        .filter(|line| line.kind != dropped)
        .collect();
    let range = outcome.now;
    if range.len == 0 {
        out.push_str(&format!("`{path}` has no lines there now.\n"));
        return;
    }
    let last = range.start + range.len - 1;
    let (span, verb) = if range.len == 1 {
        (format!("Line {last}"), "reads")
    } else {
        (format!("Lines {}–{last}", range.start), "read")
    };
    let when = if outcome.applied { "now" } else { "still" };
    out.push_str(&format!("{span} of `{path}` {when} {verb}:\n"));
    push_capped(
        out,
        &lines,
        CURRENT_LINES,
        |i, line| format!("{:>6}\t{}", range.start + i, cut(&line.text)),
        |hidden| {
            format!(
                "… lines {}–{last} not shown; read the file to see them",
                last + 1 - hidden
            )
        },
    );
}

/// Pushes the first `cap` of `lines` as `render(index, line)`, one per output line,
/// then `note(hidden)` if some were left out.
fn push_capped(
    out: &mut String,
    lines: &[&HunkLine],
    cap: usize,
    render: impl Fn(usize, &HunkLine) -> String,
    note: impl FnOnce(usize) -> String,
) {
    for (i, line) in lines.iter().take(cap).enumerate() {
        out.push_str(&render(i, line));
        out.push('\n');
    }
    if lines.len() > cap {
        out.push_str(&note(lines.len() - cap));
        out.push('\n');
    }
}

/// At most [`LINE_CHARS`] characters of `text`, saying how many were cut.
fn cut(text: &str) -> String {
    match text.char_indices().nth(LINE_CHARS) {
        None => text.to_string(),
        Some((end, _)) => {
            let hidden = text[end..].chars().count();
            format!("{}… [{hidden} more chars]", &text[..end])
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use crate::diff::{HunkId, apply, hunks};

    const BEFORE: &str = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";

    fn accept_first(before: Option<&str>, after: &str) -> crate::diff::Applied {
        let first: Vec<HunkId> = hunks(before, after)
            .into_iter()
            .take(1)
            .map(|h| h.id)
            .collect();
        apply(before, after, &first).unwrap()
    }

    #[test]
    fn a_partial_approval_names_each_hunk_and_shows_the_file_there() {
        let after = BEFORE.replace('b', "B").replace('k', "K");
        let applied = accept_first(Some(BEFORE), &after);
        // The ids pin the id scheme (FNV-1a over each line's marker, text and ending, folded
        // to 32 bits); they were computed independently of this code.
        assert_eq!(applied.applied_ids(), [HunkId("17dea759".into())]);
        assert_eq!(
            applied.describe_partial("notes.txt", Some("keep k lowercase")),
            "Only part of your change to `notes.txt` was applied: the user accepted 1 of 2 \
             hunks, so the file is not what you proposed. Work from the lines below, not from \
             your edit.\n\
             The user said: keep k lowercase\n\
             Applied: 17dea759. Rejected: 36f395b0.\n\
             \n\
             Applied hunk 17dea759 @@ -1,5 +1,5 @@\n\
             -b\n\
             +B\n\
             Lines 1–5 of `notes.txt` now read:\n     1\ta\n     2\tB\n     3\tc\n     4\td\n     5\te\n\
             \n\
             Rejected hunk 36f395b0 @@ -8,5 +8,5 @@\n\
             -k\n\
             +K\n\
             Lines 8–12 of `notes.txt` still read:\n     8\th\n     9\ti\n    10\tj\n    11\tk\n    12\tl\n"
        );
    }

    #[test]
    fn a_rejected_new_file_is_reported_as_not_created() {
        let applied = apply(None, "x\n", &[]).unwrap();
        let text = applied.describe_partial("new.rs", None);
        let id = &applied.rejected_ids()[0];
        assert_eq!(
            text,
            format!(
                "`new.rs` was not created: the user rejected the new file.\n\
                 Applied: none. Rejected: {id}.\n\
                 \n\
                 Rejected hunk {id} @@ -0,0 +1 @@\n\
                 +x\n"
            )
        );
    }

    #[test]
    fn large_hunks_and_long_lines_are_cut_with_a_note() {
        let before = "start\nend\n";
        let long = "y".repeat(300);
        let added: String = (1..=30).map(|n| format!("new {n}\n")).collect();
        let after = format!("start\n{long}\n{added}end\n");
        let text = accept_first(Some(before), &after).describe_partial("big.txt", None);
        assert!(
            text.starts_with("All of your change to `big.txt` was applied (1 hunk).\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!("+{}… [60 more chars]\n", "y".repeat(240))),
            "{text}"
        );
        assert!(
            text.contains("+new 11\n… 19 more changed lines not shown\n"),
            "{text}"
        );
        assert!(
            text.contains("    12\tnew 10\n… lines 13–33 not shown; read the file to see them\n"),
            "{text}"
        );
        assert!(!text.contains("new 30"), "{text}");
    }

    #[test]
    fn many_hunks_are_listed_but_only_the_first_described() {
        let before: String = (0..250).map(|n| format!("{n}\n")).collect();
        let after: String = (0..250)
            .map(|n| {
                if n % 10 == 0 {
                    format!("{n}!\n")
                } else {
                    format!("{n}\n")
                }
            })
            .collect();
        let all: Vec<HunkId> = hunks(Some(&before), &after)
            .into_iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(all.len(), 25);
        let text = apply(Some(&before), &after, &all[..3])
            .unwrap()
            .describe_partial("n", None);
        assert!(text.contains(&all[24].to_string()), "every id is listed");
        assert_eq!(text.matches("hunk ").count(), 20, "{text}");
        assert!(
            text.ends_with(
                "\n… 5 more hunks after these not shown; their ids are listed above. Read the \
                 file before editing those parts again.\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn missing_final_newlines_are_marked_in_the_excerpt() {
        let text = accept_first(Some("a\nb"), "a\nc").describe_partial("f", Some("  "));
        assert!(!text.contains("The user said"), "{text}");
        assert!(
            text.contains("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"),
            "{text}"
        );
        assert!(
            text.contains("Lines 1–2 of `f` now read:\n     1\ta\n     2\tc\n"),
            "{text}"
        );
    }
}

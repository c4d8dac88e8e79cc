//! Clipping of tool output before it reaches the model.
//!
//! Owns: the size limits and the head + marker + tail shape of clipped output, and
//! saving the full text to a spill file the marker points to.
//! Does not own: where the spill directory is (the agent passes it) or which results
//! get clipped.
//! Invariant: text within the limits is returned unchanged; clipped text keeps a head
//! and a tail that are exact slices of the input, never splits a UTF-8 character, and
//! fits the limits (given a spill path of reasonable length).

use std::fs;
use std::path::{Path, PathBuf};

use super::text::{ceil_char_boundary, count, floor_char_boundary, human_size};

/// How much of one tool result the model receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClipLimits {
    pub max_bytes: usize,
    pub max_lines: usize,
}

impl Default for ClipLimits {
    fn default() -> Self {
        Self {
            max_bytes: 30_000,
            max_lines: 800,
        }
    }
}

/// Room kept for the marker line besides the spill note (counts, sizes, brackets).
const MARKER_OVERHEAD: usize = 80;

/// Returns `text` unchanged if it fits `limits`; otherwise its head and tail around a
/// one-line marker saying what was cut and where the full text was saved
/// (`spill_dir/<name>.txt`, with `name` sanitized to a plain file name).
pub fn clip(text: &str, limits: ClipLimits, spill_dir: &Path, name: &str) -> String {
    if text.len() <= limits.max_bytes && text.lines().count() <= limits.max_lines {
        return text.to_string();
    }
    let spill_note = spill(text, spill_dir, name);

    let keep_lines = limits.max_lines.saturating_sub(1);
    let keep_bytes = limits
        .max_bytes
        .saturating_sub(spill_note.len() + MARKER_OVERHEAD);
    let head_end = head_end(text, keep_lines.div_ceil(2), keep_bytes / 2);
    let tail_start = tail_start(text, keep_lines / 2, keep_bytes - keep_bytes / 2).max(head_end);

    let (head, middle, tail) = (
        &text[..head_end],
        &text[head_end..tail_start],
        &text[tail_start..],
    );
    let marker = format!(
        "[… {} ({}) cut from the middle; {spill_note}]",
        count(middle.split_inclusive('\n').count() as u64, "line"),
        human_size(middle.len() as u64),
    );

    let mut out = String::with_capacity(head.len() + marker.len() + tail.len() + 2);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    if !tail.is_empty() {
        out.push('\n');
        out.push_str(tail);
    }
    out
}

/// End offset of the head: whole lines while both budgets allow; a first line that
/// alone exceeds the byte budget is cut by bytes.
fn head_end(text: &str, max_lines: usize, max_bytes: usize) -> usize {
    let mut end = 0;
    for line in text.split_inclusive('\n').take(max_lines) {
        if end + line.len() > max_bytes {
            if end == 0 {
                end = floor_char_boundary(text, max_bytes);
            }
            break;
        }
        end += line.len();
    }
    end
}

/// Start offset of the tail, the mirror image of [`head_end`].
fn tail_start(text: &str, max_lines: usize, max_bytes: usize) -> usize {
    let mut start = text.len();
    for line in text.split_inclusive('\n').rev().take(max_lines) {
        let kept = text.len() - start;
        if kept + line.len() > max_bytes {
            if kept == 0 {
                start = ceil_char_boundary(text, text.len().saturating_sub(max_bytes));
            }
            break;
        }
        start -= line.len();
    }
    start
}

/// Saves the full text and says where, or why it could not.
fn spill(text: &str, spill_dir: &Path, name: &str) -> String {
    let path = spill_path(spill_dir, name);
    let saved = fs::create_dir_all(spill_dir).and_then(|()| fs::write(&path, text));
    match saved {
        // Shell commands run in the sandbox, which does not show this directory.
        Ok(()) => format!(
            "full output saved to {} (open it with `read`)",
            path.display()
        ),
        Err(error) => format!(
            "the full output could not be saved to {} ({error})",
            path.display()
        ),
    }
}

/// `spill_dir/<name>.txt` where `name` can only be a plain file name: anything but
/// ASCII letters, digits, `-`, `_` and `.` becomes `_`, and leading dots are dropped
/// so it is neither hidden nor `..`.
fn spill_path(spill_dir: &Path, name: &str) -> PathBuf {
    const MAX_NAME_CHARS: usize = 100;
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_CHARS)
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    let stem = if cleaned.is_empty() {
        "output"
    } else {
        cleaned
    };
    spill_dir.join(format!("{stem}.txt"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn numbered_text(lines: usize) -> String {
        (1..=lines).map(|i| format!("line {i}\n")).collect()
    }

    fn assert_within(out: &str, limits: ClipLimits) {
        assert!(
            out.len() <= limits.max_bytes,
            "{} bytes > {}",
            out.len(),
            limits.max_bytes
        );
        assert!(
            out.lines().count() <= limits.max_lines,
            "{} lines > {}",
            out.lines().count(),
            limits.max_lines
        );
    }

    #[test]
    fn text_within_limits_is_unchanged_and_not_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let spill_dir = dir.path().join("spill");
        let text = numbered_text(10);
        let limits = ClipLimits {
            max_bytes: 1000,
            max_lines: 10,
        };
        assert_eq!(clip(&text, limits, &spill_dir, "call_1"), text);
        assert!(!spill_dir.exists());
    }

    #[test]
    fn default_limits_are_about_30_kb_and_800_lines() {
        assert_eq!(
            ClipLimits::default(),
            ClipLimits {
                max_bytes: 30_000,
                max_lines: 800
            }
        );
    }

    #[test]
    fn too_many_lines_keep_head_and_tail_around_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let text = numbered_text(100);
        let limits = ClipLimits {
            max_bytes: 100_000,
            max_lines: 11,
        };
        let out = clip(&text, limits, dir.path(), "call_1");
        let spilled = dir.path().join("call_1.txt");
        let expected = format!(
            "line 1\nline 2\nline 3\nline 4\nline 5\n\
             [… 90 lines (716 bytes) cut from the middle; full output saved to {} (open it with \
             `read`)]\n\
             line 96\nline 97\nline 98\nline 99\nline 100\n",
            spilled.display()
        );
        assert_eq!(out, expected);
        assert_eq!(fs::read_to_string(&spilled).unwrap(), text);
        assert_within(&out, limits);
    }

    #[test]
    fn too_many_bytes_cut_at_line_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("{}\n", "x".repeat(99)).repeat(50);
        let limits = ClipLimits {
            max_bytes: 600,
            max_lines: 1000,
        };
        let out = clip(&text, limits, dir.path(), "big");
        assert_within(&out, limits);
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("x".repeat(99).as_str()));
        assert!(out.ends_with(&format!("{}\n", "x".repeat(99))), "{out}");
        let marker = out.lines().find(|l| l.starts_with("[…")).unwrap();
        assert!(
            marker.contains("lines (") && marker.contains("cut from the middle"),
            "{marker}"
        );
        // Every kept line is whole.
        for line in out.lines().filter(|l| !l.starts_with("[…")) {
            assert_eq!(line.len(), 99);
        }
    }

    #[test]
    fn a_single_giant_line_is_cut_by_bytes_without_splitting_chars() {
        let dir = tempfile::tempdir().unwrap();
        let text = "é€😀".repeat(10_000);
        for max_bytes in [300, 301, 302, 303, 517, 1000] {
            let limits = ClipLimits {
                max_bytes,
                max_lines: 800,
            };
            let out = clip(&text, limits, dir.path(), "giant");
            assert_within(&out, limits);
            let (head, rest) = out.split_once('\n').unwrap();
            let (marker, tail) = rest.split_once('\n').unwrap();
            assert!(text.starts_with(head) && !head.is_empty(), "{max_bytes}");
            assert!(text.ends_with(tail) && !tail.is_empty(), "{max_bytes}");
            assert!(marker.starts_with("[… 1 line ("), "{marker}");
        }
    }

    #[test]
    fn output_fits_the_limits_for_many_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let texts = [
            numbered_text(5000),
            "a\n".repeat(3000),
            format!("{}\n{}", "short", "long ".repeat(20_000)),
            "ü".repeat(50_000),
            "\n".repeat(5000),
        ];
        for text in &texts {
            for (max_bytes, max_lines) in [(30_000, 800), (2_000, 50), (500, 3), (400, 1)] {
                let limits = ClipLimits {
                    max_bytes,
                    max_lines,
                };
                let out = clip(text, limits, dir.path(), "shape");
                assert_within(&out, limits);
                assert!(out.contains("cut from the middle"));
            }
        }
    }

    #[test]
    fn spill_name_cannot_escape_the_spill_dir() {
        let dir = tempfile::tempdir().unwrap();
        let spill_dir = dir.path().join("spill");
        let text = numbered_text(100);
        let limits = ClipLimits {
            max_bytes: 100_000,
            max_lines: 10,
        };
        for name in ["../../evil", "/etc/passwd", "..", "", "a/b\\c"] {
            let out = clip(&text, limits, &spill_dir, name);
            assert!(out.contains("full output saved to"), "{out}");
        }
        let mut saved: Vec<_> = fs::read_dir(&spill_dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        saved.sort();
        assert_eq!(
            saved,
            vec!["_.._evil.txt", "_etc_passwd.txt", "a_b_c.txt", "output.txt"]
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn marker_says_when_the_full_output_could_not_be_saved() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_dir = dir.path().join("file");
        fs::write(&not_a_dir, "").unwrap();
        let text = numbered_text(100);
        let limits = ClipLimits {
            max_bytes: 100_000,
            max_lines: 10,
        };
        let out = clip(&text, limits, &not_a_dir, "call");
        let marker = out.lines().find(|l| l.starts_with("[…")).unwrap();
        assert!(
            marker.contains("the full output could not be saved to"),
            "{marker}"
        );
        assert!(
            out.starts_with("line 1\n") && out.ends_with("line 100\n"),
            "{out}"
        );
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;

        /// Lines of ASCII, two-, three- and four-byte characters, some long, some empty.
        fn output() -> impl Strategy<Value = String> {
            proptest::collection::vec("[a-z é€😀]{0,120}", 0..120)
                .prop_map(|lines| lines.join("\n"))
        }

        /// Splits clipped output into (head, marker, tail) as `clip` assembles it.
        fn parts(out: &str) -> (&str, &str, &str) {
            let start = out
                .find("[… ")
                .unwrap_or_else(|| panic!("no marker in {out:?}"));
            let end = out[start..].find(']').map_or(out.len(), |i| start + i + 1);
            let head = &out[..start];
            let tail = out[end..].strip_prefix('\n').unwrap_or(&out[end..]);
            (head, &out[start..end], tail)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]

            #[test]
            fn clipping_keeps_exact_ends_fits_its_budget_and_states_the_cut(
                text in output(),
                max_bytes in 300usize..3_000,
                max_lines in 3usize..40,
            ) {
                let dir = tempfile::tempdir().unwrap();
                let limits = ClipLimits { max_bytes, max_lines };
                let out = clip(&text, limits, dir.path(), "call");
                let fits = text.len() <= max_bytes && text.lines().count() <= max_lines;
                if fits {
                    prop_assert_eq!(out, text);
                    return Ok(());
                }
                prop_assert!(out.len() <= max_bytes, "{} bytes > {max_bytes}", out.len());
                prop_assert!(out.lines().count() <= max_lines);
                let (head, marker, tail) = parts(&out);
                prop_assert!(text.ends_with(tail), "tail {tail:?}");
                // `clip` adds a newline after a head that does not end a line, so a head
                // cut just before a newline reads either way: one reading must hold.
                let readings: Vec<&str> = [Some(head), head.strip_suffix('\n')]
                    .into_iter()
                    .flatten()
                    .filter(|head| text.starts_with(head) && head.len() + tail.len() < text.len())
                    .collect();
                prop_assert!(!readings.is_empty(), "head {head:?}");
                let stated = readings.iter().any(|head| {
                    let cut = text.len() - head.len() - tail.len();
                    marker.contains(&format!("({})", human_size(cut as u64)))
                });
                prop_assert!(stated, "{marker} states no cut that the ends leave");
            }
        }
    }
}

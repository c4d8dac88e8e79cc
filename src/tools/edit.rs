//! The `edit` tool: exact string replacement in an existing text file.
//!
//! Owns: matching `old_string` (exactly, with CRLF files accepting `\n`), the answers
//! for no match (with a whitespace-insensitive near-match hint) and ambiguous matches,
//! and the numbered view of the changed region.
//! Does not own: approval and the atomic write ([`super::files::apply_change`], shared
//! with `write`).
//! Invariant: a file changes only when `old_string` matched exactly once, or at least
//! once with `replace_all`, and only after approval.

use std::borrow::Cow;
use std::ops::{Range, RangeInclusive};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::describe::{self, CallInfo};
use super::files::{
    Change, apply_change, blocking, existing_file, load_text, not_found, refuse_if_stale,
};
use super::text::{count, line_numbers_at, push_numbered, thousands};
use super::{Tool, ToolCtx, ToolError, ToolOutput, parse_args, schema_for};

/// Lines of unchanged text shown around each change.
const CONTEXT_LINES: usize = 3;
/// Changed regions shown in the result; the rest are only counted.
const MAX_REGIONS_SHOWN: usize = 10;
/// Near matches shown when `old_string` was not found.
const MAX_NEAR_MATCHES: usize = 3;
/// Match lines listed when `old_string` is ambiguous.
const MAX_LINES_LISTED: usize = 20;

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// The file to change, relative to the workspace root. It must exist.
    path: String,
    /// The exact text to replace, including indentation and line breaks. It must
    /// occur exactly once unless replace_all is true.
    old_string: String,
    /// The text to put in its place. May be empty to delete old_string.
    new_string: String,
    /// Replace every occurrence of old_string instead of requiring exactly one.
    /// Defaults to false.
    replace_all: Option<bool>,
}

pub struct Edit;

#[async_trait::async_trait]
impl Tool for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn description(&self) -> &'static str {
        "Replace exact text in an existing file. old_string must match the file exactly \
         (copy it from read output without the line-number prefix, keeping indentation) and \
         occur once; include surrounding lines to make it unique, or set replace_all to \
         change every occurrence. Returns the changed region with line numbers. Use write \
         to create new files."
    }

    fn schema(&self) -> Value {
        schema_for::<EditArgs>()
    }

    fn edits_files(&self) -> bool {
        true
    }

    fn describe(&self, args: &serde_json::Map<String, Value>) -> Option<CallInfo> {
        let path = describe::text(args, "path")?;
        let all = if describe::flag(args, "replace_all") {
            " (every occurrence)"
        } else {
            ""
        };
        Some(CallInfo::new(
            format!("edit {path}{all}"),
            vec![path.to_string()],
        ))
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        let args: EditArgs = parse_args(self.name(), args)?;
        check_strings(&args.old_string, &args.new_string)?;
        let replace_all = args.replace_all.unwrap_or(false);
        let workspace = ctx.workspace.clone();
        let ledger = ctx.ledger.clone();
        let (change, replacements, regions) = blocking(move || {
            let abs = workspace.resolve(&args.path)?;
            let display = workspace.display(&abs);
            let requested = workspace.link_route(&args.path, &abs);
            let mode = match existing_file(&workspace, &abs, &display)? {
                None => {
                    return Err(not_found(
                        &display,
                        "edit only changes existing files; use write to create it.",
                    ));
                }
                Some(meta) => meta.mode(),
            };
            refuse_if_stale(&ledger, &abs, &display)?;
            let before = load_text(&workspace, &abs, &display)?;
            let plan = plan_edit(&before, &args.old_string, &args.new_string, replace_all)
                .map_err(|failure| failure.into_error(&display, &before))?;
            // Shown only once the change is applied, but computed here, off the runtime.
            let regions = changed_regions(&plan.after, &plan.spans);
            let replacements = count(plan.spans.len() as u64, "replacement");
            let change = Change {
                tool: "edit",
                abs,
                display,
                requested,
                before: Some(before),
                after: plan.after,
                mode: Some(mode),
            };
            Ok((change, replacements, regions))
        })
        .await?;

        let display = change.display.clone();
        let landed = apply_change(ctx, change).await?;
        Ok(landed.into_output(ToolOutput {
            content: format!("edited `{display}`: {replacements}.\n{regions}"),
            summary: format!("edited {display} ({replacements})"),
            checks: None,
        }))
    }
}

fn check_strings(old: &str, new: &str) -> Result<(), ToolError> {
    if old.is_empty() {
        return Err(ToolError::InvalidArguments(
            "old_string is empty, so there is nothing to find. To add text, set old_string to \
             an existing line next to where it goes and new_string to that line plus the \
             addition; to create a file, use write."
                .into(),
        ));
    }
    if old == new {
        return Err(ToolError::InvalidArguments(
            "old_string and new_string are identical, so the edit would change nothing. Put \
             the text you want in new_string."
                .into(),
        ));
    }
    Ok(())
}

/// A replacement ready to be written.
#[derive(Debug, PartialEq)]
struct Plan {
    after: String,
    /// Where each inserted `new_string` sits in `after`, in order.
    spans: Vec<Range<usize>>,
}

/// Why `old_string` could not be applied.
#[derive(Debug, PartialEq)]
enum MatchFailure {
    NotFound { old: String },
    Ambiguous { starts: Vec<usize> },
}

/// Finds `old` in `content` and builds the new content. In a CRLF file, `\n` in `old`
/// and `new` stands for the file's `\r\n`.
fn plan_edit(content: &str, old: &str, new: &str, replace_all: bool) -> Result<Plan, MatchFailure> {
    let (old, new) = if uses_crlf(content) {
        (to_crlf(old), to_crlf(new))
    } else {
        (Cow::Borrowed(old), Cow::Borrowed(new))
    };
    let starts: Vec<usize> = if replace_all {
        content
            .match_indices(old.as_ref())
            .map(|(at, _)| at)
            .collect()
    } else {
        // Overlapping occurrences ("aa" in "aaa") make the target ambiguous too.
        overlapping_starts(content, &old)
    };
    match starts.len() {
        0 => {
            return Err(MatchFailure::NotFound {
                old: old.into_owned(),
            });
        }
        1 => {}
        _ if replace_all => {}
        _ => return Err(MatchFailure::Ambiguous { starts }),
    }
    let mut after = String::with_capacity(content.len() + starts.len() * new.len());
    let mut spans = Vec::with_capacity(starts.len());
    let mut copied = 0;
    for start in starts {
        after.push_str(&content[copied..start]);
        let inserted = after.len();
        after.push_str(&new);
        spans.push(inserted..after.len());
        copied = start + old.len();
    }
    after.push_str(&content[copied..]);
    Ok(Plan { after, spans })
}

/// Where `needle` (not empty) starts in `haystack`, overlapping occurrences included.
fn overlapping_starts(haystack: &str, needle: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(found) = haystack[from..].find(needle) {
        let at = from + found;
        starts.push(at);
        from = at + haystack[at..].chars().next().map_or(1, char::len_utf8);
    }
    starts
}

/// Whether most line breaks in `text` are `\r\n`.
fn uses_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= text.matches('\n').count()
}

/// `text` with every `\n` not already preceded by `\r` turned into `\r\n`.
fn to_crlf(text: &str) -> Cow<'_, str> {
    let lone_newlines = text.matches('\n').count() > text.matches("\r\n").count();
    if !lone_newlines {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut previous = None;
    for c in text.chars() {
        if c == '\n' && previous != Some('\r') {
            out.push('\r');
        }
        out.push(c);
        previous = Some(c);
    }
    Cow::Owned(out)
}

impl MatchFailure {
    fn into_error(self, display: &str, content: &str) -> ToolError {
        match self {
            MatchFailure::Ambiguous { starts } => ambiguous_error(display, content, &starts),
            MatchFailure::NotFound { old } => not_found_error(display, content, &old),
        }
    }
}

fn ambiguous_error(display: &str, content: &str, starts: &[usize]) -> ToolError {
    let lines = line_numbers_at(content, starts);
    let mut listed: Vec<String> = lines
        .iter()
        .take(MAX_LINES_LISTED)
        .map(|&line| thousands(line as u64))
        .collect();
    if lines.len() > MAX_LINES_LISTED {
        listed.push("…".into());
    }
    ToolError::InvalidArguments(format!(
        "old_string occurs {} times in `{display}` (starting on lines {}), so it is not clear \
         which one to change. Add surrounding lines to old_string so it matches exactly one \
         place, or set replace_all to true to change all of them.",
        thousands(starts.len() as u64),
        listed.join(", ")
    ))
}

fn not_found_error(display: &str, content: &str, old: &str) -> ToolError {
    let near = near_matches(content, old);
    if near.is_empty() {
        return ToolError::InvalidArguments(format!(
            "old_string was not found in `{display}`. The file may have changed or the text \
             differs from what you remember: read `{display}` again and copy old_string \
             exactly, including indentation and line breaks."
        ));
    }
    let lines: Vec<&str> = content.lines().collect();
    let mut shown = String::new();
    for range in &near {
        push_line_range(&mut shown, &lines, range);
    }
    let places: Vec<String> = near.iter().map(describe_lines).collect();
    ToolError::InvalidArguments(format!(
        "old_string was not found exactly in `{display}`, but it matches if whitespace and \
         indentation are ignored at {}:\n{shown}Copy old_string exactly from the text after the \
         tab on these lines (same indentation and spacing) and call edit again.",
        places.join(", ")
    ))
}

fn describe_lines(range: &RangeInclusive<usize>) -> String {
    let (first, last) = (*range.start() as u64, *range.end() as u64);
    if first == last {
        format!("line {}", thousands(first))
    } else {
        format!("lines {}–{}", thousands(first), thousands(last))
    }
}

/// Appends the numbered lines `range` (1-based, inclusive) of `lines`.
fn push_line_range(out: &mut String, lines: &[&str], range: &RangeInclusive<usize>) {
    let (first, last) = (*range.start(), *range.end());
    push_numbered(out, first, lines[first - 1..last].iter().copied());
}

/// Runs of file lines (1-based, inclusive) that equal `old` once runs of whitespace
/// are collapsed and ends trimmed. The first and last lines of `old` may be partial
/// lines (their ends are compared), as edits often start mid-line.
fn near_matches(content: &str, old: &str) -> Vec<RangeInclusive<usize>> {
    let needle: Vec<String> = old.lines().map(squash_whitespace).collect();
    let Some(first) = needle.iter().position(|line| !line.is_empty()) else {
        return Vec::new();
    };
    let last = needle
        .iter()
        .rposition(|line| !line.is_empty())
        .unwrap_or(first);
    let needle = &needle[first..=last];
    let haystack: Vec<String> = content.lines().map(squash_whitespace).collect();
    haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, window)| window_matches(window, needle))
        .map(|(index, _)| index + 1..=index + needle.len())
        .take(MAX_NEAR_MATCHES)
        .collect()
}

fn window_matches(window: &[String], needle: &[String]) -> bool {
    match (window, needle) {
        ([line], [wanted]) => line.contains(wanted.as_str()),
        ([first, middle @ .., last], [wanted_first, wanted_middle @ .., wanted_last]) => {
            first.ends_with(wanted_first.as_str())
                && last.starts_with(wanted_last.as_str())
                && middle == wanted_middle
        }
        _ => false,
    }
}

fn squash_whitespace(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The changed parts of `after` with [`CONTEXT_LINES`] lines around each, numbered.
fn changed_regions(after: &str, spans: &[Range<usize>]) -> String {
    let lines: Vec<&str> = after.lines().collect();
    let regions = line_regions(after, spans, lines.len());
    let mut out = String::new();
    for (i, region) in regions.iter().take(MAX_REGIONS_SHOWN).enumerate() {
        if i > 0 {
            out.push_str("   ...\n");
        }
        push_line_range(&mut out, &lines, region);
    }
    if lines.is_empty() {
        out.push_str("[the file is now empty]\n");
    }
    if regions.len() > MAX_REGIONS_SHOWN {
        out.push_str(&format!(
            "[… {} more changed regions not shown]\n",
            thousands((regions.len() - MAX_REGIONS_SHOWN) as u64)
        ));
    }
    out
}

/// 1-based inclusive line ranges covering each span plus context, merged where they
/// touch, clamped to `1..=total_lines`.
fn line_regions(
    text: &str,
    spans: &[Range<usize>],
    total_lines: usize,
) -> Vec<RangeInclusive<usize>> {
    if total_lines == 0 {
        return Vec::new();
    }
    // The last line of a span is the one holding its last byte; an empty span (a
    // deletion) sits on the line where it starts.
    let offsets: Vec<usize> = spans
        .iter()
        .flat_map(|span| [span.start, span.end.saturating_sub(1).max(span.start)])
        .collect();
    let numbers = line_numbers_at(text, &offsets);
    let mut regions: Vec<RangeInclusive<usize>> = Vec::new();
    for pair in numbers.chunks(2) {
        let (first, last) = (pair[0], pair[pair.len() - 1]);
        let start = first.saturating_sub(CONTEXT_LINES).max(1);
        let end = (last + CONTEXT_LINES).min(total_lines);
        match regions.last_mut() {
            Some(previous) if start <= previous.end() + 1 => {
                *previous = *previous.start()..=end.max(*previous.end());
            }
            _ => regions.push(start..=end),
        }
    }
    regions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ApprovalMode;
    use crate::tools::test_support::{Fixture, invalid, refused};
    use crate::tools::text::numbered;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn numbered_lines(first: usize, lines: &[&str]) -> String {
        lines
            .iter()
            .enumerate()
            .map(|(i, line)| format!("{}\n", numbered(first + i, line)))
            .collect()
    }

    #[tokio::test]
    async fn replaces_a_unique_match_and_shows_the_region() {
        let fx = Fixture::new();
        let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        fx.file("a.txt", &body);
        let output = fx
            .call(
                &Edit,
                json!({"path": "a.txt", "old_string": "line 10\n", "new_string": "ten\nTEN\n"}),
            )
            .await
            .unwrap();
        let expected = format!(
            "edited `a.txt`: 1 replacement.\n{}",
            numbered_lines(
                7,
                &[
                    "line 7", "line 8", "line 9", "ten", "TEN", "line 11", "line 12", "line 13"
                ]
            )
        );
        assert_eq!(output.content, expected);
        assert_eq!(output.summary, "edited a.txt (1 replacement)");
        assert_eq!(fx.text("a.txt"), body.replace("line 10\n", "ten\nTEN\n"));
        assert!(fx.ctx.ledger.was_read(&fx.path("a.txt")));
    }

    #[tokio::test]
    async fn an_edit_based_on_a_stale_read_is_refused_until_the_file_is_read_again() {
        let fx = Fixture::new();
        fx.file("a.txt", "one\ntwo\n");
        fx.mark_read("a.txt");
        fx.file("a.txt", "one\ntwo\nthree added by the user\n");
        let edit = json!({"path": "a.txt", "old_string": "two\n", "new_string": "2\n"});
        let message = refused(fx.call(&Edit, edit.clone()).await);
        assert!(
            message.contains("`a.txt` changed on disk since you read it"),
            "{message}"
        );
        assert!(message.contains("Read `a.txt` again"), "{message}");
        assert_eq!(fx.text("a.txt"), "one\ntwo\nthree added by the user\n");

        fx.mark_read("a.txt");
        fx.ok(&Edit, edit).await;
        assert_eq!(fx.text("a.txt"), "one\n2\nthree added by the user\n");
    }

    #[tokio::test]
    async fn several_matches_without_replace_all_are_ambiguous() {
        let fx = Fixture::new();
        fx.file("a.rs", "let x = 1;\nfoo();\nlet y = 2;\nfoo();\n");
        let message = invalid(
            fx.call(
                &Edit,
                json!({"path": "a.rs", "old_string": "foo();", "new_string": "bar();"}),
            )
            .await,
        );
        assert!(message.contains("occurs 2 times"), "{message}");
        assert!(message.contains("lines 2, 4"), "{message}");
        assert!(message.contains("replace_all"), "{message}");
        assert_eq!(fx.text("a.rs"), "let x = 1;\nfoo();\nlet y = 2;\nfoo();\n");
    }

    #[tokio::test]
    async fn replace_all_changes_every_occurrence() {
        let fx = Fixture::new();
        fx.file("notes.txt", "foo();\nx\nfoo();\n");
        let output = fx
            .call(
                &Edit,
                json!({"path": "notes.txt", "old_string": "foo", "new_string": "bar", "replace_all": true}),
            )
            .await
            .unwrap();
        assert_eq!(fx.text("notes.txt"), "bar();\nx\nbar();\n");
        assert_eq!(
            output.content,
            format!(
                "edited `notes.txt`: 2 replacements.\n{}",
                numbered_lines(1, &["bar();", "x", "bar();"])
            )
        );
    }

    #[tokio::test]
    async fn distant_changes_are_shown_as_separate_regions() {
        let fx = Fixture::new();
        let body: String = (1..=30).map(|i| format!("l{i}\n")).collect();
        fx.file("a.txt", body.replace("l5\n", "X\n").replace("l25\n", "X\n"));
        let content = fx
            .ok(
                &Edit,
                json!({"path": "a.txt", "old_string": "X", "new_string": "Y", "replace_all": true}),
            )
            .await;
        let expected = format!(
            "edited `a.txt`: 2 replacements.\n{}   ...\n{}",
            numbered_lines(2, &["l2", "l3", "l4", "Y", "l6", "l7", "l8"]),
            numbered_lines(22, &["l22", "l23", "l24", "Y", "l26", "l27", "l28"])
        );
        assert_eq!(content, expected);
    }

    #[tokio::test]
    async fn no_match_tells_the_model_to_read_again() {
        let fx = Fixture::new();
        fx.file("a.txt", "hello\n");
        let message = invalid(
            fx.call(
                &Edit,
                json!({"path": "a.txt", "old_string": "goodbye", "new_string": "x"}),
            )
            .await,
        );
        assert!(message.contains("was not found"), "{message}");
        assert!(message.contains("read `a.txt` again"), "{message}");
    }

    #[tokio::test]
    async fn no_match_with_different_indentation_shows_the_near_match() {
        let fx = Fixture::new();
        fx.file("a.py", "def f():\n\tif x:\n\t\treturn 1\n\treturn 2\n");
        let message = invalid(
            fx.call(
                &Edit,
                json!({
                    "path": "a.py",
                    "old_string": "    if x:\n        return 1\n",
                    "new_string": "    if y:\n        return 1\n"
                }),
            )
            .await,
        );
        let expected = format!(
            "old_string was not found exactly in `a.py`, but it matches if whitespace and \
             indentation are ignored at lines 2–3:\n{}Copy old_string exactly from the text \
             after the tab on these lines (same indentation and spacing) and call edit again.",
            numbered_lines(2, &["\tif x:", "\t\treturn 1"])
        );
        assert_eq!(message, expected);
        assert_eq!(
            fx.text("a.py"),
            "def f():\n\tif x:\n\t\treturn 1\n\treturn 2\n"
        );
    }

    #[test]
    fn near_matches_accept_partial_first_and_last_lines() {
        let content = "fn main() {\n    let  a = 1;\n    let b = 2;\n}\n";
        assert_eq!(near_matches(content, "let a = 1;"), vec![2..=2]);
        assert_eq!(near_matches(content, "a = 1;\nlet b"), vec![2..=3]);
        assert_eq!(
            near_matches(content, "nothing like it"),
            Vec::<RangeInclusive<usize>>::new()
        );
        assert_eq!(
            near_matches(content, "\n  \n"),
            Vec::<RangeInclusive<usize>>::new()
        );
    }

    #[tokio::test]
    async fn crlf_files_accept_lf_strings() {
        let fx = Fixture::new();
        fx.file("dos.txt", "one\r\ntwo\r\nthree\r\n");
        let content = fx
            .ok(
                &Edit,
                json!({"path": "dos.txt", "old_string": "one\ntwo\n", "new_string": "1\n2\n2.5\n"}),
            )
            .await;
        assert_eq!(fx.text("dos.txt"), "1\r\n2\r\n2.5\r\nthree\r\n");
        assert!(content.contains(&numbered(3, "2.5")), "{content}");
    }

    #[test]
    fn crlf_detection_and_conversion() {
        assert!(uses_crlf("a\r\nb\r\n"));
        assert!(!uses_crlf("a\nb\n"));
        assert!(!uses_crlf("a\r\nb\nc\nd\n"));
        assert_eq!(to_crlf("a\nb\r\nc"), "a\r\nb\r\nc");
        assert!(matches!(to_crlf("a\r\nb"), Cow::Borrowed(_)));
    }

    #[tokio::test]
    async fn empty_or_identical_strings_are_refused() {
        let fx = Fixture::new();
        fx.file("a.txt", "x\n");
        let message = invalid(
            fx.call(
                &Edit,
                json!({"path": "a.txt", "old_string": "", "new_string": "y"}),
            )
            .await,
        );
        assert!(message.contains("old_string is empty"), "{message}");
        let message = invalid(
            fx.call(
                &Edit,
                json!({"path": "a.txt", "old_string": "x", "new_string": "x"}),
            )
            .await,
        );
        assert!(message.contains("identical"), "{message}");
    }

    #[tokio::test]
    async fn missing_file_suggests_write() {
        let fx = Fixture::new();
        let message = invalid(
            fx.call(
                &Edit,
                json!({"path": "new.txt", "old_string": "a", "new_string": "b"}),
            )
            .await,
        );
        assert!(
            message.contains("does not exist") && message.contains("use write"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn binary_files_and_directories_are_refused() {
        let fx = Fixture::new();
        fx.file("blob.bin", b"a\0b");
        let message = refused(
            fx.call(
                &Edit,
                json!({"path": "blob.bin", "old_string": "a", "new_string": "b"}),
            )
            .await,
        );
        assert!(message.contains("binary"), "{message}");
        assert_eq!(fx.bytes("blob.bin"), b"a\0b");
        fx.file("dir/x", "");
        let message = refused(
            fx.call(
                &Edit,
                json!({"path": "dir", "old_string": "a", "new_string": "b"}),
            )
            .await,
        );
        assert!(message.contains("is a directory"), "{message}");
    }

    #[tokio::test]
    async fn read_only_mode_leaves_the_file_byte_identical() {
        let fx = Fixture::with_mode(ApprovalMode::ReadOnly);
        fx.file("a.txt", "keep\r\nme\n");
        let message = refused(
            fx.call(
                &Edit,
                json!({"path": "a.txt", "old_string": "keep", "new_string": "drop"}),
            )
            .await,
        );
        assert!(message.contains("read-only mode"), "{message}");
        assert!(message.contains("`a.txt`"), "{message}");
        assert_eq!(fx.bytes("a.txt"), b"keep\r\nme\n");
        assert!(!fx.ctx.ledger.was_read(&fx.path("a.txt")));
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_refused() {
        let fx = Fixture::new();
        let message = refused(
            fx.call(
                &Edit,
                json!({"path": "../../etc/hosts", "old_string": "a", "new_string": "b"}),
            )
            .await,
        );
        assert!(message.contains("outside the workspace"), "{message}");
    }

    #[tokio::test]
    async fn deleting_everything_reports_an_empty_file() {
        let fx = Fixture::new();
        fx.file("a.txt", "only\n");
        let content = fx
            .ok(
                &Edit,
                json!({"path": "a.txt", "old_string": "only\n", "new_string": ""}),
            )
            .await;
        assert_eq!(
            content,
            "edited `a.txt`: 1 replacement.\n[the file is now empty]\n"
        );
        assert_eq!(fx.text("a.txt"), "");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn edits_keep_permissions() {
        use std::os::unix::fs::PermissionsExt as _;
        let fx = Fixture::new();
        let path = fx.file("run.sh", "echo a\n");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
        fx.ok(
            &Edit,
            json!({"path": "run.sh", "old_string": "a", "new_string": "b"}),
        )
        .await;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    /// Found by the property below: `aa` in `aaa` occurs twice, not once.
    #[test]
    fn overlapping_occurrences_are_ambiguous() {
        assert_eq!(
            plan_edit("ééé", "éé", "", false),
            Err(MatchFailure::Ambiguous { starts: vec![0, 2] })
        );
        assert_eq!(plan_edit("ééé", "éé", "", true).unwrap().after, "é");
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;

        /// Every position where `needle` occurs, overlapping occurrences included.
        fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
            (0..=haystack.len().saturating_sub(needle.len()))
                .filter(|&at| haystack.is_char_boundary(at) && haystack[at..].starts_with(needle))
                .collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(500))]

            // A tiny alphabet makes repeated and overlapping matches common.
            #[test]
            fn a_unique_match_changes_only_its_range_and_anything_else_changes_nothing(
                content in "[ab\né]{0,40}",
                old in "[ab\né]{1,4}",
                new in "[xyé\n]{0,6}",
            ) {
                let found = occurrences(&content, &old);
                match plan_edit(&content, &old, &new, false) {
                    Ok(plan) => {
                        prop_assert_eq!(found.len(), 1, "applied with {} matches", found.len());
                        let at = found[0];
                        let expected =
                            format!("{}{new}{}", &content[..at], &content[at + old.len()..]);
                        prop_assert_eq!(plan.spans, vec![at..at + new.len()]);
                        prop_assert_eq!(plan.after, expected);
                    }
                    Err(MatchFailure::NotFound { .. }) => prop_assert!(found.is_empty()),
                    Err(MatchFailure::Ambiguous { starts }) => {
                        prop_assert!(found.len() > 1);
                        prop_assert_eq!(starts, found);
                    }
                }
            }

            #[test]
            fn replace_all_replaces_every_non_overlapping_match_left_to_right(
                content in "[ab\né]{0,40}",
                old in "[ab\né]{1,4}",
                new in "[xyé\n]{0,6}",
            ) {
                match plan_edit(&content, &old, &new, true) {
                    Ok(plan) => prop_assert_eq!(plan.after, content.replace(&old, &new)),
                    Err(failure) => {
                        prop_assert_eq!(failure, MatchFailure::NotFound { old: old.clone() });
                        prop_assert!(!content.contains(&old));
                    }
                }
            }
        }
    }
}

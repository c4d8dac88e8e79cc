//! The `grep` tool: regex search over file contents, ripgrep style.
//!
//! Owns: the search (regex, case, context lines), the three output modes, the glob
//! filter, skipping binary files, and the cap on what is shown.
//! Does not own: the walk's ignore rules (shared with glob, see
//! [`super::files::walk_parallel`]) or the regex engine.
//! Files are searched on one thread per core and the report is built afterwards in
//! path order, so the output does not depend on thread timing.
//! Invariant: only files under the resolved search path are searched; output never
//! exceeds [`MAX_SHOWN`] entries or [`MAX_BYTES`] bytes, and when anything is left out
//! the result says how much and how to narrow the search.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::{DirEntry, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::describe::{self, CallInfo};
use super::files::{blocking, interrupted, metadata_if_exists, not_found, walk_parallel};
use super::text::{count, cut_long_line, human_size, thousands};
use super::{Concurrency, Tool, ToolCtx, ToolError, ToolOutput, Workspace, parse_args, schema_for};

/// Matching lines (content mode) or files (other modes) shown at most.
const MAX_SHOWN: usize = 200;
/// Bytes of output at most.
const MAX_BYTES: usize = 30_000;

/// What grep reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum OutputMode {
    #[default]
    Content,
    Files,
    Count,
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    /// Regular expression searched line by line (Rust regex syntax, as in ripgrep:
    /// escape `(`, `{`, `.` etc. with `\` to match them literally).
    pattern: String,
    /// File or directory to search, relative to the workspace root. Defaults to the root.
    path: Option<String>,
    /// Only search files matching this glob, gitignore style: `*.rs` matches at any
    /// depth, `src/**/*.ts` is relative to `path`, a leading `!` excludes instead.
    glob: Option<String>,
    /// Ignore case when matching. Defaults to false.
    case_insensitive: Option<bool>,
    /// Lines to show before and after each match (content mode). Defaults to 0.
    context: Option<usize>,
    /// `content` (default): matching lines as `path:line:text`, context lines as
    /// `path-line-text`, `--` between separate groups. `files`: only the paths of
    /// files with a match. `count`: `path:count` of matching lines per file.
    output_mode: Option<OutputMode>,
}

pub struct Grep;

#[async_trait::async_trait]
impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> &'static str {
        "Search file contents with a regular expression (ripgrep syntax), line by line. \
         Searches the workspace or `path` (a file or directory), skipping binary files and \
         files ignored by .gitignore/.ignore; `glob` filters which files are searched (e.g. \
         `*.rs`). output_mode `content` (default) shows `path:line:text` with optional \
         context lines, `files` lists matching files, `count` gives matches per file. \
         Output is capped at 200 entries; narrow the pattern, path or glob to see more."
    }

    fn schema(&self) -> Value {
        schema_for::<GrepArgs>()
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }

    fn describe(&self, args: &serde_json::Map<String, Value>) -> Option<CallInfo> {
        let pattern = describe::text(args, "pattern")?;
        let mut line = format!("grep {}", describe::quoted(pattern));
        let path = describe::text(args, "path");
        if let Some(path) = path {
            line.push_str(&format!(" in {path}"));
        }
        if let Some(glob) = describe::text(args, "glob") {
            line.push_str(&format!(" ({glob})"));
        }
        Some(CallInfo::new(
            line,
            path.map(str::to_string).into_iter().collect(),
        ))
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        let args: GrepArgs = parse_args(self.name(), args)?;
        let matcher = compile(&args.pattern, args.case_insensitive.unwrap_or(false))?;
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        blocking(move || {
            let target = workspace.resolve_for_read(args.path.as_deref().unwrap_or("."))?;
            let target_display = workspace.display(&target);
            let is_dir = match metadata_if_exists(&workspace, &target, &target_display)? {
                Some(meta) => meta.is_dir(),
                None => {
                    return Err(not_found(
                        &target_display,
                        "Set path to an existing file or directory, or omit it to search the \
                         whole workspace.",
                    ));
                }
            };
            let filter = match &args.glob {
                Some(glob) => Some(file_filter(glob, &target, is_dir)?),
                None => None,
            };
            let mode = args.output_mode.unwrap_or_default();
            let search = Search {
                workspace: &workspace,
                matcher: &matcher,
                filter: filter.as_ref(),
                // Context lines only exist in content mode; elsewhere they are wasted work.
                context: match mode {
                    OutputMode::Content => args.context.unwrap_or(0),
                    OutputMode::Files | OutputMode::Count => 0,
                },
                mode,
                cancel: &cancel,
            };
            let report = search.run(&target)?;
            Ok(report.render(&args, &target_display))
        })
        .await
    }
}

fn compile(pattern: &str, case_insensitive: bool) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|error| {
            ToolError::InvalidArguments(format!(
                "`{pattern}` is not a valid regular expression: {error}\nFix the pattern \
                 (escape characters like `(`, `[`, `{{`, `.` or `*` with `\\` to match them \
                 literally) and call grep again."
            ))
        })
}

/// The `glob` argument as a filter, with patterns relative to the search directory.
fn file_filter(glob: &str, target: &Path, is_dir: bool) -> Result<Override, ToolError> {
    let base = if is_dir {
        target
    } else {
        target.parent().unwrap_or(target)
    };
    let mut builder = OverrideBuilder::new(base);
    builder
        .add(glob)
        .and_then(|builder| builder.build())
        .map_err(|error| {
            ToolError::InvalidArguments(format!(
                "`{glob}` is not a valid glob: {error}. Fix it (e.g. `*.rs` or `src/**/*.ts`) \
                 or omit glob, and call grep again."
            ))
        })
}

/// One grep call's settings.
struct Search<'a> {
    workspace: &'a Workspace,
    matcher: &'a RegexMatcher,
    filter: Option<&'a Override>,
    context: usize,
    mode: OutputMode,
    cancel: &'a CancellationToken,
}

impl Search<'_> {
    /// Searches every file in parallel, then builds the report in path order. Only the
    /// counts of the parallel pass are kept; in content mode the first files with
    /// matches are searched again for their lines until the output is full, so memory
    /// stays bounded by the cap however many files match.
    fn run(&self, target: &Path) -> Result<Report, ToolError> {
        let scan = self.scan(target)?;
        let mut report = Report::new(self.mode, self.context > 0);
        report.unreadable = scan.unreadable;
        let mut searcher = self.searcher(self.context);
        for file in scan.files {
            let sink = if self.mode == OutputMode::Content && report.room() > 0 {
                let mut sink = FileSink::new(self, report.room());
                if self
                    .search_file(&mut searcher, &file.path, &mut sink)
                    .is_err()
                {
                    report.unreadable += 1;
                    continue;
                }
                sink
            } else {
                FileSink::counted(self, &file)
            };
            if self.cancel.is_cancelled() {
                return Err(interrupted("grep"));
            }
            report.add(&self.workspace.display(&file.path), sink);
        }
        Ok(report)
    }

    /// Searches the file at `path`, opened through the workspace's root handle: a file
    /// whose directory was swapped for a link since the walk listed it is not read.
    fn search_file(
        &self,
        searcher: &mut Searcher,
        path: &Path,
        sink: &mut FileSink<'_>,
    ) -> Result<(), ()> {
        let (root, relative) = self.workspace.place(path);
        let (file, _) = root.open_file(relative).map_err(drop)?;
        searcher
            .search_file(self.matcher, &file, sink)
            .map_err(drop)
    }

    fn searcher(&self, context: usize) -> Searcher {
        SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .binary_detection(BinaryDetection::quit(0))
            .build()
    }

    /// Counts the matching lines of every file under `target`, one walker thread per
    /// core; the files worth reporting come back sorted by path.
    fn scan(&self, target: &Path) -> Result<Scan, ToolError> {
        let scan = Mutex::new(Scan::default());
        walk_parallel(target).run(|| {
            let mut searcher = self.searcher(0);
            let scan = &scan;
            Box::new(move |entry| self.scan_entry(&mut searcher, entry, scan))
        });
        if self.cancel.is_cancelled() {
            return Err(interrupted("grep"));
        }
        let mut scan = scan.into_inner().unwrap_or_else(PoisonError::into_inner);
        scan.files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Ok(scan)
    }

    fn scan_entry(
        &self,
        searcher: &mut Searcher,
        entry: Result<DirEntry, ignore::Error>,
        scan: &Mutex<Scan>,
    ) -> WalkState {
        if self.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        let lock = || scan.lock().unwrap_or_else(PoisonError::into_inner);
        let Ok(entry) = entry else {
            lock().unreadable += 1;
            return WalkState::Continue;
        };
        let path = entry.path();
        let searchable = entry.file_type().is_some_and(|kind| kind.is_file())
            && !self
                .filter
                .is_some_and(|filter| filter.matched(path, false).is_ignore());
        if !searchable {
            return WalkState::Continue;
        }
        // No room: the sink only counts.
        let mut sink = FileSink::new(self, 0);
        if self.search_file(searcher, path, &mut sink).is_err() {
            lock().unreadable += 1;
        } else if sink.binary || sink.matched_lines > 0 {
            lock().files.push(Scanned {
                path: entry.into_path(),
                matched_lines: sink.matched_lines,
                binary: sink.binary,
            });
        }
        WalkState::Continue
    }
}

/// What the parallel pass found.
#[derive(Default)]
struct Scan {
    /// Files with matches or binary content, sorted by path once the walk is done.
    files: Vec<Scanned>,
    unreadable: usize,
}

/// One file the report mentions.
struct Scanned {
    path: PathBuf,
    matched_lines: u64,
    binary: bool,
}

/// A line kept for content mode.
#[derive(Debug)]
enum Hit {
    Match { line: u64, text: String },
    Context { line: u64, text: String },
    Break,
}

/// What one file's search produced.
struct FileSink<'a> {
    mode: OutputMode,
    context: usize,
    /// Matches this file may still keep (the rest are only counted).
    room: usize,
    cancel: &'a CancellationToken,
    hits: Vec<Hit>,
    kept_matches: u64,
    kept_bytes: usize,
    /// After-context lines still owed to the last kept match.
    trailing_context: usize,
    matched_lines: u64,
    binary: bool,
}

impl<'a> FileSink<'a> {
    /// A sink that keeps only what was counted in the parallel pass.
    fn counted(search: &Search<'a>, file: &Scanned) -> Self {
        Self {
            matched_lines: file.matched_lines,
            binary: file.binary,
            ..Self::new(search, 0)
        }
    }

    fn new(search: &Search<'a>, room: usize) -> Self {
        Self {
            mode: search.mode,
            context: search.context,
            room,
            cancel: search.cancel,
            hits: Vec::new(),
            kept_matches: 0,
            kept_bytes: 0,
            trailing_context: 0,
            matched_lines: 0,
            binary: false,
        }
    }

    /// Whether a new group (a match and its context) may still be kept.
    fn keeping(&self) -> bool {
        self.mode == OutputMode::Content
            && self.kept_matches < self.room as u64
            && self.kept_bytes < MAX_BYTES
    }

    fn keep(&mut self, hit: Hit) {
        if let Hit::Match { text, .. } | Hit::Context { text, .. } = &hit {
            self.kept_bytes += text.len();
        }
        self.hits.push(hit);
    }
}

fn line_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    cut_long_line(text, text.chars().count())
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matched_lines += 1;
        if self.keeping() {
            let hit = Hit::Match {
                line: found.line_number().unwrap_or(0),
                text: line_text(found.bytes()),
            };
            self.keep(hit);
            self.kept_matches += 1;
            self.trailing_context = self.context;
        } else {
            self.trailing_context = 0;
        }
        // One match is enough to list a file.
        Ok(self.mode != OutputMode::Files && !self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        // After-context finishes the group of a kept match even once the budget is
        // spent; other context only opens a group that can still be kept.
        let owed = *context.kind() == SinkContextKind::After && self.trailing_context > 0;
        if owed {
            self.trailing_context -= 1;
        }
        if owed || self.keeping() {
            let hit = Hit::Context {
                line: context.line_number().unwrap_or(0),
                text: line_text(context.bytes()),
            };
            self.keep(hit);
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if self.keeping() {
            self.hits.push(Hit::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Everything found so far and what is shown of it.
struct Report {
    mode: OutputMode,
    with_context: bool,
    out: String,
    shown: usize,
    matched_lines: u64,
    matched_files: usize,
    binary_skipped: usize,
    unreadable: usize,
    capped: bool,
}

impl Report {
    fn new(mode: OutputMode, with_context: bool) -> Self {
        Self {
            mode,
            with_context,
            out: String::new(),
            shown: 0,
            matched_lines: 0,
            matched_files: 0,
            binary_skipped: 0,
            unreadable: 0,
            capped: false,
        }
    }

    /// Matching lines a file may still keep in content mode.
    fn room(&self) -> usize {
        if self.capped {
            0
        } else {
            MAX_SHOWN.saturating_sub(self.shown)
        }
    }

    fn add(&mut self, path: &str, sink: FileSink<'_>) {
        if sink.binary {
            self.binary_skipped += 1;
            return;
        }
        if sink.matched_lines == 0 {
            return;
        }
        self.matched_files += 1;
        self.matched_lines += sink.matched_lines;
        match self.mode {
            OutputMode::Content => {
                let left_out = sink.kept_matches < sink.matched_lines;
                self.add_lines(path, sink.hits);
                // Matches the sink only counted are missing from the output.
                self.capped |= left_out;
            }
            OutputMode::Files => self.add_entry(path.to_string()),
            OutputMode::Count => self.add_entry(format!("{path}:{}", sink.matched_lines)),
        }
    }

    fn add_lines(&mut self, path: &str, hits: Vec<Hit>) {
        if self.with_context && !self.out.is_empty() && !self.capped {
            self.push_line("--".to_string());
        }
        for hit in hits {
            let (line, is_match) = match hit {
                Hit::Match { line, text } => (format!("{path}:{line}:{text}"), true),
                Hit::Context { line, text } => (format!("{path}-{line}-{text}"), false),
                Hit::Break => ("--".to_string(), false),
            };
            if is_match && self.shown >= MAX_SHOWN {
                self.capped = true;
            }
            if !self.push_line(line) {
                return;
            }
            self.shown += usize::from(is_match);
        }
    }

    fn add_entry(&mut self, line: String) {
        if self.shown >= MAX_SHOWN {
            self.capped = true;
        }
        if self.push_line(line) {
            self.shown += 1;
        }
    }

    /// Appends a line unless the output is capped or the line would pass the byte cap.
    fn push_line(&mut self, line: String) -> bool {
        if self.capped || self.out.len() + line.len() + 1 > MAX_BYTES {
            self.capped = true;
            return false;
        }
        self.out.push_str(&line);
        self.out.push('\n');
        true
    }

    fn render(mut self, args: &GrepArgs, target: &str) -> ToolOutput {
        let pattern = &args.pattern;
        let lines = count(self.matched_lines, "matching line");
        let files = count(self.matched_files as u64, "file");
        let summary = match self.mode {
            OutputMode::Files => format!("grep {pattern}: {files}"),
            OutputMode::Content | OutputMode::Count => {
                format!("grep {pattern}: {lines} in {files}")
            }
        };
        if self.matched_files == 0 {
            self.out = no_match_message(args, target);
        }
        if self.capped {
            let shown = match self.mode {
                OutputMode::Content => format!(
                    "showing {} of {lines} ({files})",
                    thousands(self.shown as u64)
                ),
                OutputMode::Files | OutputMode::Count => format!(
                    "showing {} of {files} with matches",
                    thousands(self.shown as u64)
                ),
            };
            self.out.push_str(&format!(
                "[{shown}; output is capped at {MAX_SHOWN} entries / {}. Narrow the search with a \
                 more specific pattern, a path, or a glob such as `*.rs`; output_mode `files` or \
                 `count` gives an overview]\n",
                human_size(MAX_BYTES as u64)
            ));
        }
        for (skipped, what) in [
            (self.binary_skipped, "binary file"),
            (self.unreadable, "unreadable file"),
        ] {
            if skipped > 0 {
                self.out
                    .push_str(&format!("[{} skipped]\n", count(skipped as u64, what)));
            }
        }
        let content = self.out.trim_end_matches('\n').to_string();
        ToolOutput {
            content,
            summary,
            checks: None,
        }
    }
}

fn no_match_message(args: &GrepArgs, target: &str) -> String {
    let place = if target == "." {
        "the workspace".to_string()
    } else {
        format!("`{target}`")
    };
    let mut message = format!("No matches for `{}` in {place}", args.pattern);
    if let Some(glob) = &args.glob {
        message.push_str(&format!(" (only files matching `{glob}` were searched)"));
    }
    message.push_str(".\n");
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::{Fixture, invalid, refused};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn sample() -> Fixture {
        let fx = Fixture::new();
        fx.file(
            "src/main.rs",
            "fn main() {\n    let todo = 1;\n    helper();\n}\n",
        );
        fx.file("src/lib.rs", "// TODO: docs\npub fn helper() {}\n");
        fx.file("README.md", "todo list\n");
        fx
    }

    #[tokio::test]
    async fn content_mode_lists_path_line_and_text() {
        let fx = sample();
        let output = fx.call(&Grep, json!({"pattern": "todo"})).await.unwrap();
        assert_eq!(
            output,
            ToolOutput {
                content: "README.md:1:todo list\nsrc/main.rs:2:    let todo = 1;".into(),
                summary: "grep todo: 2 matching lines in 2 files".into(),
                checks: None,
            }
        );
    }

    #[tokio::test]
    async fn case_insensitive_matches_any_case() {
        let fx = sample();
        let content = fx
            .ok(&Grep, json!({"pattern": "todo", "case_insensitive": true}))
            .await;
        assert_eq!(
            content,
            "README.md:1:todo list\nsrc/lib.rs:1:// TODO: docs\nsrc/main.rs:2:    let todo = 1;"
        );
    }

    #[tokio::test]
    async fn context_lines_use_dashes_and_groups_are_separated() {
        let fx = Fixture::new();
        let body: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        fx.file(
            "a.txt",
            body.replace("l3\n", "hit\n").replace("l10\n", "hit\n"),
        );
        fx.file("b.txt", "x\nhit\n");
        let content = fx.ok(&Grep, json!({"pattern": "hit", "context": 1})).await;
        assert_eq!(
            content,
            "a.txt-2-l2\na.txt:3:hit\na.txt-4-l4\n--\na.txt-9-l9\na.txt:10:hit\na.txt-11-l11\n\
             --\nb.txt-1-x\nb.txt:2:hit"
        );
    }

    #[tokio::test]
    async fn files_and_count_modes() {
        let fx = sample();
        fx.file("src/more.rs", "helper\nhelper\nhelper\n");
        let files = fx
            .ok(&Grep, json!({"pattern": "helper", "output_mode": "files"}))
            .await;
        assert_eq!(files, "src/lib.rs\nsrc/main.rs\nsrc/more.rs");
        let counts = fx
            .ok(&Grep, json!({"pattern": "helper", "output_mode": "count"}))
            .await;
        assert_eq!(counts, "src/lib.rs:1\nsrc/main.rs:1\nsrc/more.rs:3");
    }

    #[tokio::test]
    async fn glob_filters_files_and_path_narrows() {
        let fx = sample();
        let content = fx
            .ok(
                &Grep,
                json!({"pattern": "todo", "glob": "*.md", "case_insensitive": true}),
            )
            .await;
        assert_eq!(content, "README.md:1:todo list");
        let content = fx
            .ok(&Grep, json!({"pattern": "(?i)todo", "glob": "!*.md"}))
            .await;
        assert_eq!(
            content,
            "src/lib.rs:1:// TODO: docs\nsrc/main.rs:2:    let todo = 1;"
        );
        let content = fx
            .ok(&Grep, json!({"pattern": "fn", "path": "src/lib.rs"}))
            .await;
        assert_eq!(content, "src/lib.rs:2:pub fn helper() {}");
    }

    #[tokio::test]
    async fn gitignored_and_binary_files_are_skipped() {
        let fx = sample();
        fx.file(".gitignore", "build/\n");
        fx.file("build/out.rs", "todo\n");
        fx.file("data.bin", b"todo\0\x01\x02");
        fx.file(".git/HEAD", "todo\n");
        let content = fx.ok(&Grep, json!({"pattern": "todo"})).await;
        assert_eq!(
            content,
            "README.md:1:todo list\nsrc/main.rs:2:    let todo = 1;\n[1 binary file skipped]"
        );
    }

    #[tokio::test]
    async fn an_explicit_file_is_searched_even_if_ignored() {
        let fx = sample();
        fx.file(".gitignore", "*.log\n");
        fx.file("debug.log", "todo: ship\n");
        assert_eq!(
            fx.ok(&Grep, json!({"pattern": "todo"}))
                .await
                .lines()
                .count(),
            2
        );
        let content = fx
            .ok(&Grep, json!({"pattern": "todo", "path": "debug.log"}))
            .await;
        assert_eq!(content, "debug.log:1:todo: ship");
    }

    #[tokio::test]
    async fn output_is_capped_with_a_hint() {
        let fx = Fixture::new();
        fx.file("a.txt", "match\n".repeat(150));
        fx.file("b.txt", "match\n".repeat(150));
        let output = fx.call(&Grep, json!({"pattern": "match"})).await.unwrap();
        let lines: Vec<&str> = output.content.lines().collect();
        assert_eq!(lines.len(), MAX_SHOWN + 1);
        assert_eq!(lines[MAX_SHOWN - 1], "b.txt:50:match");
        let footer = lines[MAX_SHOWN];
        assert!(
            footer.starts_with("[showing 200 of 300 matching lines (2 files); output is capped"),
            "{footer}"
        );
        assert!(footer.contains("Narrow the search"), "{footer}");
        assert_eq!(output.summary, "grep match: 300 matching lines in 2 files");
    }

    #[tokio::test]
    async fn output_is_capped_by_bytes() {
        let fx = Fixture::new();
        let line = format!("match {}\n", "x".repeat(1000));
        fx.file("a.txt", line.repeat(100));
        let content = fx.ok(&Grep, json!({"pattern": "match"})).await;
        assert!(content.len() <= MAX_BYTES + 400, "{}", content.len());
        assert!(
            content.contains("[showing 29 of 100 matching lines"),
            "{content}"
        );
    }

    #[tokio::test]
    async fn files_mode_is_capped_too() {
        let fx = Fixture::new();
        for i in 0..MAX_SHOWN + 3 {
            fx.file(&format!("f{i:03}.txt"), "hit\n");
        }
        let content = fx
            .ok(&Grep, json!({"pattern": "hit", "output_mode": "files"}))
            .await;
        assert!(
            content.contains("[showing 200 of 203 files with matches"),
            "{content}"
        );
    }

    /// Files created in an order unlike the walk's (each directory's entries by name,
    /// depth first); returns them in the walk's order.
    fn nested_tree(fx: &Fixture) -> [&'static str; 6] {
        for name in [
            "b0.txt",
            "a.txt",
            "b/a.txt",
            "a-b.txt",
            "a/z/deep.txt",
            "a/b.txt",
        ] {
            fx.file(name, "hit\n");
        }
        [
            "a/b.txt",
            "a/z/deep.txt",
            "a-b.txt",
            "a.txt",
            "b/a.txt",
            "b0.txt",
        ]
    }

    #[tokio::test]
    async fn files_come_in_path_order_whatever_the_threads_do() {
        let fx = Fixture::new();
        let expected = nested_tree(&fx);
        for _ in 0..5 {
            let files = fx
                .ok(&Grep, json!({"pattern": "hit", "output_mode": "files"}))
                .await;
            assert_eq!(files.lines().collect::<Vec<_>>(), expected);
        }
    }

    #[tokio::test]
    async fn the_cap_keeps_the_first_files_in_path_order() {
        let fx = Fixture::new();
        for i in (0..MAX_SHOWN + 50).rev() {
            fx.file(&format!("d{}/f{i:03}.txt", i % 7), "hit\nhit\n");
        }
        let output = fx.call(&Grep, json!({"pattern": "hit"})).await.unwrap();
        let mut expected: Vec<String> = (0..MAX_SHOWN + 50)
            .map(|i| format!("d{}/f{i:03}.txt", i % 7))
            .collect();
        expected.sort();
        let shown: Vec<String> = expected
            .iter()
            .flat_map(|path| [format!("{path}:1:hit"), format!("{path}:2:hit")])
            .take(MAX_SHOWN)
            .collect();
        let lines: Vec<&str> = output.content.lines().collect();
        assert_eq!(lines[..MAX_SHOWN], shown);
        assert!(
            lines[MAX_SHOWN].starts_with("[showing 200 of 500 matching lines (250 files)"),
            "{}",
            lines[MAX_SHOWN]
        );
        assert_eq!(output.summary, "grep hit: 500 matching lines in 250 files");
    }

    #[tokio::test]
    async fn a_cancelled_search_stops() {
        let fx = sample();
        fx.ctx.cancel.cancel();
        let error = fx
            .call(&Grep, json!({"pattern": "todo"}))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("interrupted"), "{error}");
    }

    #[tokio::test]
    async fn no_match_says_so() {
        let fx = sample();
        let content = fx
            .ok(&Grep, json!({"pattern": "absent", "glob": "*.rs"}))
            .await;
        assert_eq!(
            content,
            "No matches for `absent` in the workspace (only files matching `*.rs` were searched)."
        );
    }

    #[tokio::test]
    async fn invalid_regex_quotes_the_error() {
        let fx = sample();
        let message = invalid(fx.call(&Grep, json!({"pattern": "fn main("})).await);
        assert!(
            message.starts_with("`fn main(` is not a valid regular expression:"),
            "{message}"
        );
        assert!(message.contains("unclosed group"), "{message}");
    }

    #[tokio::test]
    async fn invalid_glob_and_bad_paths_are_reported() {
        let fx = sample();
        let message = invalid(fx.call(&Grep, json!({"pattern": "x", "glob": "[z-"})).await);
        assert!(message.contains("not a valid glob"), "{message}");
        let message = invalid(
            fx.call(&Grep, json!({"pattern": "x", "path": "nope"}))
                .await,
        );
        assert!(message.contains("does not exist"), "{message}");
        let message = refused(
            fx.call(&Grep, json!({"pattern": "x", "path": "/etc"}))
                .await,
        );
        assert!(message.contains("outside the workspace"), "{message}");
        let message = invalid(
            fx.call(&Grep, json!({"pattern": "x", "output_mode": "lines"}))
                .await,
        );
        assert!(
            message.contains("output_mode") || message.contains("lines"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn long_matching_lines_are_cut() {
        let fx = Fixture::new();
        fx.file("min.js", format!("needle{}\n", "y".repeat(5000)));
        let content = fx.ok(&Grep, json!({"pattern": "needle"})).await;
        assert!(
            content.ends_with("… [3,006 chars cut from this line]"),
            "{content}"
        );
    }
}

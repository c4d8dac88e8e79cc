//! The `glob` tool: find files by name pattern, newest first.
//!
//! Owns: pattern matching relative to the search directory, the walk that respects
//! ignore files, the newest-first order and the result cap.
//! Does not own: reading files, or the ignore rules themselves (the `ignore` crate).
//! Invariant: only regular files under the resolved search directory are listed, never
//! anything inside `.git/`, shown relative to the workspace root.

use std::path::Path;
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::describe::{self, CallInfo};
use super::files::{blocking, interrupted, metadata_if_exists, not_found, walk};
use super::text::{count, thousands};
use super::{Concurrency, Tool, ToolCtx, ToolError, ToolOutput, Workspace, parse_args, schema_for};

/// Files listed at most; the rest are counted.
const MAX_RESULTS: usize = 200;

/// Arguments of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    /// Glob pattern matched against paths relative to `path`, e.g. `**/*.rs` or
    /// `src/**/mod.rs`. `*` does not cross `/`; `**` matches any number of directories.
    pattern: String,
    /// Directory to search in, relative to the workspace root. Defaults to the root.
    path: Option<String>,
}

pub struct Glob;

#[async_trait::async_trait]
impl Tool for Glob {
    fn name(&self) -> &'static str {
        "glob"
    }

    fn description(&self) -> &'static str {
        "Find files whose path matches a glob pattern (e.g. `**/*.rs`, `src/**/test_*.py`), \
         newest first. Patterns are relative to `path` (default: the workspace root); `*` \
         stays within one directory, `**/` spans directories. Files ignored by .gitignore or \
         .ignore are skipped; hidden files are included, `.git/` is not. Use grep to search \
         file contents."
    }

    fn schema(&self) -> Value {
        schema_for::<GlobArgs>()
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }

    fn describe(&self, args: &serde_json::Map<String, Value>) -> Option<CallInfo> {
        let pattern = describe::text(args, "pattern")?;
        let path = describe::text(args, "path");
        let line = match path {
            Some(path) => format!("glob {pattern} in {path}"),
            None => format!("glob {pattern}"),
        };
        Some(CallInfo::new(
            line,
            path.map(str::to_string).into_iter().collect(),
        ))
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        let args: GlobArgs = parse_args(self.name(), args)?;
        let matcher = compile(&args.pattern)?;
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        blocking(move || {
            let base = search_dir(&workspace, args.path.as_deref())?;
            let found = find(&workspace, &base, &matcher, &cancel)?;
            Ok(render(&args.pattern, &workspace.display(&base), found))
        })
        .await
    }
}

fn compile(pattern: &str) -> Result<GlobMatcher, ToolError> {
    // The walk yields paths relative to the search dir without a `./` prefix.
    let pattern = pattern.trim_start_matches("./");
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|error| {
            ToolError::InvalidArguments(format!(
                "`{pattern}` is not a valid glob pattern: {error}. Fix the pattern (e.g. \
                 `**/*.rs`) and call glob again."
            ))
        })
}

/// The resolved directory to search; a file or a missing path is an error.
fn search_dir(workspace: &Workspace, path: Option<&str>) -> Result<std::path::PathBuf, ToolError> {
    let base = workspace.resolve(path.unwrap_or("."))?;
    let display = workspace.display(&base);
    match metadata_if_exists(workspace, &base, &display)? {
        Some(meta) if meta.is_dir() => Ok(base),
        Some(_) => Err(ToolError::InvalidArguments(format!(
            "`{display}` is a file, not a directory; glob searches inside a directory. Set \
             path to its directory, or omit path to search the whole workspace."
        ))),
        None => Err(not_found(
            &display,
            "Set path to an existing directory, or omit it to search the whole workspace.",
        )),
    }
}

/// Matching files, newest first.
struct Found {
    /// Root-relative paths, newest first, at most [`MAX_RESULTS`].
    shown: Vec<String>,
    total: usize,
    /// Entries the walk could not read (permissions, races).
    unreadable: usize,
}

fn find(
    workspace: &Workspace,
    base: &Path,
    matcher: &GlobMatcher,
    cancel: &CancellationToken,
) -> Result<Found, ToolError> {
    let mut matches: Vec<(SystemTime, String)> = Vec::new();
    let mut unreadable = 0;
    for entry in walk(base) {
        if cancel.is_cancelled() {
            return Err(interrupted("glob"));
        }
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(base) else {
            continue;
        };
        if !matcher.is_match(relative) {
            continue;
        }
        let modified = entry
            .metadata()
            .ok()
            .and_then(|meta| meta.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        matches.push((modified, workspace.display(entry.path())));
    }
    // Newest first; equal times by path so the order is stable.
    matches.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = matches.len();
    let shown = matches
        .into_iter()
        .take(MAX_RESULTS)
        .map(|(_, path)| path)
        .collect();
    Ok(Found {
        shown,
        total,
        unreadable,
    })
}

fn render(pattern: &str, base: &str, found: Found) -> ToolOutput {
    let place = if base == "." {
        "the workspace".to_string()
    } else {
        format!("`{base}`")
    };
    let summary = format!("glob {pattern}: {}", count(found.total as u64, "file"));
    let mut content = if found.total == 0 {
        let mut message = format!("No files match `{pattern}` in {place}.");
        if !pattern.contains('/') && !pattern.starts_with("**") {
            message.push_str(&format!(
                " `*` does not cross directories; to search subdirectories too, use \
                 `**/{pattern}`."
            ));
        }
        message
    } else {
        found.shown.join("\n")
    };
    if found.total > found.shown.len() {
        content.push_str(&format!(
            "\n[… {} more matching files not shown (listed newest first); narrow the pattern \
             or set path to a subdirectory]",
            thousands((found.total - found.shown.len()) as u64)
        ));
    }
    if found.unreadable > 0 {
        content.push_str(&format!(
            "\n[{} could not be read and were skipped]",
            count(found.unreadable as u64, "path")
        ));
    }
    ToolOutput {
        content,
        summary,
        checks: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::{Fixture, invalid, refused};
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::time::Duration;

    fn set_age(fx: &Fixture, relative: &str, seconds_ago: u64) {
        let time = SystemTime::now() - Duration::from_secs(seconds_ago);
        let file = std::fs::File::options()
            .write(true)
            .open(fx.path(relative))
            .unwrap();
        file.set_modified(time).unwrap();
    }

    #[tokio::test]
    async fn lists_matches_newest_first() {
        let fx = Fixture::new();
        for (path, age) in [("old.rs", 300), ("src/new.rs", 10), ("src/mid.rs", 100)] {
            fx.file(path, "");
            set_age(&fx, path, age);
        }
        fx.file("notes.md", "");
        let output = fx.call(&Glob, json!({"pattern": "**/*.rs"})).await.unwrap();
        assert_eq!(
            output,
            ToolOutput {
                content: "src/new.rs\nsrc/mid.rs\nold.rs".into(),
                summary: "glob **/*.rs: 3 files".into(),
                checks: None,
            }
        );
    }

    #[tokio::test]
    async fn star_stays_in_one_directory() {
        let fx = Fixture::new();
        fx.file("top.rs", "");
        fx.file("src/deep.rs", "");
        assert_eq!(fx.ok(&Glob, json!({"pattern": "*.rs"})).await, "top.rs");
    }

    #[tokio::test]
    async fn path_sets_the_search_directory() {
        let fx = Fixture::new();
        fx.file("src/a.rs", "");
        fx.file("b.rs", "");
        let content = fx
            .ok(&Glob, json!({"pattern": "*.rs", "path": "src"}))
            .await;
        assert_eq!(content, "src/a.rs");
    }

    #[tokio::test]
    async fn gitignore_is_respected_outside_a_git_repo_and_dot_git_is_skipped() {
        let fx = Fixture::new();
        fx.file(".gitignore", "target/\n*.log\n");
        fx.file(".ignore", "secret.txt\n");
        fx.file("target/out.txt", "");
        fx.file("debug.log", "");
        fx.file("secret.txt", "");
        fx.file(".github/workflow.yml", "");
        fx.file(".git/config", "");
        fx.file("keep.txt", "");
        let content = fx.ok(&Glob, json!({"pattern": "**/*"})).await;
        let mut listed: Vec<&str> = content.lines().collect();
        listed.sort_unstable();
        assert_eq!(
            listed,
            vec![".github/workflow.yml", ".gitignore", ".ignore", "keep.txt"]
        );
    }

    #[tokio::test]
    async fn results_are_capped_with_a_count() {
        let fx = Fixture::new();
        for i in 0..MAX_RESULTS + 5 {
            fx.file(&format!("f{i:03}.txt"), "");
        }
        let content = fx.ok(&Glob, json!({"pattern": "*.txt"})).await;
        assert_eq!(content.lines().count(), MAX_RESULTS + 1);
        assert!(
            content.ends_with("[… 5 more matching files not shown (listed newest first); narrow the pattern or set path to a subdirectory]"),
            "{content}"
        );
    }

    #[tokio::test]
    async fn no_match_says_so_and_hints_at_double_star() {
        let fx = Fixture::new();
        fx.file("src/a.rs", "");
        let output = fx.call(&Glob, json!({"pattern": "*.rs"})).await.unwrap();
        assert_eq!(
            output.content,
            "No files match `*.rs` in the workspace. `*` does not cross directories; to search \
             subdirectories too, use `**/*.rs`."
        );
        assert_eq!(output.summary, "glob *.rs: 0 files");
    }

    #[tokio::test]
    async fn invalid_patterns_and_paths_are_reported() {
        let fx = Fixture::new();
        fx.file("a.txt", "");
        let message = invalid(fx.call(&Glob, json!({"pattern": "[a-"})).await);
        assert!(message.contains("not a valid glob pattern"), "{message}");
        let message = invalid(
            fx.call(&Glob, json!({"pattern": "*", "path": "a.txt"}))
                .await,
        );
        assert!(message.contains("is a file, not a directory"), "{message}");
        let message = invalid(
            fx.call(&Glob, json!({"pattern": "*", "path": "nope"}))
                .await,
        );
        assert!(message.contains("does not exist"), "{message}");
        let message = refused(fx.call(&Glob, json!({"pattern": "*", "path": ".."})).await);
        assert!(message.contains("outside the workspace"), "{message}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlinked_directories_outside_are_not_walked() {
        let fx = Fixture::new();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("leak.txt"), "").unwrap();
        std::os::unix::fs::symlink(outside.path(), fx.path("out")).unwrap();
        fx.file("in.txt", "");
        assert_eq!(fx.ok(&Glob, json!({"pattern": "**/*.txt"})).await, "in.txt");
    }

    #[tokio::test]
    async fn a_cancelled_call_stops() {
        let fx = Fixture::new();
        fx.file("a.txt", "");
        fx.ctx.cancel.cancel();
        let result = fx.call(&Glob, json!({"pattern": "*"})).await;
        assert!(matches!(result, Err(ToolError::Failed(m)) if m.contains("interrupted")));
    }
}

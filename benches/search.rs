//! Search: duet's `grep` tool (run through the tool registry, as the agent runs it)
//! over a large tree against the `rg` binary with equivalent flags, on three patterns.
//!
//! The tree is generated (deterministic, plain text, no ignore files) unless
//! `DUET_BENCH_SEARCH_TREE` names an existing directory, e.g. `~/.cargo/registry/src`.
//! Its size comes from `DUET_BENCH_SEARCH_FILES` (default 10,000) and
//! `DUET_BENCH_SEARCH_MB` (default 100); the issue's full size is 50,000 files / 500 MB.
//! Without `rg` on the PATH the bench prints a skip line and measures nothing.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use duet::lint::{LintConfig, Linter};
use duet::policy::{ApprovalMode, ModeApprover, Policy, PolicyConfig};
use duet::shell::{Shell, ShellConfig};
use duet::tools::{OutputSink, ReadLedger, Registry, Tool, ToolCtx, Workspace};
use serde_json::json;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use support::Goal;

const DEFAULT_FILES: usize = 10_000;
const DEFAULT_MEGABYTES: usize = 100;
/// Files per generated directory.
const FILES_PER_DIR: usize = 100;
/// One generated file in this many holds the rare literal.
const RARE_EVERY: usize = 1_000;
const RARE_LITERAL: &str = "quixotic_sentinel_7";

/// A pattern searched by both sides.
struct Pattern {
    label: &'static str,
    regex: &'static str,
    case_insensitive: bool,
}

const PATTERNS: [Pattern; 3] = [
    Pattern {
        label: "rare literal",
        regex: RARE_LITERAL,
        case_insensitive: false,
    },
    Pattern {
        label: "regex",
        regex: r"fn [a-z]+_handler\(\w+",
        case_insensitive: false,
    },
    Pattern {
        label: "case-insensitive common word",
        regex: COMMON_WORD[0],
        case_insensitive: true,
    },
];

/// Words of the generated text: common English and code-ish tokens.
const WORDS: [&str; 21] = [
    "the", "value", "of", "let", "return", "self", "config", "and", "index", "buffer", "to",
    "match", "path", "is", "state", "fn", "request", "a", "result", "count", "if",
];
/// The word the case-insensitive pattern looks for, in the cases it appears in.
const COMMON_WORD: [&str; 3] = ["error", "Error", "ERROR"];
/// One generated line in this many holds the common word.
const COMMON_EVERY: u64 = 20;

fn main() {
    let Some(rg) = ripgrep() else {
        println!(
            "summary: search: skipped, `rg` is not installed (install it with `cargo install \
             ripgrep` or `apt-get install ripgrep`)"
        );
        return;
    };
    let generated;
    let root = match std::env::var_os("DUET_BENCH_SEARCH_TREE") {
        Some(tree) => PathBuf::from(tree),
        None => {
            generated = tempfile::tempdir().unwrap_or_else(|error| panic!("temp dir: {error}"));
            let files = env_size("DUET_BENCH_SEARCH_FILES", DEFAULT_FILES);
            let megabytes = env_size("DUET_BENCH_SEARCH_MB", DEFAULT_MEGABYTES);
            generate_tree(generated.path(), files, megabytes << 20);
            generated.path().to_path_buf()
        }
    };
    let runtime = Runtime::new().unwrap_or_else(|error| panic!("tokio runtime: {error}"));
    let ctx = tool_ctx(&root);
    let grep = Registry::core()
        .get("grep")
        .unwrap_or_else(|| panic!("the registry has no grep tool"));
    let mut criterion = support::criterion();
    for pattern in &PATTERNS {
        let duet = || runtime.block_on(run_grep(grep.as_ref(), &ctx, pattern));
        let baseline = || run_rg(&rg, &root, pattern);
        assert_same_matches(pattern, &duet(), &baseline());
        support::compare(
            &mut criterion,
            &format!("search: {} `{}`", pattern.label, pattern.regex),
            Goal::SlowerBy(1.2),
            duet,
            baseline,
        );
    }
    criterion.final_summary();
}

/// The `rg` binary on the PATH, if it runs.
fn ripgrep() -> Option<PathBuf> {
    let rg = PathBuf::from("rg");
    let runs = Command::new(&rg)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    runs.then_some(rg)
}

fn env_size(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|error| panic!("{name}={value}: {error}")),
        Err(_) => default,
    }
}

/// Writes `files` text files of about `bytes / files` bytes each under `root`, in
/// directories of `FILES_PER_DIR`. The content depends only on the file's index.
fn generate_tree(root: &Path, files: usize, bytes: usize) {
    let file_bytes = bytes / files.max(1);
    for index in 0..files {
        let dir = root.join(format!("d{:03}", index / FILES_PER_DIR));
        if index % FILES_PER_DIR == 0 {
            std::fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("{dir:?}: {error}"));
        }
        let path = dir.join(format!("f{index:05}.rs"));
        std::fs::write(&path, file_text(index, file_bytes))
            .unwrap_or_else(|error| panic!("{path:?}: {error}"));
    }
}

/// About `bytes` bytes of lines of pseudo-random words, with a handler definition now
/// and then, the common word in one line of `COMMON_EVERY` and the rare literal in one
/// file of `RARE_EVERY`.
fn file_text(index: usize, bytes: usize) -> String {
    let mut state = (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        // xorshift64: cheap, deterministic, good enough to vary the text.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut text = String::with_capacity(bytes + 128);
    let mut line = 0;
    while text.len() < bytes {
        line += 1;
        if line % 40 == 0 {
            let word = WORDS[(next() % WORDS.len() as u64) as usize];
            text.push_str(&format!("pub fn {word}_handler(request: u64) {{}}\n"));
            continue;
        }
        if index.is_multiple_of(RARE_EVERY) && line == 7 {
            text.push_str(&format!("// {RARE_LITERAL}\n"));
        }
        let words = 6 + next() % 8;
        for word in 0..words {
            if word > 0 {
                text.push(' ');
            }
            text.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
        }
        if next() % COMMON_EVERY == 0 {
            text.push(' ');
            text.push_str(COMMON_WORD[(next() % COMMON_WORD.len() as u64) as usize]);
        }
        text.push('\n');
    }
    text
}

/// A tool context whose workspace is `root`; grep uses only the workspace and the
/// cancellation token.
fn tool_ctx(root: &Path) -> ToolCtx {
    let workspace = Workspace::new(root).unwrap_or_else(|error| panic!("{root:?}: {error}"));
    let root = workspace.root().to_path_buf();
    ToolCtx {
        workspace: Arc::new(workspace),
        ledger: Arc::new(ReadLedger::default()),
        approver: Arc::new(ModeApprover::new(
            ApprovalMode::ReadOnly,
            Policy::new(&root, PolicyConfig::default()),
        )),
        shell: Arc::new(Shell::new(&root, ShellConfig::default())),
        linter: Arc::new(Linter::new(&root, LintConfig::default())),
        output: OutputSink::default(),
        keyboards: Default::default(),
        call_id: "bench".into(),
        cancel: CancellationToken::new(),
    }
}

/// duet's side: the grep tool in content mode; the number of matching lines.
async fn run_grep(grep: &dyn Tool, ctx: &ToolCtx, pattern: &Pattern) -> u64 {
    let args = json!({
        "pattern": pattern.regex,
        "case_insensitive": pattern.case_insensitive,
    });
    match grep.run(args, ctx).await {
        Ok(output) => matching_lines(&output.summary),
        Err(error) => panic!("grep failed: {error}"),
    }
}

/// The count in a summary like "grep x: 1,234 matching lines in 5 files" (0 when
/// nothing matched).
fn matching_lines(summary: &str) -> u64 {
    summary
        .split_once(": ")
        .and_then(|(_, counts)| counts.split_once(" matching line"))
        .map(|(count, _)| count.replace(',', ""))
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("unexpected grep summary: {summary}"))
}

/// The baseline: `rg` with the tool's settings (hidden files searched but not `.git/`,
/// ignore files honoured outside git repositories, line numbers, no color). Its
/// output goes to a pipe: rg stops at the first match when it sees /dev/null. The
/// number of output lines, which are the matching lines.
fn run_rg(rg: &Path, root: &Path, pattern: &Pattern) -> u64 {
    let mut command = Command::new(rg);
    command
        .current_dir(root)
        .args([
            "--no-config",
            "--hidden",
            "--glob",
            "!.git",
            "--no-require-git",
        ])
        .args(["--line-number", "--no-heading", "--color", "never"]);
    if pattern.case_insensitive {
        command.arg("--ignore-case");
    }
    let output = command
        .args(["--regexp", pattern.regex])
        .output()
        .unwrap_or_else(|error| panic!("could not run rg: {error}"));
    // 1: no match.
    assert!(
        output.status.code().is_some_and(|code| code <= 1),
        "rg failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout.iter().filter(|&&byte| byte == b'\n').count() as u64
}

/// Both sides must find the same lines, or the comparison means nothing.
fn assert_same_matches(pattern: &Pattern, duet: &u64, rg: &u64) {
    assert_eq!(
        duet, rg,
        "grep and rg disagree on the matching lines of `{}`",
        pattern.regex
    );
    println!(
        "search `{}`: {duet} matching lines on both sides",
        pattern.regex
    );
}

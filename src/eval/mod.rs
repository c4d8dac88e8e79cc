//! `duet eval CASES.jsonl`: runs each case with `duet exec --done` in a throwaway copy
//! of its repository and scores it.
//!
//! Owns: the subcommand's flags, running the cases (up to `--jobs` at once, each a
//! child `duet` process, so cases are isolated from each other and from this one),
//! and writing the table and the JSON results.
//! Does not own: the case format ([`cases`]), one case's run ([`run`]), its verdict
//! ([`score`]), or the agent: a case's run is `duet exec`, configured like any other
//! (the environment and config file, plus the global flags `duet eval` was given).
//! Invariant: the results hold one entry per case, in the file's order, whatever
//! happened to the case; the JSON is written before the table is printed.

pub mod cases;
pub mod report;
pub mod run;
pub mod score;
pub mod transcript;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;

use crate::shell::ShellConfig;
use crate::shell::environment::EnvironmentPolicy;
use run::Runner;
use score::CaseResult;

/// The flags of `duet eval`.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct EvalArgs {
    /// The cases: one JSON object per line (see the README).
    #[arg(value_name = "CASES.jsonl")]
    pub cases: PathBuf,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE", default_value = "eval-results.json")]
    pub out: PathBuf,
    /// Run up to N cases at once.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// Give each done command this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub done_timeout: u64,
    /// Approve whatever the approval mode would ask about in each run (`duet exec
    /// --yes`). The runs work in throwaway copies, but a network command such as
    /// `git push` still reaches the network.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Why `duet eval` could not finish.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Cases(#[from] cases::CasesError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot print: {0}")]
    Print(#[from] std::io::Error),
}

/// Runs every case of `args.cases` with the `duet` binary `exe`, which gets
/// `global_args` before `exec`; writes the JSON to `--out`, the table to `out` and a
/// line per finished case to `progress`. The done command that scores a case runs in
/// the sandbox `shell` describes, like the case's own commands.
pub async fn run(
    args: &EvalArgs,
    exe: PathBuf,
    global_args: Vec<String>,
    shell: &ShellConfig,
    out: &mut dyn Write,
    progress: &mut dyn Write,
) -> Result<Vec<CaseResult>, EvalError> {
    let cases = cases::load(&args.cases)?;
    let runner = Runner {
        exe,
        global_args,
        approve_all: args.yes,
        done_timeout: Duration::from_secs(args.done_timeout),
        sandbox: shell.sandbox.clone(),
        environment: EnvironmentPolicy::from_filter(&shell.secrets),
    };
    let total = cases.len();
    let mut finished = futures::stream::iter(&cases)
        .map(|case| run::run_case(&runner, case))
        .buffered(usize::from(args.jobs));
    let mut results = Vec::with_capacity(total);
    while let Some(result) = finished.next().await {
        writeln!(
            progress,
            "duet eval: [{}/{total}] {} {} in {:.1} s",
            results.len() + 1,
            result.id,
            if result.resolved {
                "resolved"
            } else {
                "not resolved"
            },
            result.wall_secs
        )?;
        results.push(result);
    }
    write_json(&args.out, &report::Report::new(&args.cases, &results))?;
    write!(out, "{}", report::table(&results))?;
    writeln!(out, "results: {}", args.out.display())?;
    Ok(results)
}

fn write_json(path: &Path, report: &report::Report<'_>) -> Result<(), EvalError> {
    let write_error = |source| EvalError::Write {
        path: path.to_path_buf(),
        source,
    };
    let json = serde_json::to_string_pretty(report)
        .map_err(|error| write_error(std::io::Error::other(error)))?;
    std::fs::write(path, format!("{json}\n")).map_err(write_error)
}

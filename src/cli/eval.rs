//! `duet eval`: runs a set of cases, each with `duet exec --done` in a copy of its
//! repository, and scores them.
//!
//! Owns: where the cases file and the results go (relative to `-C DIR` when given),
//! which of this command's flags each case's `duet exec` gets, the sandbox the done
//! commands run in (the user's `[shell]` and `[sandbox]`), and the exit status. Does not
//! own: running and scoring the cases (`duet::eval`), nor the global flags
//! themselves (`super::args`).
//! Invariant: a case's `duet exec` gets the model and budget flags exactly as given
//! here, and runs in `auto` approval mode unless told otherwise: nobody watches it to
//! approve anything.

use std::path::Path;
use std::process::ExitCode;

use duet::config::{self, Paths};
use duet::policy::ApprovalMode;

use super::args::{Cli, GlobalArgs};
use super::report::{finish, usage_error};
use super::runtime::runtime;

/// `duet eval`: 0 when every case ran (resolved or not), 2 for a bad cases file, 1
/// when the eval itself failed. Relative paths start at `-C DIR` when given.
pub fn run(cli: &Cli, args: &duet::eval::EvalArgs, paths: &Paths, dir: &Path) -> ExitCode {
    let args = duet::eval::EvalArgs {
        cases: dir.join(&args.cases),
        out: dir.join(&args.out),
        ..args.clone()
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            return finish(Err(anyhow::anyhow!(
                "cannot find duet's own binary: {error}"
            )));
        }
    };
    // The sandbox the cases' done commands run in: the user's `[shell]` and `[sandbox]`.
    let shell = config::load_file(&paths.config_file)
        .and_then(|file| config::resolve_shell(&file, &|name| std::env::var(name).ok(), paths));
    let shell = match shell {
        Ok(shell) => shell,
        Err(error) => return usage_error(&error.into()),
    };
    let result = runtime().and_then(|runtime| {
        runtime.block_on(async {
            let mut stdout = std::io::stdout().lock();
            let mut stderr = std::io::stderr();
            let global_args = case_args(&cli.global);
            Ok(duet::eval::run(&args, exe, global_args, &shell, &mut stdout, &mut stderr).await)
        })
    });
    match result {
        Ok(Ok(_)) => ExitCode::SUCCESS,
        Ok(Err(error @ duet::eval::EvalError::Cases(_))) => usage_error(&error.into()),
        Ok(Err(error)) => finish(Err(error.into())),
        Err(error) => finish(Err(error)),
    }
}

/// The global flags each case's `duet exec` gets: the model and its budgets as given,
/// and the approval mode (`auto` unless given, as nobody watches).
fn case_args(global: &GlobalArgs) -> Vec<String> {
    GlobalArgs {
        approval: Some(global.approval.unwrap_or(ApprovalMode::Auto)),
        ..global.clone()
    }
    .to_args()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::cli::args::Subcmd;

    #[test]
    fn eval_passes_the_model_flags_on_and_runs_in_auto_mode_by_default() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("duet").chain(args.iter().copied())).unwrap()
        };
        assert_eq!(
            case_args(&parse(&["eval", "cases.jsonl"]).global),
            ["--approval", "auto"]
        );
        let cli = parse(&[
            "--provider",
            "openai",
            "--model",
            "m",
            "eval",
            "--jobs",
            "2",
            "cases.jsonl",
            "--max-steps",
            "5",
            "--approval",
            "auto-edit",
        ]);
        assert_eq!(
            case_args(&cli.global),
            [
                "--approval",
                "auto-edit",
                "--provider",
                "openai",
                "--model",
                "m",
                "--max-steps",
                "5"
            ]
        );
        let Some(Subcmd::Eval(args)) = cli.command else {
            panic!("not eval");
        };
        assert_eq!(args.jobs, 2);
        assert_eq!(args.out, PathBuf::from("eval-results.json"));
    }
}

//! `duet exec`: one task, headless, its transcript (or JSON events) on stdout; with
//! `--done CMD`, on a branch of its own until the done command passes.
//!
//! Owns: the task and session the arguments ask for (`--resume` takes an optional ID,
//! so a lone value is the task), the output format and who approves, and the exit
//! status of the run. Does not own: the run itself (`duet::exec`), the settings
//! (`super::settings`) or opening the session (`duet::session`).
//! Invariant: the task is known and not empty before anything else happens: no
//! settings are resolved and no session is opened for a run that could not start.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use duet::config::Paths;
use duet::exec;
use duet::session::Resume;

use super::agent::AgentStart;
use super::args::{Cli, ExecArgs};
use super::report::{color_allowed, finish, setup_error, shown, usage_error};
use super::runtime::runtime;
use super::settings::resolve_settings;

/// `duet exec`: the run's outcome as its exit status, 2 when the task or the setup is
/// wrong.
pub fn run(cli: &Cli, args: &ExecArgs, paths: &Paths, workspace: PathBuf) -> ExitCode {
    if args.json_schema {
        let schema = serde_json::to_string_pretty(&exec::jsonl::schema()).unwrap_or_default();
        println!("{schema}");
        return ExitCode::SUCCESS;
    }
    // `duet --resume ID exec "task"` means the same as `duet exec --resume ID "task"`.
    let resume = args.resume.clone().or_else(|| cli.resume.clone());
    let task = match args.done.task_text() {
        Some(Ok(text)) => Some(text),
        Some(Err(error)) => {
            return usage_error(&anyhow::anyhow!("cannot read --task: {error}"));
        }
        None => args.task.clone(),
    };
    let prepared = exec_task(task, resume).and_then(|(task, resume)| {
        let mut problems = Vec::new();
        let settings = resolve_settings(cli, paths, &workspace, &mut problems);
        for problem in &problems {
            eprintln!("duet: {}", shown(problem));
        }
        let agent = AgentStart::prepare(cli, paths, workspace, settings?, resume)?;
        Ok((task, agent))
    });
    let (task, agent) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return setup_error(&error),
    };
    let format = if args.json {
        exec::Format::Jsonl
    } else {
        exec::Format::Human {
            color: std::io::stdout().is_terminal() && color_allowed(),
        }
    };
    let approvals = if args.yes {
        exec::Approvals::ApproveAll {
            config_file: paths.config_file.clone(),
        }
    } else {
        exec::Approvals::Refuse
    };
    let protected = agent.settings.policy.protected.clone();
    if let Some(options) = args.done.options(protected) {
        return finish(run_exec_done(
            agent, paths, task, format, approvals, &options,
        ));
    }
    finish(run_exec(agent, paths, task, format, approvals).map(exec::Outcome::exit_code))
}

/// The task and the session of `duet exec [--resume [ID]] [TASK]`. `--resume` takes an
/// optional ID, so in `duet exec --resume "task"` the parser reads the task as the ID:
/// a lone value is the task.
fn exec_task(
    task: Option<String>,
    resume: Option<Option<String>>,
) -> anyhow::Result<(String, Option<Resume>)> {
    let (task, resume) = match (task, resume) {
        (Some(task), resume) => (task, Resume::from_flag(resume)),
        (None, Some(Some(task))) => (task, Some(Resume::Latest)),
        (None, _) => anyhow::bail!(
            "the task is missing: duet exec \"what to do\", or to continue a session, \
             duet exec --resume [ID] \"what to do\""
        ),
    };
    Ok((read_task(&task)?, resume))
}

fn read_task(task: &str) -> anyhow::Result<String> {
    let task = if task == "-" {
        std::io::read_to_string(std::io::stdin()).context("cannot read the task from stdin")?
    } else {
        task.to_string()
    };
    if task.trim().is_empty() {
        anyhow::bail!(
            "the task is empty: pass what duet should do, e.g. duet exec \"fix the failing test\""
        );
    }
    Ok(task)
}

fn run_exec(
    agent: AgentStart,
    paths: &Paths,
    task: String,
    format: exec::Format,
    approvals: exec::Approvals,
) -> anyhow::Result<exec::Outcome> {
    runtime()?.block_on(async {
        let (handle, events) = agent.spawn(paths)?;
        let mut stdout = std::io::stdout().lock();
        Ok(exec::run(handle, events, task, format, approvals, &mut stdout).await?)
    })
}

/// `duet exec --done`: prepares the branch before the agent starts, so the agent
/// sees the branch it works on.
fn run_exec_done(
    agent: AgentStart,
    paths: &Paths,
    task: String,
    format: exec::Format,
    approvals: exec::Approvals,
    options: &exec::done::DoneOptions,
) -> anyhow::Result<ExitCode> {
    let prepared = exec::done::prepare(&agent.workspace, &task, options)?;
    runtime()?.block_on(async {
        let (handle, events) = agent.spawn(paths)?;
        let mut stdout = std::io::stdout().lock();
        let outcome = exec::done::run(
            handle,
            events,
            prepared,
            options,
            format,
            approvals,
            &mut stdout,
        )
        .await?;
        Ok(outcome.exit_code())
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::cli::args::Subcmd;

    /// The task and session `duet exec ...` asks for.
    fn exec(args: &[&str]) -> anyhow::Result<(String, Option<Resume>)> {
        let cli = Cli::try_parse_from(std::iter::once("duet").chain(args.iter().copied()))?;
        match cli.command {
            Some(Subcmd::Exec(ExecArgs { task, resume, .. })) => exec_task(task, resume),
            other => panic!("not exec: {other:?}"),
        }
    }

    #[test]
    fn exec_resume_takes_an_optional_id_before_the_task() {
        assert_eq!(exec(&["exec", "do it"]).unwrap(), ("do it".into(), None));
        assert_eq!(
            exec(&["exec", "--resume", "do it"]).unwrap(),
            ("do it".into(), Some(Resume::Latest))
        );
        assert_eq!(
            exec(&["exec", "--resume", "100-1", "do it"]).unwrap(),
            ("do it".into(), Some(Resume::Id("100-1".into())))
        );
        assert_eq!(
            exec(&["exec", "do it", "--resume"]).unwrap(),
            ("do it".into(), Some(Resume::Latest))
        );
    }

    #[test]
    fn exec_without_a_task_says_how_to_give_one() {
        for args in [&["exec"][..], &["exec", "--resume"]] {
            let error = exec(args).unwrap_err().to_string();
            assert!(error.contains("the task is missing"), "{error}");
        }
    }
}

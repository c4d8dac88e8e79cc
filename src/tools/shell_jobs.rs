//! The `shell_jobs` tool: lists the commands the model started with
//! `shell { background: true }`, reads a job's output since the last read, and stops
//! a job.
//!
//! Owns: the arguments and the result text. Does not own: the jobs, their output or
//! how they are stopped ([`crate::shell::jobs`]), or starting them (the `shell` tool).
//! Invariant: nothing here starts a process or touches the workspace, so no call asks
//! for approval: stopping only ends what the model itself started, in the sandbox.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::describe::{self, CallInfo};
use super::shell::{format_duration, job_body, job_refused, job_state};
use super::{Tool, ToolCtx, ToolError, ToolOutput, parse_args, schema_for};

/// What to do.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Action {
    /// Every background job with its state.
    List,
    /// The job's output since the last read (the first read gets what followed the
    /// output `shell` showed), and its exit status once it ended.
    Output,
    /// Stop the job: SIGTERM to its process group, SIGKILL a moment later.
    Stop,
}

/// Arguments of `shell_jobs`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct JobsArgs {
    /// `list`, `output` or `stop`.
    action: Action,
    /// The job, as `shell` named it (`bg1`); needed for `output` and `stop`.
    id: Option<String>,
}

pub struct ShellJobs;

#[async_trait::async_trait]
impl Tool for ShellJobs {
    fn name(&self) -> &'static str {
        "shell_jobs"
    }

    fn description(&self) -> &'static str {
        "Manage the commands started with `shell` and `background: true`. `list` shows \
         every job (id, state, run time, command); `output` returns a job's output since \
         the last read (stdout and stderr together; only the last 256 KiB are kept) and \
         its exit status once it ended; `stop` ends a job and everything it started. Jobs \
         that ended stay listed so their last output can be read."
    }

    fn schema(&self) -> Value {
        schema_for::<JobsArgs>()
    }

    fn describe(&self, args: &serde_json::Map<String, Value>) -> Option<CallInfo> {
        let action = describe::text(args, "action")?;
        let id = describe::text(args, "id").unwrap_or_default();
        Some(CallInfo {
            summary: format!("shell_jobs {action} {id}").trim_end().to_string(),
            paths: Vec::new(),
            command: None,
        })
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        let args: JobsArgs = parse_args(self.name(), args)?;
        let jobs = ctx.shell.jobs();
        let id = || {
            args.id
                .as_deref()
                .filter(|id| !id.trim().is_empty())
                .ok_or_else(|| {
                    ToolError::InvalidArguments(
                        "`id` is needed for this action: the job id `shell` returned, e.g. \
                         `bg1`. List the jobs with {\"action\": \"list\"}."
                            .into(),
                    )
                })
        };
        match args.action {
            Action::List => {
                let views = jobs.list();
                let mut content = String::new();
                for view in &views {
                    content.push_str(&format!(
                        "{} · {} · pid {} · {}\n",
                        view.id,
                        job_state(view),
                        view.pid,
                        view.command
                    ));
                }
                if views.is_empty() {
                    content.push_str("no background jobs\n");
                }
                let running = views
                    .iter()
                    .filter(|view| view.state == crate::shell::jobs::JobState::Running)
                    .count();
                Ok(ToolOutput {
                    content,
                    summary: format!("{} jobs, {running} running", views.len()),
                    checks: None,
                })
            }
            Action::Output => {
                let read = jobs.read(id()?).map_err(job_refused)?;
                let state = job_state(&read.view);
                let mut content = format!("{} · {state}\n", read.view.id);
                content.push_str(&job_body(&read, ctx));
                Ok(ToolOutput {
                    content,
                    summary: format!("{} · {state}", read.view.id),
                    checks: None,
                })
            }
            Action::Stop => {
                let id = id()?;
                let grace = ctx.shell.config().interrupt_grace;
                let view = jobs.stop(id, grace).await.map_err(job_refused)?;
                let read = jobs.read(id).map_err(job_refused)?;
                let state = job_state(&view);
                let mut content = format!("{id} · stopped · {state}\n");
                if view.state == crate::shell::jobs::JobState::Running {
                    content = format!(
                        "{id} · still running after SIGTERM and SIGKILL ({}); tell the user\n",
                        format_duration(view.elapsed)
                    );
                }
                content.push_str(&job_body(&read, ctx));
                Ok(ToolOutput {
                    content,
                    summary: format!("{id} · {state}"),
                    checks: None,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::shell::jobs::JobState;
    use crate::shell::{Shell, ShellConfig};
    use crate::tools::shell::ShellTool;
    use crate::tools::test_support::Fixture;

    fn fixture() -> Fixture {
        let mut fixture = Fixture::new();
        let config = ShellConfig {
            interrupt_grace: Duration::from_millis(500),
            program: Some("bash".into()),
            ..ShellConfig::default()
        };
        fixture.ctx.shell = Arc::new(Shell::new(fixture.root(), config));
        fixture
    }

    async fn background(fixture: &Fixture, command: &str) -> Result<ToolOutput, ToolError> {
        ShellTool
            .run(
                json!({"command": command, "background": true}),
                &fixture.ctx,
            )
            .await
    }

    async fn jobs(fixture: &Fixture, args: Value) -> ToolOutput {
        ShellJobs.run(args, &fixture.ctx).await.unwrap()
    }

    /// Whether any process on the host is in process group `group`.
    fn group_alive(group: u32) -> bool {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return false;
        };
        entries.flatten().any(|entry| {
            std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
                let rest = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
                let fields: Vec<&str> = rest.split_whitespace().collect();
                // State, ppid, pgrp: a zombie leader waiting to be reaped is gone.
                fields.get(2) == Some(&group.to_string().as_str()) && fields[0] != "Z"
            })
        })
    }

    async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    #[tokio::test]
    async fn output_is_read_since_the_last_read_and_stop_kills_the_group() {
        let fixture = fixture();
        // A child in the background of the job: stopping must reach it too.
        let started = background(
            &fixture,
            "sleep 300 & echo first-line; sleep 1.5; echo second-line; sleep 300",
        )
        .await
        .unwrap();
        assert!(
            started.content.contains("first-line"),
            "{}",
            started.content
        );
        let shell = Arc::clone(&fixture.ctx.shell);
        let view = shell.jobs().list().remove(0);
        assert_eq!(view.id, "bg1");
        assert_eq!(view.state, JobState::Running);
        assert!(group_alive(view.pid));

        let mut seen = String::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !seen.contains("second-line") {
            assert!(tokio::time::Instant::now() < deadline, "{seen}");
            tokio::time::sleep(Duration::from_millis(100)).await;
            seen.push_str(&shell.jobs().read("bg1").unwrap().text);
        }
        // What `shell` already showed is not read again.
        assert!(!seen.contains("first-line"), "{seen}");
        assert!(shell.jobs().read("bg1").unwrap().text.is_empty());

        jobs(&fixture, json!({"action": "stop", "id": "bg1"})).await;
        wait_until("the job's group to go", || !group_alive(view.pid)).await;
        let view = shell.jobs().list().remove(0);
        assert!(matches!(view.state, JobState::Ended(_)), "{view:?}");
    }

    #[tokio::test]
    async fn a_job_that_ends_keeps_its_output_and_status() {
        let fixture = fixture();
        let started = background(&fixture, "sleep 0.2; echo done-now; exit 3")
            .await
            .unwrap();
        let shell = Arc::clone(&fixture.ctx.shell);
        wait_until("the job to end", || {
            shell.jobs().list()[0].state != JobState::Running
        })
        .await;
        let read = shell.jobs().read("bg1").unwrap();
        assert_eq!(
            read.view.state,
            JobState::Ended(crate::shell::ShellExit {
                code: Some(3),
                signal: None
            })
        );
        // Either the settle window or this read saw it: the buffer kept it.
        assert!(
            started.content.contains("done-now") || read.text.contains("done-now"),
            "{}{}",
            started.content,
            read.text
        );
    }

    #[tokio::test]
    async fn the_ninth_running_job_is_refused_naming_the_running_ones() {
        let fixture = fixture();
        for _ in 0..crate::shell::jobs::MAX_RUNNING {
            background(&fixture, "sleep 300").await.unwrap();
        }
        let refused = background(&fixture, "sleep 300").await;
        let Err(ToolError::Refused(message)) = refused else {
            panic!("expected a refusal, got {refused:?}");
        };
        assert!(
            message.contains("bg1") && message.contains("bg8"),
            "{message}"
        );
        let views = fixture.ctx.shell.jobs().list();
        assert_eq!(views.len(), crate::shell::jobs::MAX_RUNNING);
        // Dropping the shell (the session's end) kills every job.
        let pids: Vec<u32> = views.iter().map(|view| view.pid).collect();
        drop(fixture);
        wait_until("every job to be killed", || {
            pids.iter().all(|&pid| !group_alive(pid))
        })
        .await;
    }

    #[tokio::test]
    async fn an_unknown_id_is_an_invalid_argument() {
        let fixture = fixture();
        let result = ShellJobs
            .run(json!({"action": "output", "id": "bg7"}), &fixture.ctx)
            .await;
        assert!(
            matches!(result, Err(ToolError::InvalidArguments(_))),
            "{result:?}"
        );
        let listed = jobs(&fixture, json!({"action": "list"})).await;
        assert!(listed.content.contains("no background jobs"));
    }
}

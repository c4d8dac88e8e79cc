//! `duet exec`: the agent without a terminal UI, for scripts and CI.
//!
//! Owns: sending the task, printing events (a readable transcript, or one JSON object
//! per line with `--json`), Ctrl-C handling and the exit status.
//! Does not own: anything the agent does; it only consumes [`Event`]s.
//!
//! Exit status ([`status`], one table for plain runs and `--done` runs): 0 the model
//! finished (with `--done`: and duet verified it); 1 an error (model call, setup); 2
//! stopped by a budget limit or a detected loop; 3 an evidence check failed (`--done`
//! only); 130 interrupted. Bad usage or configuration is also 2, decided by `main`
//! before anything runs.

pub mod done;
pub mod evidence;
mod human;
pub mod jsonl;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tokio::sync::mpsc;

/// How long a finished run waits for the agent to stop (and its SessionEnd hooks to
/// run) before it exits anyway.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

use crate::agent::protocol::ApprovalView;
use crate::agent::{AgentHandle, Command, Event, TurnOutcome};
use crate::policy::{Decision, NO_ONE_TO_APPROVE, Protection};

/// How `duet exec` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A readable transcript; `color` adds ANSI styling (only on a terminal).
    Human { color: bool },
    /// One JSON event per line.
    Jsonl,
}

/// How the run ended, mapped to the process exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Finished,
    Failed,
    /// A budget limit or the loop detector stopped the task before it finished.
    Stopped,
    Interrupted,
}

impl Outcome {
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            Outcome::Finished => status::DONE,
            Outcome::Failed => status::ERROR,
            Outcome::Stopped => status::STOPPED,
            Outcome::Interrupted => status::INTERRUPTED,
        })
    }
}

/// The exit statuses of `duet exec`, with and without `--done`.
pub mod status {
    /// The task finished (with `--done`: verified and committed).
    pub const DONE: u8 = 0;
    /// A model call, the setup or duet itself failed.
    pub const ERROR: u8 = 1;
    /// A budget limit or the loop detector stopped the task (with `--draft-on-cap`, a
    /// draft was committed).
    pub const STOPPED: u8 = 2;
    /// `--done` only: the done command or another evidence check failed.
    pub const CHECKS_FAILED: u8 = 3;
    /// Ctrl-C.
    pub const INTERRUPTED: u8 = 130;
}

/// Prints one event; implemented by each output format.
trait Printer {
    fn print(&mut self, event: &Event, out: &mut dyn Write) -> std::io::Result<()>;
}

/// Who answers approvals in a headless run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approvals {
    /// Nobody: whatever the mode would ask about is refused, with a reason saying so.
    Refuse,
    /// `--yes`: whatever the mode would ask about is approved, except changes to
    /// protected paths, which are refused with how to allow them in `config_file`.
    ApproveAll { config_file: PathBuf },
}

impl Approvals {
    /// The answer to one approval request; `why` is the rule that asks.
    fn decide(&self, why: &str, request: &ApprovalView) -> Decision {
        let reason = match (self, request.protected_paths()) {
            (Approvals::ApproveAll { .. }, []) => return Decision::Approve,
            (Approvals::ApproveAll { config_file }, protections) => {
                protected_refusal(protections, config_file)
            }
            (Approvals::Refuse, _) => format!("{why}; {NO_ONE_TO_APPROVE}"),
        };
        Decision::Reject {
            reason: Some(reason),
        }
    }
}

/// Why `--yes` did not approve a change to protected paths, and how the user can let
/// duet make it.
fn protected_refusal(protections: &[Protection], config_file: &Path) -> String {
    let named: Vec<String> = protections.iter().map(ToString::to_string).collect();
    let exceptions: Vec<String> = protections
        .iter()
        .map(|protection| format!("\"!{}\"", protection.path))
        .collect();
    format!(
        "{}, and `duet exec --yes` never approves changes to protected paths. To allow it, \
         the user can add {} to `protected` in the [policy] table of {}, or run duet \
         interactively and approve it there.",
        named.join(", "),
        exceptions.join(" and "),
        config_file.display()
    )
}

/// Runs `task` to the end of one turn, printing to `out`. The first Ctrl-C interrupts
/// the agent (the turn ends cleanly as interrupted); a second one quits at once.
pub async fn run(
    handle: AgentHandle,
    events: mpsc::Receiver<Event>,
    task: String,
    format: Format,
    approvals: Approvals,
    out: &mut dyn Write,
) -> std::io::Result<Outcome> {
    run_observed(handle, events, task, format, approvals, out, &mut |_| {}).await
}

/// [`run`], showing every event to `observe` after it is printed.
async fn run_observed(
    handle: AgentHandle,
    mut events: mpsc::Receiver<Event>,
    task: String,
    format: Format,
    approvals: Approvals,
    out: &mut dyn Write,
    observe: &mut dyn FnMut(&Event),
) -> std::io::Result<Outcome> {
    let mut printer: Box<dyn Printer> = match format {
        Format::Human { color } => Box::new(human::HumanPrinter::new(color)),
        Format::Jsonl => Box::new(jsonl::JsonlPrinter::default()),
    };
    // The run's one message.
    if handle
        .send(Command::UserMessage {
            id: 1,
            text: task,
            images: Vec::new(),
        })
        .is_err()
    {
        return Ok(Outcome::Failed);
    }
    let mut interrupted = false;
    loop {
        tokio::select! {
            event = events.recv() => {
                let Some(event) = event else {
                    return Ok(Outcome::Failed);
                };
                printer.print(&event, out)?;
                out.flush()?;
                observe(&event);
                if let Event::ApprovalNeeded { call_id, why, request } = &event {
                    let decision = approvals.decide(why, request);
                    let call_id = call_id.clone();
                    let _ = handle.send(Command::Decide { call_id, decision });
                }
                if let Event::TurnEnd { outcome, .. } = &event {
                    let _ = handle.send(Command::Shutdown);
                    // SessionEnd hooks run as the agent stops: their notices are shown.
                    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
                    loop {
                        tokio::select! {
                            () = handle.stopped() => break,
                            () = tokio::time::sleep_until(deadline) => break,
                            Some(event) = events.recv() => {
                                printer.print(&event, out)?;
                                out.flush()?;
                            }
                        }
                    }
                    return Ok(match outcome {
                        TurnOutcome::Finished { .. } => Outcome::Finished,
                        TurnOutcome::Interrupted => Outcome::Interrupted,
                        TurnOutcome::Failed { .. } => Outcome::Failed,
                        TurnOutcome::BudgetExhausted { .. }
                        | TurnOutcome::LoopDetected { .. }
                        | TurnOutcome::StoppedByHook { .. } => Outcome::Stopped,
                    });
                }
            }
            signal = tokio::signal::ctrl_c() => {
                if signal.is_err() || interrupted {
                    return Ok(Outcome::Interrupted);
                }
                interrupted = true;
                let _ = handle.send(Command::Interrupt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::policy::CommandClass;

    fn command(protected: Vec<Protection>) -> ApprovalView {
        ApprovalView::Command {
            command: "echo ok > Cargo.lock".into(),
            cwd: "./".into(),
            class: CommandClass::Destructive,
            reasons: Vec::new(),
            protected,
        }
    }

    fn lockfile() -> Protection {
        Protection {
            path: "Cargo.lock".into(),
            why: "lockfile".into(),
        }
    }

    #[test]
    fn a_budget_stop_exits_2_with_or_without_done() {
        assert_eq!(Outcome::Stopped.exit_code(), ExitCode::from(2));
        assert_eq!(Outcome::Finished.exit_code(), ExitCode::SUCCESS);
        assert_eq!(Outcome::Failed.exit_code(), ExitCode::from(1));
        assert_eq!(Outcome::Interrupted.exit_code(), ExitCode::from(130));
    }

    #[test]
    fn yes_approves_ordinary_asks() {
        let approvals = Approvals::ApproveAll {
            config_file: PathBuf::from("/home/u/.config/duet/config.toml"),
        };
        assert_eq!(
            approvals.decide("ask mode", &command(Vec::new())),
            Decision::Approve
        );
    }

    #[test]
    fn yes_refuses_protected_paths_and_says_how_to_allow_them() {
        let approvals = Approvals::ApproveAll {
            config_file: PathBuf::from("/home/u/.config/duet/config.toml"),
        };
        let Decision::Reject {
            reason: Some(reason),
        } = approvals.decide("auto mode", &command(vec![lockfile()]))
        else {
            panic!("--yes approved a protected change");
        };
        assert_eq!(
            reason,
            "Cargo.lock is protected (lockfile), and `duet exec --yes` never approves changes \
             to protected paths. To allow it, the user can add \"!Cargo.lock\" to `protected` \
             in the [policy] table of /home/u/.config/duet/config.toml, or run duet \
             interactively and approve it there."
        );
    }

    #[test]
    fn without_yes_the_refusal_gives_the_rule_and_the_headless_reason() {
        let decision = Approvals::Refuse.decide(
            "auto mode asks before a destructive command: `rm -rf x` deletes x",
            &command(Vec::new()),
        );
        assert_eq!(
            decision,
            Decision::Reject {
                reason: Some(format!(
                    "auto mode asks before a destructive command: `rm -rf x` deletes x; \
                     {NO_ONE_TO_APPROVE}"
                ))
            }
        );
    }
}

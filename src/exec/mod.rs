//! `duet exec`: the agent without a terminal UI, for scripts and CI.
//!
//! Owns: sending the task, printing events (a readable transcript, or one JSON object
//! per line with `--json`), Ctrl-C handling and the exit status.
//! Does not own: anything the agent does; it only consumes [`Event`]s.
//!
//! Exit status: 0 the model finished; 1 the turn failed (model call or setup); 2 bad
//! usage or configuration (decided by `main`); 3 stopped by a budget limit or a detected
//! loop; 130 interrupted.

mod human;
mod jsonl;

use std::io::Write;
use std::process::ExitCode;

use tokio::sync::mpsc;

use crate::agent::{AgentHandle, Command, Event, TurnOutcome};
use crate::policy::{Decision, NO_ONE_TO_APPROVE};

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
        match self {
            Outcome::Finished => ExitCode::SUCCESS,
            Outcome::Failed => ExitCode::from(1),
            Outcome::Stopped => ExitCode::from(3),
            Outcome::Interrupted => ExitCode::from(130),
        }
    }
}

/// Prints one event; implemented by each output format.
trait Printer {
    fn print(&mut self, event: &Event, out: &mut dyn Write) -> std::io::Result<()>;
}

/// Who answers approvals in a headless run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approvals {
    /// Nobody: whatever the mode would ask about is refused, with a reason saying so.
    Refuse,
    /// `--yes`: whatever the mode would ask about is approved.
    ApproveAll,
}

/// Runs `task` to the end of one turn, printing to `out`. The first Ctrl-C interrupts
/// the agent (the turn ends cleanly as interrupted); a second one quits at once.
pub async fn run(
    handle: AgentHandle,
    mut events: mpsc::Receiver<Event>,
    task: String,
    format: Format,
    approvals: Approvals,
    out: &mut dyn Write,
) -> std::io::Result<Outcome> {
    let mut printer: Box<dyn Printer> = match format {
        Format::Human { color } => Box::new(human::HumanPrinter::new(color)),
        Format::Jsonl => Box::new(jsonl::JsonlPrinter),
    };
    if handle.send(Command::UserMessage { text: task }).is_err() {
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
                if let Event::ApprovalNeeded { call_id, .. } = &event {
                    let decision = match approvals {
                        Approvals::ApproveAll => Decision::Approve,
                        Approvals::Refuse => Decision::Reject {
                            reason: Some(NO_ONE_TO_APPROVE.to_string()),
                        },
                    };
                    let call_id = call_id.clone();
                    let _ = handle.send(Command::Decide { call_id, decision });
                }
                if let Event::TurnEnd { outcome } = &event {
                    let _ = handle.send(Command::Shutdown);
                    return Ok(match outcome {
                        TurnOutcome::Finished { .. } => Outcome::Finished,
                        TurnOutcome::Interrupted => Outcome::Interrupted,
                        TurnOutcome::Failed { .. } => Outcome::Failed,
                        TurnOutcome::BudgetExhausted { .. } | TurnOutcome::LoopDetected { .. } => {
                            Outcome::Stopped
                        }
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

//! The command line: every flag and subcommand of `duet`, as clap types, and the shell
//! completion scripts generated from them.
//!
//! Owns: the arguments' names, help texts, defaults and parsing, and turning the
//! global flags back into arguments ([`GlobalArgs::to_args`]) for the `duet exec`
//! runs `duet eval` starts. Does not own: what the flags mean (settings resolution
//! maps them onto the config, [`super::settings`]) or what a subcommand does (its own
//! module).
//! Invariant: [`GlobalArgs::to_args`] names every global flag, so a flag added to
//! [`GlobalArgs`] cannot be forgotten by `duet eval`: it either passes it on or says
//! why not.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use duet::exec;
use duet::policy::ApprovalMode;
use duet::provider::Wire;
use duet::shell::sandbox::launcher::LauncherArgs;

use super::demo;

#[derive(Parser, Debug)]
#[command(name = "duet", version, about = "A terminal pair-programming agent")]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Keep the terminal's own scrollback: draw in a small area at the bottom instead of
    /// taking over the screen.
    #[arg(long)]
    pub inline: bool,
    /// Leave the mouse to the terminal (text selection) instead of scrolling with it.
    #[arg(long)]
    pub no_mouse: bool,
    /// Continue a session: this workspace's last one, or the one with this ID (see
    /// `duet sessions`).
    #[arg(long, value_name = "ID", num_args = 0..=1)]
    pub resume: Option<Option<String>>,
    #[command(subcommand)]
    pub command: Option<Subcmd>,
}

/// The flags every subcommand takes: the model, its budgets, the approval mode, the
/// directory to work in, and a replayed model.
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
pub struct GlobalArgs {
    /// Model provider wire: openai is chat completions (any OpenAI-compatible server),
    /// openai-responses the OpenAI Responses API.
    #[arg(long, global = true, value_enum)]
    pub provider: Option<Wire>,
    /// Model name, e.g. claude-sonnet-4-5 or qwen2.5-coder.
    #[arg(long, global = true)]
    pub model: Option<String>,
    /// Base URL of the model server (Anthropic: https://api.anthropic.com, OpenAI: https://api.openai.com/v1).
    #[arg(long, global = true)]
    pub base_url: Option<String>,
    /// What may happen without asking.
    #[arg(long, global = true, value_enum)]
    pub approval: Option<ApprovalMode>,
    /// Work in this directory instead of the current one.
    #[arg(long, short = 'C', global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Stop a task after this many model calls (default 200).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: Option<u32>,
    /// Stop a task after this many seconds.
    #[arg(long, global = true, value_name = "SECS")]
    pub max_time: Option<u64>,
    /// Stop a task before its tokens (sent and received, all calls) would pass this.
    #[arg(long, global = true, value_name = "TOKENS")]
    pub max_total_tokens: Option<u64>,
    /// Stop a task before its cost would pass this many US dollars.
    #[arg(long, global = true, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Replay a recorded or scripted session as the model (no key, no network): the
    /// model's turns come from FILE, in order (the test suite's script format).
    // Kept last in `--help`, after `Cli`'s `--resume` (place 12), where it stood before
    // the global flags were gathered here.
    #[arg(long, global = true, value_name = "FILE", display_order = 13)]
    pub replay: Option<PathBuf>,
}

impl GlobalArgs {
    /// The flags as arguments for another `duet`, in a fixed order: the approval mode,
    /// then the model, then its budgets, each only when given.
    pub fn to_args(&self) -> Vec<String> {
        // Destructured in full so that a new flag must be placed here or left out on
        // purpose.
        let GlobalArgs {
            provider,
            model,
            base_url,
            approval,
            // The other `duet` works where it is started (`duet eval`: in each case's
            // copy of its repository).
            cwd: _,
            max_steps,
            max_time,
            max_total_tokens,
            max_cost,
            // `duet eval` runs its cases against the configured model: a replay script
            // is one conversation, not one per case.
            replay: _,
        } = self;
        let mut args = Vec::new();
        let mut pass = |flag: &str, value: Option<String>| {
            if let Some(value) = value {
                args.extend([flag.to_string(), value]);
            }
        };
        pass("--approval", approval.map(|mode| mode.to_string()));
        pass("--provider", provider.map(|wire| wire.to_string()));
        pass("--model", model.clone());
        pass("--base-url", base_url.clone());
        pass("--max-steps", max_steps.map(|n| n.to_string()));
        pass("--max-time", max_time.map(|secs| secs.to_string()));
        pass(
            "--max-total-tokens",
            max_total_tokens.map(|tokens| tokens.to_string()),
        );
        pass("--max-cost", max_cost.map(|usd| usd.to_string()));
        args
    }
}

#[derive(Subcommand, Debug)]
pub enum Subcmd {
    /// Run one task headless and print the transcript.
    Exec(ExecArgs),
    /// List recorded sessions of this workspace, newest first.
    Sessions {
        /// List the sessions of every workspace.
        #[arg(long)]
        all: bool,
    },
    /// Check the setup: config, model settings, tools, and what protects you from the
    /// shell's commands on this machine.
    Doctor,
    /// Run a set of cases with `duet exec --done`, each in a copy of its repository,
    /// and score them (one JSON object per line in CASES.jsonl).
    Eval(duet::eval::EvalArgs),
    /// See duet work without a key or network: a replayed model in a throwaway copy of
    /// a sample project, with the real tools, approvals and terminal UI.
    Demo {
        /// Milliseconds between two streamed pieces of the model's output.
        #[arg(long, value_name = "MS", default_value_t = demo::DEFAULT_DELAY_MS)]
        delay_ms: u64,
    },
    /// MCP servers: the tools they offer the model.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Write or locate duet's config file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print a shell completion script: bash, zsh or fish.
    ///
    /// For example: `duet completions bash > ~/.local/share/bash-completion/completions/duet`.
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
}

/// The flags of `duet exec`.
#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// The task. `-` reads it from standard input.
    pub task: Option<String>,
    /// Print one JSON event per line instead of a transcript.
    #[arg(long)]
    pub json: bool,
    /// Print the JSON Schema of the `--json` lines and exit.
    #[arg(long)]
    pub json_schema: bool,
    /// Approve whatever the approval mode would ask about (there is no one to ask).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Continue a session with this task: this workspace's last one, or the one
    /// with this ID (`duet exec --resume [ID] "task"`).
    #[arg(long, value_name = "ID", num_args = 0..=1)]
    pub resume: Option<Option<String>>,
    #[command(flatten)]
    pub done: exec::done::DoneArgs,
}

#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Show the configured servers, connect to each, and list their tools.
    List,
    /// Trust the project's servers (all, or those named) as they are now: they start
    /// (with `[mcp] project_servers = true`) until their entry or a file they run
    /// changes.
    Trust {
        /// Server names; all of the project's when none.
        names: Vec<String>,
    },
    /// Stop trusting the project's servers (all, or those named).
    Untrust {
        /// Server names; all of the project's when none.
        names: Vec<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConfigAction {
    /// Write a commented config.toml with every setting at its default (never
    /// overwrites an existing file).
    Init,
    /// Print where the config, state, logs and sessions live.
    Path,
}

/// `duet __sandbox ...`, the shell's sandbox launcher: not a listed subcommand, and
/// parsed before anything else runs.
#[derive(Parser, Debug)]
#[command(name = "duet __sandbox")]
pub struct LauncherCli {
    #[command(flatten)]
    pub args: LauncherArgs,
}

/// `duet completions SHELL`: the completion script on stdout.
pub fn print_completions(shell: clap_complete::Shell) -> ExitCode {
    let mut command = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut command, "duet", &mut std::io::stdout());
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use duet::session::Resume;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("duet").chain(args.iter().copied()))
    }

    #[test]
    fn done_flags_need_done_and_task_comes_from_one_place() {
        assert!(parse(&["exec", "--allow-dirty", "t"]).is_err());
        assert!(parse(&["exec", "--done", "make", "--task", "t", "t"]).is_err());
        assert!(parse(&["exec", "--done", "make", "--resume", "t"]).is_err());
        let Some(Subcmd::Exec(ExecArgs { done, task, .. })) =
            parse(&["exec", "--done", "make", "--task", "fix it"])
                .unwrap()
                .command
        else {
            panic!("not exec");
        };
        assert_eq!(task, None);
        assert_eq!(done.task_text().unwrap().unwrap(), "fix it");
        assert_eq!(done.done.as_deref(), Some("make"));
    }

    #[test]
    fn the_terminal_ui_resumes_the_latest_or_a_named_session() {
        let resume = |args: &[&str]| Resume::from_flag(parse(args).unwrap().resume);
        assert_eq!(resume(&[]), None);
        assert_eq!(resume(&["--resume"]), Some(Resume::Latest));
        assert_eq!(
            resume(&["--resume", "100-1"]),
            Some(Resume::Id("100-1".into()))
        );
    }

    #[test]
    fn every_global_flag_survives_to_args_except_the_directory_and_the_replay() {
        let given = parse(&[
            "--provider",
            "openai-responses",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--approval",
            "read-only",
            "-C",
            "/somewhere",
            "--max-steps",
            "5",
            "--max-time",
            "60",
            "--max-total-tokens",
            "1000",
            "--max-cost",
            "0.25",
            "--replay",
            "script.toml",
            "exec",
            "t",
        ])
        .unwrap()
        .global;
        assert_eq!(given.cwd, Some(PathBuf::from("/somewhere")));
        assert_eq!(given.replay, Some(PathBuf::from("script.toml")));

        let args = given.to_args();
        let mut reparsed_args = args.iter().map(String::as_str).collect::<Vec<_>>();
        reparsed_args.extend(["exec", "t"]);
        let reparsed = parse(&reparsed_args).unwrap().global;
        assert_eq!(
            reparsed,
            GlobalArgs {
                cwd: None,
                replay: None,
                ..given
            }
        );
        // Given after the subcommand, the flags are the same flags.
        let after = parse(
            &[
                &["exec", "t"][..],
                &reparsed_args[..reparsed_args.len() - 2],
            ]
            .concat(),
        )
        .unwrap()
        .global;
        assert_eq!(after, reparsed);
        assert_eq!(GlobalArgs::default().to_args(), Vec::<String>::new());
    }
}

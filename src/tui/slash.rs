//! Slash commands typed into the composer (`/help`, `/mode auto`, …): recognizing them
//! and parsing their arguments, the built-in ones and the user's own prompt files
//! (`/review src/lib.rs`, see [`crate::custom_commands`]).
//!
//! Owns: the built-in command names, their arguments and the list the help shows, and
//! which name means what. Does not own: carrying a command out (the app does), or
//! finding and expanding prompt files.
//! Invariant: input that is not a command (no leading `/`, a path like `/usr/bin`, or
//! `//` escaping the slash) is never taken for one, so it is sent as a message; a
//! built-in name always means the built-in command.

use crate::agent::protocol::UndoScope;
use crate::custom_commands::Catalog;
use crate::policy::ApprovalMode;

/// A command the user typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlashCommand {
    Help,
    /// `None` asks for the current mode and the choices.
    Mode(Option<ApprovalMode>),
    /// `None` asks which model is in use.
    Model(Option<String>),
    Clear,
    Diff,
    Undo(UndoScope),
    /// The MCP servers and their states.
    Mcp,
    /// Compact the conversation now, the summary keeping the focus given.
    Compact(Option<String>),
    /// Have the model write an AGENTS.md for this repository.
    Init,
    /// Model, mode, context fill, tokens and cost, sandbox, MCP, git.
    Status,
    /// Attach the image at this path to the next message.
    Image(String),
    /// List the background commands; with an id, stop that one.
    Ps(Option<String>),
    /// List this workspace's sessions; with an id, switch to that one.
    Resume(Option<String>),
    Quit,
    /// A prompt file's command: `name` as the catalog spells it, and what was typed
    /// after it.
    Custom {
        name: String,
        arguments: String,
    },
}

/// One command as the help lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandInfo {
    /// Without the slash.
    pub name: &'static str,
    /// The arguments in usage syntax; empty when there are none.
    pub args: &'static str,
    pub about: &'static str,
}

pub const COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        name: "help",
        args: "",
        about: "Show the keys and commands",
    },
    CommandInfo {
        name: "mode",
        args: "[ask|auto-edit|auto|read-only]",
        about: "Show or set the approval mode",
    },
    CommandInfo {
        name: "model",
        args: "[name]",
        about: "Show or switch the model",
    },
    CommandInfo {
        name: "clear",
        args: "",
        about: "Start a new conversation",
    },
    CommandInfo {
        name: "diff",
        args: "",
        about: "Show what duet changed in this session",
    },
    CommandInfo {
        name: "undo",
        args: "[all]",
        about: "Revert duet's last turn (all: every turn)",
    },
    CommandInfo {
        name: "mcp",
        args: "",
        about: "Show the MCP servers and their state",
    },
    CommandInfo {
        name: "compact",
        args: "[focus]",
        about: "Summarise the older conversation now, keeping the focus given",
    },
    CommandInfo {
        name: "init",
        args: "",
        about: "Have the model write an AGENTS.md for this repository",
    },
    CommandInfo {
        name: "image",
        args: "PATH",
        about: "Attach a PNG, JPEG, GIF or WebP image to your next message",
    },
    CommandInfo {
        name: "resume",
        args: "[ID]",
        about: "List this workspace's sessions, or continue the one named",
    },
    CommandInfo {
        name: "ps",
        args: "[stop ID]",
        about: "List the background commands the model started, or stop one",
    },
    CommandInfo {
        name: "status",
        args: "",
        about: "Show the model, context, tokens and cost, sandbox and MCP",
    },
    CommandInfo {
        name: "quit",
        args: "",
        about: "Leave duet",
    },
];

/// Other names the built-in commands answer to.
const ALIASES: &[&str] = &["?", "exit"];

/// Every name a built-in command answers to: no prompt file may take one.
pub fn built_in_names() -> Vec<&'static str> {
    COMMANDS
        .iter()
        .map(|info| info.name)
        .chain(ALIASES.iter().copied())
        .collect()
}

/// Reads `input` as a slash command, the built-in ones first, then `custom`'s: `None`
/// when it is not one (send it as a message, through [`unescape`]), `Some(Err(why))`
/// when it is one but wrong.
pub fn parse(input: &str, custom: &Catalog) -> Option<Result<SlashCommand, String>> {
    let body = input.strip_prefix('/')?;
    if body.starts_with('/') {
        return None;
    }
    let body = body.trim_end();
    let (name, args) = match body.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (body, ""),
    };
    // `/usr/bin is empty?` is a message about a path, not a command.
    if name.contains('/') {
        return None;
    }
    Some(command(name, args, custom))
}

/// The message to send for input that is not a command: `//text` sends `/text`.
pub fn unescape(input: &str) -> &str {
    if input.starts_with("//") {
        &input[1..]
    } else {
        input
    }
}

fn command(typed: &str, args: &str, custom: &Catalog) -> Result<SlashCommand, String> {
    let name = typed.to_lowercase();
    let no_args = |command: SlashCommand| {
        if args.is_empty() {
            Ok(command)
        } else {
            Err(format!("/{name} takes no arguments"))
        }
    };
    match name.as_str() {
        "" => Err(format!(
            "type a command after the slash: {}",
            command_list(custom)
        )),
        "help" | "?" => no_args(SlashCommand::Help),
        "mode" => mode(args),
        "model" => model(args),
        "clear" => no_args(SlashCommand::Clear),
        "diff" => no_args(SlashCommand::Diff),
        "undo" => undo(args),
        "mcp" => no_args(SlashCommand::Mcp),
        "compact" => Ok(SlashCommand::Compact(
            Some(args.to_string()).filter(|focus| !focus.is_empty()),
        )),
        "init" => no_args(SlashCommand::Init),
        "status" => no_args(SlashCommand::Status),
        "ps" => ps(args),
        "resume" if args.contains(char::is_whitespace) => {
            Err("/resume takes one session id, as /resume lists them".into())
        }
        "resume" => Ok(SlashCommand::Resume(
            Some(args.to_string()).filter(|id| !id.is_empty()),
        )),
        "image" if args.is_empty() => Err("/image takes the path of an image file".into()),
        "image" => Ok(SlashCommand::Image(args.to_string())),
        "quit" | "exit" => no_args(SlashCommand::Quit),
        _ => custom_command(typed, args, custom),
    }
}

/// `/name args` for a name no built-in command has: the prompt file's, or an error
/// that says why there is none (with the closest name, or why its file was left out).
fn custom_command(typed: &str, args: &str, custom: &Catalog) -> Result<SlashCommand, String> {
    if let Some(command) = custom.get(typed) {
        return Ok(SlashCommand::Custom {
            name: command.name.clone(),
            arguments: args.to_string(),
        });
    }
    if let Some(ignored) = custom.left_out(typed) {
        return Err(format!(
            "unknown command /{typed}: {} was left out: {}",
            ignored.file, ignored.why
        ));
    }
    let names = COMMANDS.iter().map(|info| info.name).chain(
        custom
            .commands()
            .iter()
            .map(|command| command.name.as_str()),
    );
    let guess = match closest(&typed.to_lowercase(), names) {
        Some(name) => format!("; did you mean /{name}?"),
        None => ".".to_string(),
    };
    Err(format!(
        "unknown command /{typed}{guess} Commands: {}",
        command_list(custom)
    ))
}

fn mode(args: &str) -> Result<SlashCommand, String> {
    if args.is_empty() {
        return Ok(SlashCommand::Mode(None));
    }
    args.parse()
        .map(|mode| SlashCommand::Mode(Some(mode)))
        .map_err(|message| format!("/mode: {message}"))
}

fn ps(args: &str) -> Result<SlashCommand, String> {
    let mut words = args.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (None, _, _) => Ok(SlashCommand::Ps(None)),
        (Some(stop), Some(id), None) if stop.eq_ignore_ascii_case("stop") => {
            Ok(SlashCommand::Ps(Some(id.to_string())))
        }
        _ => Err("/ps lists the background commands; `/ps stop bg1` stops one".into()),
    }
}

fn undo(args: &str) -> Result<SlashCommand, String> {
    match args.to_lowercase().as_str() {
        "" => Ok(SlashCommand::Undo(UndoScope::LastTurn)),
        "all" => Ok(SlashCommand::Undo(UndoScope::All)),
        _ => Err("/undo reverts the last turn; `/undo all` reverts every turn".into()),
    }
}

fn model(args: &str) -> Result<SlashCommand, String> {
    if args.is_empty() {
        return Ok(SlashCommand::Model(None));
    }
    if args.contains(char::is_whitespace) {
        return Err("/model takes one model name, like `/model claude-sonnet-4-5`".into());
    }
    Ok(SlashCommand::Model(Some(args.to_string())))
}

fn command_list(custom: &Catalog) -> String {
    let names: Vec<String> = COMMANDS
        .iter()
        .map(|info| info.name)
        .chain(
            custom
                .commands()
                .iter()
                .map(|command| command.name.as_str()),
        )
        .map(|name| format!("/{name}"))
        .collect();
    format!(
        "{} (start with // to send a message that begins with a slash)",
        names.join(", ")
    )
}

/// The candidate nearest to `input` by edit distance (a swap of neighbours counts
/// once), if it is near enough to be a likely typo. Also used for keymap errors.
pub(crate) fn closest<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (input.chars().count() / 3).max(1);
    candidates
        .into_iter()
        // Optimal string alignment: a swap of neighbours costs one, like a typo.
        .map(|candidate| (strsim::osa_distance(input, candidate), candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::custom_commands::{CustomCommand, Locations, Origin};

    /// What `input` is with no prompt files.
    fn parse(input: &str) -> Option<Result<SlashCommand, String>> {
        super::parse(input, &Catalog::default())
    }

    fn review_catalog() -> Catalog {
        Catalog::from_commands(vec![
            CustomCommand::new(
                "review",
                "Review $ARGUMENTS carefully",
                Origin::Project,
                ".duet/commands/review.md",
            ),
            CustomCommand::new("frontend:test", "Test", Origin::User, "x"),
            // Only a file named so by mistake could get here: the loader refuses it.
            CustomCommand::new("help", "Not the help", Origin::Project, "y"),
        ])
    }

    #[test]
    fn a_custom_command_takes_the_rest_as_its_arguments() {
        let catalog = review_catalog();
        assert_eq!(
            super::parse("/review  src/lib.rs \"a b\" ", &catalog),
            Some(Ok(SlashCommand::Custom {
                name: "review".into(),
                arguments: "src/lib.rs \"a b\"".into()
            }))
        );
        assert_eq!(
            super::parse("/Frontend:Test", &catalog),
            Some(Ok(SlashCommand::Custom {
                name: "frontend:test".into(),
                arguments: String::new()
            }))
        );
        assert_eq!(
            super::parse("/help", &catalog),
            Some(Ok(SlashCommand::Help))
        );
        assert_eq!(super::parse("//review x", &catalog), None);
    }

    #[test]
    fn unknown_commands_suggest_custom_ones_too() {
        let catalog = review_catalog();
        let message = match super::parse("/reviw", &catalog) {
            Some(Err(message)) => message,
            other => panic!("{other:?}"),
        };
        assert!(
            message.starts_with("unknown command /reviw; did you mean /review?"),
            "{message}"
        );
        assert!(
            message.contains("/quit, /review, /frontend:test"),
            "{message}"
        );
    }

    #[test]
    fn a_command_whose_file_was_left_out_says_why() {
        let workspace = tempfile::tempdir().unwrap();
        let commands = workspace.path().join(".duet/commands");
        std::fs::create_dir_all(&commands).unwrap();
        std::fs::write(commands.join("big.md"), "x".repeat(100_000)).unwrap();
        let env = |_: &str| None;
        let locations = Locations::new(workspace.path(), None, &env);
        let catalog = Catalog::load(&locations, &built_in_names());
        let message = match super::parse("/big now", &catalog) {
            Some(Err(message)) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            message,
            "unknown command /big: .duet/commands/big.md was left out: 100000 bytes, more \
             than the 65536 a prompt file may have"
        );
    }

    #[test]
    fn the_built_in_names_include_the_aliases() {
        let names = built_in_names();
        for name in ["help", "quit", "exit", "?", "resume"] {
            assert!(names.contains(&name), "{name}");
        }
    }

    fn ok(input: &str) -> SlashCommand {
        match parse(input) {
            Some(Ok(command)) => command,
            other => panic!("{input:?} gave {other:?}"),
        }
    }

    fn err(input: &str) -> String {
        match parse(input) {
            Some(Err(message)) => message,
            other => panic!("{input:?} gave {other:?}"),
        }
    }

    #[test]
    fn ps_lists_or_stops_one() {
        assert_eq!(parse("/ps"), Some(Ok(SlashCommand::Ps(None))));
        assert_eq!(
            parse("/ps stop bg2"),
            Some(Ok(SlashCommand::Ps(Some("bg2".into()))))
        );
        assert!(matches!(parse("/ps kill"), Some(Err(_))));
        assert_eq!(
            parse("/image ~/shot.png"),
            Some(Ok(SlashCommand::Image("~/shot.png".into())))
        );
    }

    #[test]
    fn compact_takes_an_optional_focus() {
        assert_eq!(parse("/compact"), Some(Ok(SlashCommand::Compact(None))));
        assert_eq!(
            parse("/compact  the parser  "),
            Some(Ok(SlashCommand::Compact(Some("the parser".into()))))
        );
        assert_eq!(parse("/init"), Some(Ok(SlashCommand::Init)));
        assert_eq!(parse("/status"), Some(Ok(SlashCommand::Status)));
        assert!(matches!(parse("/init now"), Some(Err(_))));
    }

    #[test]
    fn commands_and_their_arguments() {
        assert_eq!(ok("/help"), SlashCommand::Help);
        assert_eq!(ok("/help  \n"), SlashCommand::Help);
        assert_eq!(ok("/mode"), SlashCommand::Mode(None));
        assert_eq!(ok("/mode ask"), SlashCommand::Mode(Some(ApprovalMode::Ask)));
        assert_eq!(
            ok("/mode  auto-edit"),
            SlashCommand::Mode(Some(ApprovalMode::AutoEdit))
        );
        assert_eq!(
            ok("/mode auto"),
            SlashCommand::Mode(Some(ApprovalMode::Auto))
        );
        assert_eq!(
            ok("/mode read-only"),
            SlashCommand::Mode(Some(ApprovalMode::ReadOnly))
        );
        assert_eq!(ok("/model"), SlashCommand::Model(None));
        assert_eq!(
            ok("/model gpt-5"),
            SlashCommand::Model(Some("gpt-5".into()))
        );
        assert_eq!(ok("/clear"), SlashCommand::Clear);
        assert_eq!(ok("/diff"), SlashCommand::Diff);
        assert_eq!(ok("/undo"), SlashCommand::Undo(UndoScope::LastTurn));
        assert_eq!(ok("/undo all"), SlashCommand::Undo(UndoScope::All));
        assert_eq!(ok("/quit"), SlashCommand::Quit);
        assert_eq!(ok("/exit"), SlashCommand::Quit);
        assert_eq!(ok("/QUIT"), SlashCommand::Quit);
    }

    #[test]
    fn messages_are_not_commands() {
        for input in [
            "hello",
            " /help",
            "//help",
            "/usr/bin is empty?",
            "",
            "a /b",
        ] {
            assert_eq!(parse(input), None, "{input:?}");
        }
        assert_eq!(unescape("//help me"), "/help me");
        assert_eq!(unescape("/help"), "/help");
        assert_eq!(unescape("plain"), "plain");
    }

    #[test]
    fn errors_name_the_valid_choices() {
        let message = err("/mode yolo");
        assert!(message.contains("yolo"), "{message}");
        assert!(
            message.contains("ask, auto-edit, auto, read-only"),
            "{message}"
        );
        assert_eq!(err("/clear all"), "/clear takes no arguments");
        assert!(err("/model a b").contains("one model name"));
        assert!(err("/undo 3").contains("`/undo all`"));
        let message = err("/");
        assert!(message.contains("/help, /mode, /model"), "{message}");
    }

    #[test]
    fn unknown_commands_suggest_the_closest() {
        let message = err("/hepl");
        assert!(
            message.starts_with("unknown command /hepl; did you mean /help?"),
            "{message}"
        );
        assert!(message.contains("//"), "{message}");
        assert!(err("/mod").contains("did you mean /mode?"));
        assert!(err("/undoo").contains("did you mean /undo?"));
        let message = err("/deploy");
        assert!(!message.contains("did you mean"), "{message}");
        assert!(message.contains("/quit"), "{message}");
    }

    #[test]
    fn closest_prefers_the_nearest_likely_typo() {
        let names = ["clear_input", "cursor_left", "submit"];
        assert_eq!(closest("clear_inptu", names), Some("clear_input"));
        assert_eq!(closest("sbumit", names), Some("submit"));
        assert_eq!(closest("launch_rocket", names), None);
        // A swap of neighbours is one edit.
        assert_eq!(closest("sbumit", ["submit", "sub"]), Some("submit"));
    }
}

//! What the model is told besides the conversation: the system prompt, the instruction
//! files (the user's own and the project's), and the environment block.
//!
//! The system prompt and the instructions are loaded once per session and form the
//! stable, cacheable prefix. The environment block is rebuilt before every model call
//! and travels after the conversation, so changing it never invalidates the cache.
//! Which files are read, and how, is `crate::instructions`'; the words around them are
//! here.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::git;
use crate::instructions::{self, InstructionFile, Origin, UserFile};

/// The base system prompt, shipped in `assets/`.
pub(crate) const SYSTEM_PROMPT: &str = include_str!("../../assets/system_prompt.md");

const RECENT_COMMITS: usize = 5;

/// The instructions given at the start of a session.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Instructions {
    /// The files read, in the order given, as the session header lists them: the
    /// user's as they are named (`~/.claude/CLAUDE.md`), the project's by full path.
    pub(crate) files: Vec<String>,
    /// The system block built from them; `None` when there are none.
    pub(crate) text: Option<String>,
}

/// The user's own instruction files (those of `user` that exist), then the project's
/// `CLAUDE.md` / `AGENTS.md` from the git root down to `workspace`.
pub(crate) fn load_instructions(workspace: &Path, user: &[UserFile]) -> Instructions {
    let found = instructions::at_start(workspace, user);
    for skipped in &found.skipped {
        tracing::warn!(
            file = %skipped.shown,
            origin = %skipped.origin,
            why = %skipped.why,
            "instruction file not read"
        );
    }
    Instructions {
        files: found
            .files
            .iter()
            .map(|file| match file.origin {
                Origin::User => file.shown.clone(),
                Origin::Project => file.path.display().to_string(),
            })
            .collect(),
        text: instructions_block(&found.files),
    }
}

/// The system block that gives the model `files`, the user's first.
fn instructions_block(files: &[InstructionFile]) -> Option<String> {
    let users = files.iter().any(|file| file.origin == Origin::User);
    let projects = files.iter().any(|file| file.origin == Origin::Project);
    let intro = match (users, projects) {
        (false, false) => return None,
        (false, true) => {
            "# Project instructions\n\nThe project you are working in keeps these instructions \
             for you. Follow them; where they conflict, the one nearer the working directory wins.\n"
        }
        (true, false) => {
            "# Instructions\n\nThe user keeps these instructions for you, for every project. \
             Follow them.\n"
        }
        (true, true) => {
            "# Instructions\n\nThe files marked as the user's own hold what the user asks of you \
             in every project; the others are kept by the project you are working in. Follow \
             them all; where they conflict, the project's win over the user's own (they are \
             nearer the work), and among the project's the one nearer the working directory \
             wins.\n"
        }
    };
    let mut text = String::from(intro);
    for file in files {
        let whose = match file.origin {
            Origin::User => " (the user's own)",
            Origin::Project => "",
        };
        text.push_str(&format!("\n## {}{whose}\n\n{}\n", file.shown, file.text));
    }
    Some(text)
}

/// The environment block sent after the conversation on every call.
pub(crate) fn environment_block(workspace: &Path) -> String {
    let mut block = format!(
        "<environment>\nworking directory: {}\nplatform: {}\ndate: {}\n",
        workspace.display(),
        std::env::consts::OS,
        today()
    );
    match git::summarize(workspace, RECENT_COMMITS) {
        Ok(Some(summary)) => block.push_str(&summary.render()),
        Ok(None) => block.push_str("git: not a git repository\n"),
        Err(error) => block.push_str(&format!("git: status unavailable ({error})\n")),
    }
    block.push_str("</environment>");
    block
}

/// Adds to the environment `block` the MCP servers still starting, so that the model
/// knows their tools are on the way rather than missing. Said in the block, which
/// changes freely, so the cached tools and system prefix stay as they are.
pub(crate) fn note_servers_starting(block: &mut String, servers: &[String]) {
    if servers.is_empty() {
        return;
    }
    let (names, their) = match servers {
        [one] => (format!("`{one}`"), "its tools are"),
        many => (
            many.iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", "),
            "their tools are",
        ),
    };
    let line = format!(
        "mcp: still starting: {names} ({their} offered from a later request, once ready)\n"
    );
    match block.rfind("</environment>") {
        Some(end) => block.insert_str(end, &line),
        None => block.push_str(&line),
    }
}

fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs() / 86_400)
        .unwrap_or_default();
    let (year, month, day) = civil_from_days(days as i64);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn civil_dates_are_right() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
    }

    fn file(origin: Origin, shown: &str, text: &str) -> InstructionFile {
        InstructionFile {
            origin,
            path: std::path::PathBuf::from("/").join(shown),
            shown: shown.into(),
            bytes: text.len() as u64,
            text: text.into(),
        }
    }

    #[test]
    fn the_users_instructions_come_first_and_the_projects_win() {
        let text = instructions_block(&[
            file(Origin::User, "~/.claude/CLAUDE.md", "Answer briefly."),
            file(Origin::Project, "CLAUDE.md", "Run `cargo test`."),
            file(
                Origin::Project,
                "crates/core/AGENTS.md",
                "Never touch generated.rs.",
            ),
        ])
        .unwrap();
        assert!(text.starts_with("# Instructions\n"), "{text}");
        assert!(
            text.contains("the project's win over the user's own"),
            "{text}"
        );
        let order: Vec<usize> = [
            "## ~/.claude/CLAUDE.md (the user's own)\n\nAnswer briefly.",
            "## CLAUDE.md\n\nRun `cargo test`.",
            "## crates/core/AGENTS.md\n\nNever touch generated.rs.",
        ]
        .iter()
        .map(|part| {
            text.find(part)
                .unwrap_or_else(|| panic!("{part} in {text}"))
        })
        .collect();
        assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{text}");
    }

    #[test]
    fn each_kind_alone_is_introduced_as_what_it_is() {
        let project = instructions_block(&[file(Origin::Project, "AGENTS.md", "x")]).unwrap();
        assert!(project.starts_with("# Project instructions\n"), "{project}");
        let user = instructions_block(&[file(Origin::User, "~/.codex/AGENTS.md", "x")]).unwrap();
        assert!(user.contains("for every project. Follow them."), "{user}");
        assert!(!user.contains("win over"), "{user}");
        assert_eq!(instructions_block(&[]), None);
    }

    #[test]
    fn the_session_header_names_the_users_files_as_shown_and_the_projects_in_full() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".claude")).unwrap();
        std::fs::write(home.path().join(".claude/CLAUDE.md"), "Be brief.\n").unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let workspace = workspace.path().canonicalize().unwrap();
        std::fs::write(workspace.join("AGENTS.md"), "Run it.\n").unwrap();
        let home_dir = home.path().as_os_str().to_os_string();
        let env = move |name: &str| (name == "HOME").then(|| home_dir.clone());
        let user = instructions::user_files(None, &env);

        let loaded = load_instructions(&workspace, &user);
        assert_eq!(
            loaded.files,
            [
                "~/.claude/CLAUDE.md".to_string(),
                workspace.join("AGENTS.md").display().to_string()
            ]
        );
        assert!(loaded.text.unwrap().contains("Be brief."));
    }

    #[test]
    fn servers_still_starting_are_named_inside_the_environment_block() {
        let mut block = "<environment>\ndate: today\n</environment>".to_string();
        note_servers_starting(&mut block, &[]);
        assert_eq!(block, "<environment>\ndate: today\n</environment>");
        note_servers_starting(&mut block, &["tracker".into(), "docs".into()]);
        assert_eq!(
            block,
            "<environment>\ndate: today\nmcp: still starting: `tracker`, `docs` (their tools \
             are offered from a later request, once ready)\n</environment>"
        );
    }

    #[test]
    fn environment_block_describes_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let block = environment_block(dir.path());
        assert!(block.starts_with("<environment>\n"), "{block}");
        assert!(block.contains(&format!("working directory: {}", dir.path().display())));
        assert!(block.contains("git: not a git repository"), "{block}");
        assert!(block.ends_with("</environment>"), "{block}");
    }
}

//! What the model is told besides the conversation: the system prompt, the project's
//! instruction files, and the environment block.
//!
//! The system prompt and the instructions are loaded once per session and form the
//! stable, cacheable prefix. The environment block is rebuilt before every model call
//! and travels after the conversation, so changing it never invalidates the cache.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::beneath::Root;
use crate::git;

/// The base system prompt, shipped in `assets/`.
pub(crate) const SYSTEM_PROMPT: &str = include_str!("../../assets/system_prompt.md");

/// File names duet reads as project instructions, in the order they are included.
const INSTRUCTION_FILES: [&str; 2] = ["CLAUDE.md", "AGENTS.md"];
/// Larger instruction files are cut; they are meant to be read every call.
const MAX_INSTRUCTION_BYTES: usize = 64 * 1024;
const RECENT_COMMITS: usize = 5;

/// The project instructions found for a workspace.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Instructions {
    /// Files read, outermost directory first.
    pub(crate) files: Vec<PathBuf>,
    /// The system block built from them; `None` when there are none.
    pub(crate) text: Option<String>,
}

/// Collects `CLAUDE.md` / `AGENTS.md` from the workspace and each parent up to the git
/// root (only the workspace itself when it is not in a repository).
pub(crate) fn load_instructions(workspace: &Path) -> Instructions {
    let top = git::repo_root(workspace)
        .and_then(|root| root.canonicalize().ok())
        .filter(|root| workspace.starts_with(root))
        .unwrap_or_else(|| workspace.to_path_buf());
    let mut dirs: Vec<&Path> = workspace
        .ancestors()
        .take_while(|dir| dir.starts_with(&top))
        .collect();
    dirs.reverse();

    let mut instructions = Instructions::default();
    let mut text = String::from(
        "# Project instructions\n\nThe project you are working in keeps these instructions \
         for you. Follow them; where they conflict, the one nearer the working directory wins.\n",
    );
    // Read through a handle of the top directory: an instruction file may link to
    // another one inside it (`AGENTS.md` → `CLAUDE.md`), never to anything outside
    // (`~/.aws/credentials` would otherwise go to the model in the system prompt).
    let top_handle = Root::open(&top).ok();
    for dir in dirs {
        for name in INSTRUCTION_FILES {
            let path = dir.join(name);
            let Some(bytes) = top_handle
                .as_ref()
                .zip(path.strip_prefix(&top).ok())
                .and_then(|(root, relative)| read_instruction(root, relative))
            else {
                continue;
            };
            let shown = path
                .strip_prefix(&top)
                .unwrap_or(&path)
                .display()
                .to_string();
            text.push_str(&format!("\n## {shown}\n\n{}\n", clip_instruction(&bytes)));
            instructions.files.push(path);
        }
    }
    if !instructions.files.is_empty() {
        instructions.text = Some(text);
    }
    instructions
}

/// The instruction file at `relative` below `root`, if there is one that stays inside.
fn read_instruction(root: &Root, relative: &Path) -> Option<Vec<u8>> {
    match root.open_file_following_inside(relative) {
        Ok((mut file, _)) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
            Some(bytes)
        }
        Err(error) => {
            if !error.is_not_found() {
                tracing::warn!(%error, "instruction file not read");
            }
            None
        }
    }
}

fn clip_instruction(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= MAX_INSTRUCTION_BYTES {
        return text.trim_end().to_string();
    }
    let mut cut = MAX_INSTRUCTION_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[… cut: the file is {} bytes; only the first {cut} are shown]",
        &text[..cut],
        text.len()
    )
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

    #[test]
    fn instructions_come_from_every_level_up_to_the_git_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git2::Repository::init(&root).unwrap();
        let sub = root.join("crates").join("core");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "Run `cargo test`.\n").unwrap();
        std::fs::write(sub.join("AGENTS.md"), "Never touch generated.rs.\n").unwrap();

        let found = load_instructions(&sub);
        assert_eq!(found.files, [root.join("CLAUDE.md"), sub.join("AGENTS.md")]);
        let text = found.text.unwrap();
        let outer = text.find("Run `cargo test`.").unwrap();
        let inner = text.find("Never touch generated.rs.").unwrap();
        assert!(outer < inner, "outermost first:\n{text}");
        assert!(text.contains("## crates/core/AGENTS.md"), "{text}");
    }

    #[cfg(unix)]
    #[test]
    fn an_instruction_file_may_link_inside_the_project_but_never_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git2::Repository::init(&root).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("credentials");
        std::fs::write(&secret, "aws_secret_access_key = canary\n").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "Run `cargo test`.\n").unwrap();
        std::os::unix::fs::symlink("CLAUDE.md", root.join("AGENTS.md")).unwrap();
        let sub = root.join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::os::unix::fs::symlink(&secret, sub.join("CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink(
            "../../../../../../../../../../../etc/hostname",
            sub.join("AGENTS.md"),
        )
        .unwrap();

        let found = load_instructions(&sub);
        let text = found.text.unwrap_or_default();
        assert!(!text.contains("canary"), "{text}");
        assert!(!found.files.contains(&sub.join("CLAUDE.md")));
        assert!(!found.files.contains(&sub.join("AGENTS.md")));
        assert!(text.contains("Run `cargo test`."), "{text}");
    }

    #[test]
    fn instructions_above_the_repository_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().canonicalize().unwrap();
        std::fs::write(outside.join("CLAUDE.md"), "not mine").unwrap();
        let repo = outside.join("repo");
        std::fs::create_dir(&repo).unwrap();
        git2::Repository::init(&repo).unwrap();
        assert_eq!(load_instructions(&repo), Instructions::default());
    }

    #[test]
    fn huge_instruction_files_are_cut_with_a_note() {
        let text = clip_instruction("é".repeat(MAX_INSTRUCTION_BYTES).as_bytes());
        assert!(
            text.contains("only the first"),
            "{}",
            &text[text.len() - 80..]
        );
        assert!(text.len() < MAX_INSTRUCTION_BYTES + 200);
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

use std::ffi::OsString;
use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;

use super::*;

/// A home directory, a config directory and a workspace, all temporary.
struct Dirs {
    home: tempfile::TempDir,
    config: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            config: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
        }
    }

    fn workspace(&self) -> PathBuf {
        self.workspace.path().canonicalize().unwrap()
    }

    /// The user's places with `HOME` here and `CODEX_HOME` as given.
    fn user_files(&self, codex_home: Option<&Path>) -> Vec<UserFile> {
        let home = self.home.path().as_os_str().to_os_string();
        let codex_home = codex_home.map(|dir| dir.as_os_str().to_os_string());
        let env = move |name: &str| -> Option<OsString> {
            match name {
                "HOME" => Some(home.clone()),
                "CODEX_HOME" => codex_home.clone(),
                _ => None,
            }
        };
        user_files(Some(self.config.path()), &env)
    }
}

fn write(dir: &Path, relative: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn shown(found: &Found) -> Vec<&str> {
    found.files.iter().map(|file| file.shown.as_str()).collect()
}

#[test]
fn the_users_files_are_duets_then_claude_codes_then_codexs() {
    let dirs = Dirs::new();
    let places = dirs.user_files(None);
    let paths: Vec<&Path> = places.iter().map(|place| place.path.as_path()).collect();
    assert_eq!(
        paths,
        [
            dirs.config.path().join("AGENTS.md"),
            dirs.home.path().join(".claude/CLAUDE.md"),
            dirs.home.path().join(".codex/AGENTS.md"),
        ]
    );
    assert_eq!(places[1].shown, "~/.claude/CLAUDE.md");
    assert_eq!(places[2].shown, "~/.codex/AGENTS.md");
}

#[test]
fn codex_home_moves_codexs_file_and_no_home_drops_claude_codes() {
    let dirs = Dirs::new();
    let codex = tempfile::tempdir().unwrap();
    let places = dirs.user_files(Some(codex.path()));
    assert_eq!(places[2].path, codex.path().join("AGENTS.md"));
    assert_eq!(
        places[2].shown,
        codex.path().join("AGENTS.md").display().to_string()
    );

    let empty_home = |name: &str| (name == "HOME").then(OsString::new);
    assert_eq!(user_files(None, &empty_home), Vec::new());
}

#[test]
fn the_users_files_come_first_and_only_those_that_exist() {
    let dirs = Dirs::new();
    write(dirs.config.path(), "AGENTS.md", "Answer in French.\n");
    write(
        dirs.home.path(),
        ".codex/AGENTS.md",
        "Prefer small commits.\n",
    );
    write(dirs.workspace.path(), "AGENTS.md", "Run `make test`.\n");

    let found = at_start(&dirs.workspace(), &dirs.user_files(None));
    let config_file = dirs.config.path().join("AGENTS.md").display().to_string();
    assert_eq!(
        shown(&found),
        [config_file.as_str(), "~/.codex/AGENTS.md", "AGENTS.md"]
    );
    let origins: Vec<Origin> = found.files.iter().map(|file| file.origin).collect();
    assert_eq!(origins, [Origin::User, Origin::User, Origin::Project]);
    assert_eq!(found.files[0].text, "Answer in French.");
    assert_eq!(found.files[1].bytes, 22);
    assert_eq!(found.skipped, Vec::new());
}

#[cfg(unix)]
#[test]
fn a_file_reached_by_two_names_is_given_once() {
    let dirs = Dirs::new();
    write(dirs.home.path(), ".claude/CLAUDE.md", "Be brief.\n");
    fs::create_dir_all(dirs.home.path().join(".codex")).unwrap();
    std::os::unix::fs::symlink(
        dirs.home.path().join(".claude/CLAUDE.md"),
        dirs.home.path().join(".codex/AGENTS.md"),
    )
    .unwrap();
    let found = at_start(&dirs.workspace(), &dirs.user_files(None));
    assert_eq!(shown(&found), ["~/.claude/CLAUDE.md"]);
}

#[test]
fn a_file_that_is_not_text_is_refused_and_said_so() {
    let dirs = Dirs::new();
    write(dirs.home.path(), ".claude/CLAUDE.md", b"\xff\xfe binary\n");
    fs::create_dir_all(dirs.workspace.path().join("CLAUDE.md")).unwrap();
    let found = at_start(&dirs.workspace(), &dirs.user_files(None));
    assert_eq!(found.files, Vec::new());
    assert_eq!(
        found.skipped,
        [
            Skipped {
                origin: Origin::User,
                shown: "~/.claude/CLAUDE.md".into(),
                why: Refusal::NotUtf8,
            },
            Skipped {
                origin: Origin::Project,
                shown: "CLAUDE.md".into(),
                why: Refusal::NotAFile,
            },
        ]
    );
}

#[test]
fn project_files_come_from_every_level_up_to_the_git_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    git2::Repository::init(&root).unwrap();
    let sub = root.join("crates").join("core");
    write(&root, "CLAUDE.md", "Run `cargo test`.\n");
    write(&sub, "AGENTS.md", "Never touch generated.rs.\n");

    let found = at_start(&sub, &[]);
    let paths: Vec<&Path> = found.files.iter().map(|file| file.path.as_path()).collect();
    assert_eq!(paths, [root.join("CLAUDE.md"), sub.join("AGENTS.md")]);
    assert_eq!(shown(&found), ["CLAUDE.md", "crates/core/AGENTS.md"]);
}

#[cfg(unix)]
#[test]
fn a_project_file_may_link_inside_the_project_but_never_outside() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    git2::Repository::init(&root).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("credentials");
    fs::write(&secret, "aws_secret_access_key = canary\n").unwrap();
    write(&root, "CLAUDE.md", "Run `cargo test`.\n");
    std::os::unix::fs::symlink("CLAUDE.md", root.join("AGENTS.md")).unwrap();
    let sub = root.join("sub");
    fs::create_dir(&sub).unwrap();
    std::os::unix::fs::symlink(&secret, sub.join("CLAUDE.md")).unwrap();
    std::os::unix::fs::symlink(
        "../../../../../../../../../../../etc/hostname",
        sub.join("AGENTS.md"),
    )
    .unwrap();

    let found = at_start(&sub, &[]);
    // The link inside leads to a file already given.
    assert_eq!(shown(&found), ["CLAUDE.md"]);
    assert!(found.files.iter().all(|file| !file.text.contains("canary")));
    let refused: Vec<(&str, &Refusal)> = found
        .skipped
        .iter()
        .map(|skipped| (skipped.shown.as_str(), &skipped.why))
        .collect();
    assert_eq!(
        refused,
        [
            ("sub/CLAUDE.md", &Refusal::LinkOutside),
            ("sub/AGENTS.md", &Refusal::LinkOutside)
        ]
    );
}

#[test]
fn files_above_the_repository_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().canonicalize().unwrap();
    write(&outside, "CLAUDE.md", "not mine");
    let repo = outside.join("repo");
    fs::create_dir(&repo).unwrap();
    git2::Repository::init(&repo).unwrap();
    assert_eq!(at_start(&repo, &[]), Found::default());
}

#[test]
fn huge_files_are_cut_with_a_note_on_a_character_boundary() {
    let dirs = Dirs::new();
    // Two-byte characters, so the cap falls inside one.
    write(
        dirs.workspace.path(),
        "AGENTS.md",
        format!("x{}", "é".repeat(MAX_BYTES)),
    );
    let found = at_start(&dirs.workspace(), &[]);
    let text = &found.files[0].text;
    let note = format!(
        "\n[… cut: the file is {} bytes; only the first {} are shown]",
        1 + 2 * MAX_BYTES,
        MAX_BYTES - 1
    );
    assert!(text.ends_with(&note), "{}", &text[text.len() - 100..]);
    assert_eq!(text.len(), MAX_BYTES - 1 + note.len());
    assert_eq!(found.files[0].bytes, 1 + 2 * MAX_BYTES as u64);
}

#[cfg(unix)]
#[test]
fn a_directorys_files_are_read_through_the_handle_and_shown_from_it() {
    let dirs = Dirs::new();
    let workspace = dirs.workspace();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("decoy.md"), "decoy canary\n").unwrap();
    write(
        &workspace,
        "packages/api/CLAUDE.md",
        "Use the API client.\n",
    );
    std::os::unix::fs::symlink(
        outside.path().join("decoy.md"),
        workspace.join("packages/api/AGENTS.md"),
    )
    .unwrap();
    write(&workspace, "packages/web/AGENTS.md", b"\xc3\x28 not text");
    let root = Root::open(&workspace).unwrap();

    let api = in_directory(&root, Path::new("packages/api"));
    assert_eq!(shown(&api), ["packages/api/CLAUDE.md"]);
    assert_eq!(api.files[0].text, "Use the API client.");
    assert_eq!(api.skipped[0].why, Refusal::LinkOutside);

    let web = in_directory(&root, Path::new("packages/web"));
    assert_eq!(web.files, Vec::new());
    assert_eq!(web.skipped[0].why, Refusal::NotUtf8);
    assert_eq!(
        in_directory(&root, Path::new("packages/none")),
        Found::default()
    );
}

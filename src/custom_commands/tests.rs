use std::ffi::OsString;
use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;

use super::*;

const BUILT_IN: &[&str] = &["help", "mode", "quit", "exit"];

/// A workspace, a config dir and a home, each a temp dir.
struct Dirs {
    workspace: tempfile::TempDir,
    config: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Self {
        Dirs {
            workspace: tempfile::tempdir().unwrap(),
            config: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn locations(&self, codex_home: Option<&Path>) -> Locations {
        let home = self.home.path().as_os_str().to_os_string();
        let codex_home = codex_home.map(|dir| dir.as_os_str().to_os_string());
        let env = move |name: &str| -> Option<OsString> {
            match name {
                "HOME" => Some(home.clone()),
                "CODEX_HOME" => codex_home.clone(),
                _ => None,
            }
        };
        Locations::new(self.workspace.path(), Some(self.config.path()), &env)
    }

    fn load(&self) -> Catalog {
        Catalog::load(&self.locations(None), BUILT_IN)
    }
}

fn write(dir: &Path, relative: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn names(catalog: &Catalog) -> Vec<(&str, &str)> {
    catalog
        .commands()
        .iter()
        .map(|command| (command.name.as_str(), command.file.as_str()))
        .collect()
}

fn ignored(catalog: &Catalog) -> Vec<(String, String)> {
    catalog
        .ignored()
        .iter()
        .map(|ignored| (ignored.file.clone(), ignored.why.to_string()))
        .collect()
}

#[test]
fn the_locations_are_the_users_duet_claude_codex_then_the_projects() {
    let dirs = Dirs::new();
    let locations = dirs.locations(None);
    let shown: Vec<(Origin, &str, bool)> = locations
        .sources
        .iter()
        .map(|source| (source.origin, source.shown.as_str(), source.namespaced))
        .collect();
    let config = format!("{}/commands", dirs.config.path().display());
    assert_eq!(
        shown,
        [
            (Origin::User, config.as_str(), true),
            (Origin::User, "~/.claude/commands", true),
            (Origin::User, "~/.codex/prompts", false),
            (Origin::Project, ".duet/commands", true),
            (Origin::Project, ".claude/commands", true),
        ]
    );
    let codex = tempfile::tempdir().unwrap();
    let locations = dirs.locations(Some(codex.path()));
    assert_eq!(
        locations.sources.get(2).map(|source| source.dir.clone()),
        Some(codex.path().join("prompts")),
        "$CODEX_HOME"
    );
}

#[test]
fn the_first_of_a_name_wins_and_later_ones_are_shadowed() {
    // The user's own come first: a repository never takes their `/review`.
    let dirs = Dirs::new();
    let workspace = dirs.workspace.path();
    let home = dirs.home.path();
    write(workspace, ".duet/commands/review.md", "duet's review");
    write(workspace, ".claude/commands/review.md", "claude's review");
    write(
        workspace,
        ".claude/commands/frontend/test.md",
        "Test the UI",
    );
    write(workspace, ".claude/commands/notes.txt", "not a command");
    write(dirs.config.path(), "commands/deploy.md", "Deploy");
    write(home, ".claude/commands/review.md", "my review");
    write(home, ".claude/commands/mine.md", "Mine");
    write(home, ".codex/prompts/fix.md", "Fix $1");
    write(home, ".codex/prompts/deploy.md", "Codex deploy");
    write(
        home,
        ".codex/prompts/nested/skip.md",
        "Codex reads no subdirectory",
    );

    let catalog = dirs.load();
    let config_file = format!("{}/commands/deploy.md", dirs.config.path().display());
    assert_eq!(
        names(&catalog),
        [
            ("deploy", config_file.as_str()),
            ("mine", "~/.claude/commands/mine.md"),
            ("review", "~/.claude/commands/review.md"),
            ("fix", "~/.codex/prompts/fix.md"),
            ("frontend:test", ".claude/commands/frontend/test.md"),
        ]
    );
    assert_eq!(
        ignored(&catalog),
        [
            (
                "~/.codex/prompts/deploy.md".to_string(),
                format!("/deploy is already defined by {config_file}")
            ),
            (
                ".duet/commands/review.md".to_string(),
                "/review is already defined by ~/.claude/commands/review.md".to_string()
            ),
            (
                ".claude/commands/review.md".to_string(),
                "/review is already defined by ~/.claude/commands/review.md".to_string()
            ),
        ]
    );
    let origins: Vec<Origin> = catalog.commands().iter().map(|c| c.origin).collect();
    assert_eq!(
        origins,
        [
            Origin::User,
            Origin::User,
            Origin::User,
            Origin::User,
            Origin::Project
        ]
    );
    assert_eq!(catalog.get("review").unwrap().template(), "my review");
}

#[test]
fn a_file_never_replaces_a_built_in_command() {
    let dirs = Dirs::new();
    write(
        dirs.workspace.path(),
        ".duet/commands/help.md",
        "Not the help",
    );
    write(
        dirs.workspace.path(),
        ".claude/commands/Quit.md",
        "Not quitting",
    );
    write(dirs.home.path(), ".codex/prompts/exit.md", "Not leaving");
    let catalog = dirs.load();
    assert!(catalog.is_empty(), "{:?}", names(&catalog));
    assert_eq!(
        ignored(&catalog),
        [
            (
                "~/.codex/prompts/exit.md".to_string(),
                "/exit is a built-in command, which a file cannot replace".to_string()
            ),
            (
                ".duet/commands/help.md".to_string(),
                "/help is a built-in command, which a file cannot replace".to_string()
            ),
            (
                ".claude/commands/Quit.md".to_string(),
                "/Quit is a built-in command, which a file cannot replace".to_string()
            ),
        ]
    );
}

#[test]
fn bad_names_big_binary_and_non_utf8_files_are_left_out_with_the_reason() {
    let dirs = Dirs::new();
    let commands = dirs.workspace.path().join(".duet/commands");
    write(&commands, "my command.md", "spaces");
    write(&commands, "a+b.md", "plus");
    write(&commands, "big.md", "x".repeat(MAX_FILE_BYTES as usize + 1));
    write(&commands, "exact.md", "y".repeat(MAX_FILE_BYTES as usize));
    write(&commands, "binary.md", b"PK\x03\x04\x00\x00");
    write(&commands, "latin1.md", b"caf\xe9");
    write(&commands, ".hidden.md", "an editor's file");
    write(&commands, "ok_1.2-b.md", "fine");
    write(&commands, "ns/deeper/x.md", "too deep");
    write(&commands, "bad ns/x.md", "bad namespace");
    let catalog = dirs.load();
    assert_eq!(
        names(&catalog),
        [
            ("exact", ".duet/commands/exact.md"),
            ("ok_1.2-b", ".duet/commands/ok_1.2-b.md")
        ]
    );
    let limit = MAX_FILE_BYTES + 1;
    assert_eq!(
        ignored(&catalog),
        [
            (
                ".duet/commands/a+b.md".to_string(),
                "`a+b` is not a command name (letters, digits, `_`, `-`, `.` and `:` only)"
                    .to_string()
            ),
            (
                ".duet/commands/bad ns".to_string(),
                "`bad ns` is not a command name (letters, digits, `_`, `-`, `.` and `:` only)"
                    .to_string()
            ),
            (
                ".duet/commands/big.md".to_string(),
                format!("{limit} bytes, more than the 65536 a prompt file may have")
            ),
            (
                ".duet/commands/binary.md".to_string(),
                "a binary file".to_string()
            ),
            (
                ".duet/commands/latin1.md".to_string(),
                "not UTF-8 text".to_string()
            ),
            (
                ".duet/commands/my command.md".to_string(),
                "`my command` is not a command name (letters, digits, `_`, `-`, `.` and `:` only)"
                    .to_string()
            ),
            (
                ".duet/commands/ns/deeper".to_string(),
                "nested more than one directory deep (`dir/name.md` is `/dir:name`)".to_string()
            ),
        ]
    );
}

#[cfg(unix)]
#[test]
fn a_project_link_out_of_the_workspace_is_never_read() {
    use std::os::unix::fs::symlink;

    let dirs = Dirs::new();
    let workspace = dirs.workspace.path();
    let outside = tempfile::tempdir().unwrap();
    let decoy = "DECOY-canary-never-sent";
    write(outside.path(), "secret.md", format!("{decoy}\n"));
    write(outside.path(), "commands/stolen.md", format!("{decoy}\n"));
    write(
        workspace,
        "docs/shared.md",
        "Shared prompt for $ARGUMENTS\n",
    );
    write(workspace, ".claude/commands/real.md", "Real\n");
    let commands = workspace.join(".claude/commands");
    symlink(outside.path().join("secret.md"), commands.join("leak.md")).unwrap();
    symlink("/etc/passwd", commands.join("passwd.md")).unwrap();
    symlink(
        "../../../../../../../../etc/hostname",
        commands.join("climb.md"),
    )
    .unwrap();
    symlink("../../docs/shared.md", commands.join("shared.md")).unwrap();
    // A whole commands directory linked out of the project.
    fs::create_dir_all(workspace.join(".duet")).unwrap();
    symlink(
        outside.path().join("commands"),
        workspace.join(".duet/commands"),
    )
    .unwrap();

    let catalog = dirs.load();
    assert_eq!(
        names(&catalog),
        [
            ("real", ".claude/commands/real.md"),
            ("shared", ".claude/commands/shared.md")
        ]
    );
    assert_eq!(
        catalog.get("shared").unwrap().expand("x"),
        "Shared prompt for x",
        "a link inside the project is followed"
    );
    let refused: Vec<(String, String)> = ignored(&catalog);
    let link_out = "a symbolic link out of the project (a project's files are read only inside it)";
    assert_eq!(
        refused,
        [
            (
                ".duet/commands".to_string(),
                "a symbolic link to a directory (not followed in a project)".to_string()
            ),
            (
                ".claude/commands/climb.md".to_string(),
                link_out.to_string()
            ),
            (".claude/commands/leak.md".to_string(), link_out.to_string()),
            (
                ".claude/commands/passwd.md".to_string(),
                link_out.to_string()
            ),
        ]
    );
    let everything = format!("{catalog:?}");
    assert!(!everything.contains(decoy), "{everything}");
    assert!(!everything.contains("root:"), "{everything}");
}

#[cfg(unix)]
#[test]
fn the_users_own_links_are_followed() {
    let dirs = Dirs::new();
    let elsewhere = tempfile::tempdir().unwrap();
    write(elsewhere.path(), "dotfiles/review.md", "Mine, linked\n");
    fs::create_dir_all(dirs.home.path().join(".claude")).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.path().join("dotfiles"),
        dirs.home.path().join(".claude/commands"),
    )
    .unwrap();
    let catalog = dirs.load();
    assert_eq!(
        names(&catalog),
        [("review", "~/.claude/commands/review.md")]
    );
}

#[test]
fn the_home_as_workspace_is_read_once_as_the_users() {
    let dirs = Dirs::new();
    write(dirs.home.path(), ".claude/commands/x.md", "X");
    let home = dirs.home.path().as_os_str().to_os_string();
    let env = move |name: &str| (name == "HOME").then(|| home.clone());
    let locations = Locations::new(dirs.home.path(), None, &env);
    let catalog = Catalog::load(&locations, BUILT_IN);
    assert_eq!(names(&catalog), [("x", "~/.claude/commands/x.md")]);
    assert_eq!(catalog.commands()[0].origin, Origin::User);
    assert_eq!(catalog.ignored(), []);
}

#[test]
fn missing_directories_are_no_trouble() {
    let dirs = Dirs::new();
    let catalog = dirs.load();
    assert_eq!(catalog, Catalog::default());
    let env = |_: &str| None;
    let nowhere = Locations::new(Path::new("/nonexistent/duet-test"), None, &env);
    assert_eq!(Catalog::load(&nowhere, BUILT_IN), Catalog::default());
}

#[test]
fn descriptions_come_from_front_matter_or_the_first_line() {
    let dirs = Dirs::new();
    let commands = dirs.workspace.path().join(".duet/commands");
    write(
        &commands,
        "review.md",
        "---\ndescription: Review a change\nargument-hint: \"[file]\"\n---\n\nReview $ARGUMENTS\n",
    );
    write(
        &commands,
        "plain.md",
        "\n\n# Explain the code\n\nIn detail.\n",
    );
    write(&commands, "long.md", format!("{}\n", "word ".repeat(40)));
    write(
        &commands,
        "evil.md",
        "---\ndescription: \"Hi \\e]52;c;cm0=\\a there\u{202e}\"\nargument-hint: \"a\\nb\"\n---\nx",
    );
    let catalog = dirs.load();
    let review = catalog.get("review").unwrap();
    assert_eq!(review.description, "Review a change");
    assert_eq!(review.argument_hint.as_deref(), Some("[file]"));
    assert_eq!(review.template(), "Review $ARGUMENTS");
    assert_eq!(
        catalog.get("plain").unwrap().description,
        "Explain the code"
    );
    assert_eq!(catalog.get("plain").unwrap().argument_hint, None);
    let long = &catalog.get("long").unwrap().description;
    assert_eq!(long.chars().count(), 80);
    assert!(long.ends_with("word…"), "{long}");
    let evil = catalog.get("evil").unwrap();
    assert!(
        evil.description
            .chars()
            .all(|c| !c.is_control() && terminal_text::hidden(c).is_none()),
        "{:?}",
        evil.description
    );
    assert_eq!(evil.argument_hint.as_deref(), Some("a b"));
}

#[test]
fn a_name_is_found_exactly_or_else_regardless_of_case() {
    let catalog = Catalog::from_commands(vec![
        CustomCommand::new("Review", "big", Origin::User, "a"),
        CustomCommand::new("review", "small", Origin::User, "b"),
    ]);
    assert_eq!(catalog.get("review").unwrap().template(), "small");
    assert_eq!(catalog.get("Review").unwrap().template(), "big");
    assert_eq!(catalog.get("REVIEW").unwrap().template(), "big");
    assert_eq!(catalog.get("nope"), None);
}

#[test]
fn names_are_ascii_words_dots_dashes_and_colons() {
    for good in ["a", "frontend:test", "v1.2", "x_y-z", "ABC"] {
        assert!(valid_name(good), "{good}");
    }
    for bad in ["", "a b", "a/b", "é", "a+b", "$x"] {
        assert!(!valid_name(bad), "{bad}");
    }
}

//! Where hooks are configured and how their entries read: the `[hooks]` table of
//! duet's config and `.duet/hooks.toml` (one flat entry per hook), and Claude Code's
//! `.claude/settings.json` (its `hooks` object, nested as Claude Code nests it).
//!
//! Owns: parsing entries into [`Hook`]s, checking matchers and events, and refusing
//! what a project may not claim (`trusted`). Does not own: deciding whether a project's
//! files are read at all (the caller asks [`HooksSection::trusts_project`]) or running
//! anything.
//! Invariant: a project's hook is never trusted, whatever its file says; a bad entry is
//! an error naming its file and entry, never a hook that runs differently than written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::{Hook, HookEvent, Matcher, OnFailure, Origin};

/// How long a hook may run unless its entry says otherwise (Claude Code's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest time limit an entry may ask for.
const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Project hook files larger than this are refused.
pub const MAX_PROJECT_FILE_BYTES: usize = 256 * 1024;

/// The `[hooks]` table of duet's config: the user's hooks by event, and the
/// workspaces whose own hooks may run.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    /// Workspaces (absolute, or `~/...`) whose `.duet/hooks.toml` and
    /// `.claude/settings.json` hooks run, in the sandbox.
    #[serde(default)]
    pub trusted_projects: Vec<String>,
    #[serde(default, rename = "PreToolUse")]
    pub pre_tool_use: Vec<Entry>,
    #[serde(default, rename = "PostToolUse")]
    pub post_tool_use: Vec<Entry>,
    #[serde(default, rename = "UserPromptSubmit")]
    pub user_prompt_submit: Vec<Entry>,
    #[serde(default, rename = "Stop")]
    pub stop: Vec<Entry>,
    #[serde(default, rename = "SessionStart")]
    pub session_start: Vec<Entry>,
    #[serde(default, rename = "SessionEnd")]
    pub session_end: Vec<Entry>,
    #[serde(default, rename = "Notification")]
    pub notification: Vec<Entry>,
}

/// One hook as duet's TOML writes it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// A regular expression matched against the whole tool name (duet's, or Claude
    /// Code's alias: `Bash`, `Edit`, ...); empty or `*` matches every tool.
    #[serde(default)]
    pub matcher: Option<String>,
    /// Run with `sh -c` in the workspace root.
    pub command: String,
    /// Seconds.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Runs outside the sandbox, with the user's environment, and may loosen a
    /// decision (`allow`). Only the user's own config can say so.
    #[serde(default)]
    pub trusted: bool,
    /// What a hook that fails to run, times out or exits with another status than 0
    /// or 2 means: `continue` (as Claude Code does) or `block`.
    #[serde(default)]
    pub on_failure: Option<String>,
}

/// Why a hook configuration was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HookConfigError {
    #[error("{}: {what}", file.display())]
    Invalid { file: PathBuf, what: String },
}

impl HooksSection {
    /// The user's hooks, from their config file `file`.
    pub fn user_hooks(&self, file: &Path) -> Result<Vec<Hook>, HookConfigError> {
        let origin = Origin::User(file.to_path_buf());
        let mut hooks = Vec::new();
        for (event, entries) in self.by_event() {
            for (index, entry) in entries.iter().enumerate() {
                hooks.push(entry.to_hook(event, index, &origin, file)?);
            }
        }
        Ok(hooks)
    }

    /// Whether the user's config lets `workspace`'s own hooks run.
    pub fn trusts_project(&self, workspace: &Path, home: Option<&Path>) -> bool {
        let canonical = |path: &Path| std::fs::canonicalize(path).ok();
        let Some(workspace) = canonical(workspace) else {
            return false;
        };
        self.trusted_projects.iter().any(|listed| {
            let listed = match (listed.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(listed),
            };
            listed.is_absolute() && canonical(&listed).as_deref() == Some(workspace.as_path())
        })
    }

    fn by_event(&self) -> [(HookEvent, &Vec<Entry>); 7] {
        [
            (HookEvent::PreToolUse, &self.pre_tool_use),
            (HookEvent::PostToolUse, &self.post_tool_use),
            (HookEvent::UserPromptSubmit, &self.user_prompt_submit),
            (HookEvent::Stop, &self.stop),
            (HookEvent::SessionStart, &self.session_start),
            (HookEvent::SessionEnd, &self.session_end),
            (HookEvent::Notification, &self.notification),
        ]
    }
}

impl Entry {
    fn to_hook(
        &self,
        event: HookEvent,
        index: usize,
        origin: &Origin,
        file: &Path,
    ) -> Result<Hook, HookConfigError> {
        let invalid = |what: String| HookConfigError::Invalid {
            file: file.to_path_buf(),
            what: format!("{} hook {}: {what}", event.name(), index + 1),
        };
        if self.command.trim().is_empty() {
            return Err(invalid("`command` is empty".into()));
        }
        let matcher = match self.matcher.as_deref() {
            Some(pattern) => Matcher::new(pattern).map_err(invalid)?,
            None => Matcher::All,
        };
        if !event.has_matcher() && matcher != Matcher::All {
            return Err(invalid(format!(
                "{} hooks take no `matcher` (it applies to tool events)",
                event.name()
            )));
        }
        let timeout = match self.timeout {
            None => DEFAULT_TIMEOUT,
            Some(0) => return Err(invalid("`timeout` must be at least 1 second".into())),
            Some(secs) => Duration::from_secs(secs).min(MAX_TIMEOUT),
        };
        let on_failure = match self.on_failure.as_deref() {
            None | Some("continue") => OnFailure::Continue,
            Some("block") => OnFailure::Block,
            Some(other) => {
                return Err(invalid(format!(
                    "`on_failure` is `continue` or `block`, not `{other}`"
                )));
            }
        };
        let project = matches!(origin, Origin::Project(_));
        if project && self.trusted {
            return Err(invalid(
                "a project cannot mark its own hooks `trusted`; only your config can".into(),
            ));
        }
        Ok(Hook {
            event,
            matcher,
            command: self.command.clone(),
            timeout,
            trusted: self.trusted && !project,
            on_failure,
            origin: origin.clone(),
        })
    }
}

/// A project's `.duet/hooks.toml`: the same entries as the `[hooks]` table, without
/// `trusted_projects`.
pub fn parse_project_toml(text: &str, file: &Path) -> Result<Vec<Hook>, HookConfigError> {
    let section: HooksSection = toml::from_str(text).map_err(|error| HookConfigError::Invalid {
        file: file.to_path_buf(),
        what: error.message().to_string(),
    })?;
    if !section.trusted_projects.is_empty() {
        return Err(HookConfigError::Invalid {
            file: file.to_path_buf(),
            what: "`trusted_projects` belongs in your own config, not a project's".into(),
        });
    }
    let origin = Origin::Project(file.to_path_buf());
    let mut hooks = Vec::new();
    for (event, entries) in section.by_event() {
        for (index, entry) in entries.iter().enumerate() {
            hooks.push(entry.to_hook(event, index, &origin, file)?);
        }
    }
    Ok(hooks)
}

/// Claude Code's settings file: `{"hooks": {"PreToolUse": [{"matcher": "Bash",
/// "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}`. Other keys
/// and events duet does not have are ignored; hooks of another `type` than `command`
/// are skipped.
pub fn parse_claude_settings(text: &str, file: &Path) -> Result<Vec<Hook>, HookConfigError> {
    #[derive(Deserialize)]
    struct Settings {
        #[serde(default)]
        hooks: std::collections::BTreeMap<String, Vec<Group>>,
    }
    #[derive(Deserialize)]
    struct Group {
        #[serde(default)]
        matcher: Option<String>,
        #[serde(default)]
        hooks: Vec<Command>,
    }
    #[derive(Deserialize)]
    struct Command {
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(default)]
        command: Option<String>,
        #[serde(default)]
        timeout: Option<f64>,
        #[serde(rename = "onFailure", default)]
        on_failure: Option<String>,
    }
    let settings: Settings =
        serde_json::from_str(text).map_err(|error| HookConfigError::Invalid {
            file: file.to_path_buf(),
            what: error.to_string(),
        })?;
    let origin = Origin::Project(file.to_path_buf());
    let mut hooks = Vec::new();
    for (name, groups) in settings.hooks {
        let Some(event) = HookEvent::from_name(&name) else {
            continue;
        };
        for (index, group) in groups.into_iter().enumerate() {
            for command in group.hooks {
                if command
                    .kind
                    .as_deref()
                    .is_some_and(|kind| kind != "command")
                {
                    continue;
                }
                let Some(script) = command.command else {
                    continue;
                };
                let entry = Entry {
                    // Claude Code gives tool events' matchers to every event; duet only
                    // matches tools.
                    matcher: group.matcher.clone().filter(|_| event.has_matcher()),
                    command: script,
                    timeout: command.timeout.map(|secs| secs.ceil().max(1.0) as u64),
                    trusted: false,
                    on_failure: command.on_failure,
                };
                hooks.push(entry.to_hook(event, index, &origin, file)?);
            }
        }
    }
    Ok(hooks)
}

/// A trusted project's hooks: `.duet/hooks.toml`, then `.claude/settings.json` (and
/// `.claude/settings.local.json`), read through a handle of the workspace (a link out
/// of it is refused, never followed). Problems are returned beside the hooks that
/// could be read: a project's file never keeps duet from starting.
pub fn project_hooks(workspace: &Path) -> (Vec<Hook>, Vec<String>) {
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    let root = match crate::beneath::Root::open(workspace) {
        Ok(root) => root,
        Err(error) => {
            problems.push(format!("project hooks not read: {error}"));
            return (hooks, problems);
        }
    };
    type Parser = fn(&str, &Path) -> Result<Vec<Hook>, HookConfigError>;
    let files: [(&str, Parser); 3] = [
        (".duet/hooks.toml", parse_project_toml),
        (".claude/settings.json", parse_claude_settings),
        (".claude/settings.local.json", parse_claude_settings),
    ];
    for (relative, parse) in files {
        let shown = workspace.join(relative);
        let text = match read_project_file(&root, Path::new(relative)) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(why) => {
                problems.push(format!("{}: {why}; its hooks do not run", shown.display()));
                continue;
            }
        };
        match parse(&text, &shown) {
            Ok(found) => hooks.extend(found),
            Err(error) => problems.push(format!("{error}; its hooks do not run")),
        }
    }
    (hooks, problems)
}

/// The text of a project file, `None` when it does not exist.
fn read_project_file(
    root: &crate::beneath::Root,
    relative: &Path,
) -> Result<Option<String>, String> {
    use std::io::Read as _;
    let (file, meta) = match root.open_file(relative) {
        Ok(opened) => opened,
        Err(error) if error.is_not_found() => return Ok(None),
        Err(error) => return Err(error.to_string()),
    };
    if meta.len() > MAX_PROJECT_FILE_BYTES as u64 {
        return Err(format!("larger than {MAX_PROJECT_FILE_BYTES} bytes"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_PROJECT_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| error.to_string())?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "not UTF-8 text".to_string())
}

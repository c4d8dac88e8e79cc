//! Protected paths: files no mode changes without a person saying yes.
//!
//! Owns: the default globs (git metadata and configuration that runs programs, hook
//! managers and the repository's active hooks directory, CI configuration, editor and
//! agent configuration that runs commands, lockfiles, environment files, keys), the
//! user's additions and exceptions (`[policy] protected`, where `!glob` unprotects),
//! naming the protection a path falls under, and listing the protected paths that
//! exist in a workspace ([`ProtectedPaths::existing_in`]) for the sandbox to mount
//! read-only.
//! Does not own: what happens to a protected write (`Policy::judge` asks; front ends
//! refuse it headless), or enforcing it (the shell's sandbox does).
//! Invariant: matching is on the path relative to the workspace root, case-folded (on
//! a case-insensitive file system `.GIT/hooks` is `.git/hooks`). A pattern with a `/`
//! matches the whole relative path; one without matches the file name at any depth.
//! The last matching pattern decides, as in `.gitignore`: the user's come after the
//! defaults, so `!Cargo.lock` unprotects the lockfile and a later pattern protects again.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use globset::{Candidate, GlobBuilder, GlobSet, GlobSetBuilder};

use crate::pathglob::PathGlob;

/// Why a path is protected by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    GitMetadata,
    /// Files git reads from the work tree that can make it run programs.
    GitConfiguration,
    /// Hooks git runs, and hook managers' configuration.
    GitHooks,
    CiConfig,
    /// Editor settings and tasks that run commands when the project is opened.
    EditorConfig,
    /// duet's own and other agents' configuration, hooks and instructions.
    AgentConfig,
    Lockfile,
    Environment,
    Key,
    /// Listed in the user's `[policy] protected`.
    Configured,
}

const DEFAULTS: &[(&str, Kind)] = &[
    ("**/.git", Kind::GitMetadata),
    ("**/.git/**", Kind::GitMetadata),
    (".gitattributes", Kind::GitConfiguration),
    (".gitmodules", Kind::GitConfiguration),
    (".husky/**", Kind::GitHooks),
    (".githooks/**", Kind::GitHooks),
    (".pre-commit-config.yaml", Kind::GitHooks),
    ("lefthook.yml", Kind::GitHooks),
    (".lefthook.yml", Kind::GitHooks),
    ("lefthook-local.yml", Kind::GitHooks),
    (".overcommit.yml", Kind::GitHooks),
    (".github/workflows/**", Kind::CiConfig),
    (".gitlab-ci.yml", Kind::CiConfig),
    (".ci/**", Kind::CiConfig),
    (".circleci/**", Kind::CiConfig),
    (".vscode/settings.json", Kind::EditorConfig),
    (".vscode/tasks.json", Kind::EditorConfig),
    (".vscode/launch.json", Kind::EditorConfig),
    ("*.code-workspace", Kind::EditorConfig),
    (".idea/workspace.xml", Kind::EditorConfig),
    (".idea/runConfigurations/**", Kind::EditorConfig),
    (".duet/**", Kind::AgentConfig),
    // The model's own notes (`duet exec --done` has it keep them there).
    ("!.duet/notes.md", Kind::AgentConfig),
    (".mcp.json", Kind::AgentConfig),
    (".claude/**", Kind::AgentConfig),
    (".cursor/**", Kind::AgentConfig),
    ("CLAUDE.md", Kind::AgentConfig),
    ("AGENTS.md", Kind::AgentConfig),
    ("Cargo.lock", Kind::Lockfile),
    ("package-lock.json", Kind::Lockfile),
    ("npm-shrinkwrap.json", Kind::Lockfile),
    ("yarn.lock", Kind::Lockfile),
    ("pnpm-lock.yaml", Kind::Lockfile),
    ("bun.lock", Kind::Lockfile),
    ("bun.lockb", Kind::Lockfile),
    ("poetry.lock", Kind::Lockfile),
    ("Pipfile.lock", Kind::Lockfile),
    ("uv.lock", Kind::Lockfile),
    ("pdm.lock", Kind::Lockfile),
    ("Gemfile.lock", Kind::Lockfile),
    ("go.sum", Kind::Lockfile),
    ("composer.lock", Kind::Lockfile),
    ("mix.lock", Kind::Lockfile),
    ("pubspec.lock", Kind::Lockfile),
    ("Podfile.lock", Kind::Lockfile),
    ("flake.lock", Kind::Lockfile),
    ("packages.lock.json", Kind::Lockfile),
    ("gradle.lockfile", Kind::Lockfile),
    (".env", Kind::Environment),
    (".env.*", Kind::Environment),
    (".envrc", Kind::Environment),
    ("*.pem", Kind::Key),
    ("*.key", Kind::Key),
    ("*.p12", Kind::Key),
    ("*.pfx", Kind::Key),
    ("id_rsa*", Kind::Key),
    ("id_dsa*", Kind::Key),
    ("id_ecdsa*", Kind::Key),
    ("id_ed25519*", Kind::Key),
];

/// One protected path and why, as shown to the user and the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Protection {
    /// Relative to the workspace root.
    pub path: String,
    /// e.g. "lockfile", "git metadata".
    pub why: String,
}

impl std::fmt::Display for Protection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is protected ({})", self.path, self.why)
    }
}

/// A `[policy] protected` pattern that is not a valid glob.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}` in [policy] protected is not a valid glob: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub reason: String,
}

#[derive(Clone, Debug)]
struct Rule {
    pattern: String,
    /// Compiled from the lower-cased pattern; matched against lower-cased paths.
    glob: PathGlob,
    /// The lower-cased pattern (without `!`).
    folded: String,
    kind: Kind,
    /// `!pattern`: matching paths are not protected.
    exception: bool,
    /// The directory every match lies under, when the pattern starts with one
    /// (`.github/workflows` for `.github/workflows/**`), lower-cased.
    base: Option<PathBuf>,
}

impl Rule {
    fn new(pattern: &str, kind: Kind) -> Result<Self, PatternError> {
        let (exception, glob) = match pattern.strip_prefix('!') {
            Some(glob) => (true, glob),
            None => (false, pattern),
        };
        let folded = glob.to_lowercase();
        let compiled = PathGlob::new(&folded).map_err(|error| PatternError {
            pattern: pattern.to_string(),
            reason: error.reason,
        })?;
        let whole_path = compiled.is_whole_path();
        let literal: PathBuf = Path::new(&folded)
            .components()
            .take_while(|component| {
                !component
                    .as_os_str()
                    .to_string_lossy()
                    .contains(['*', '?', '[', '{'])
            })
            .collect();
        Ok(Self {
            pattern: pattern.to_string(),
            glob: compiled,
            folded,
            kind,
            exception,
            base: (whole_path && !literal.as_os_str().is_empty()).then_some(literal),
        })
    }

    /// `folded` is a lower-cased relative path.
    fn matches(&self, folded: &Path) -> bool {
        self.glob.matches(folded)
    }

    fn why(&self) -> String {
        match self.kind {
            Kind::GitMetadata => "git metadata".into(),
            Kind::GitConfiguration => "git configuration that can run programs".into(),
            Kind::GitHooks => "git hooks".into(),
            Kind::CiConfig => "CI configuration".into(),
            Kind::EditorConfig => "editor configuration that can run commands".into(),
            Kind::AgentConfig => "agent configuration or instructions".into(),
            Kind::Lockfile => "lockfile".into(),
            Kind::Environment => "environment file".into(),
            Kind::Key => "key file".into(),
            Kind::Configured => format!("matches `{}` in [policy] protected", self.pattern),
        }
    }
}

/// Every rule's glob in two sets, matched in one pass each: whole-path patterns
/// against the path, name-only ones against the file name. Walking a large tree checks
/// every entry, so one pass instead of one regex per rule matters.
#[derive(Clone, Debug)]
struct Matcher {
    whole: GlobSet,
    /// The rule index of each glob in `whole`.
    whole_rules: Vec<usize>,
    names: GlobSet,
    name_rules: Vec<usize>,
}

impl Matcher {
    /// `None` if a set does not build (then rules are matched one by one).
    fn new(rules: &[Rule]) -> Option<Self> {
        let mut whole = GlobSetBuilder::new();
        let mut whole_rules = Vec::new();
        let mut names = GlobSetBuilder::new();
        let mut name_rules = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            let glob = GlobBuilder::new(&rule.folded)
                .literal_separator(true)
                .build()
                .ok()?;
            if rule.glob.is_whole_path() {
                whole.add(glob);
                whole_rules.push(index);
            } else {
                names.add(glob);
                name_rules.push(index);
            }
        }
        Some(Self {
            whole: whole.build().ok()?,
            whole_rules,
            names: names.build().ok()?,
            name_rules,
        })
    }

    /// The index of the last rule matching `folded`.
    fn last_match(&self, folded: &Path) -> Option<usize> {
        let mut last = self
            .whole
            .matches_candidate(&Candidate::new(folded))
            .into_iter()
            .filter_map(|at| self.whole_rules.get(at).copied())
            .max();
        if let Some(name) = folded.file_name() {
            let by_name = self
                .names
                .matches_candidate(&Candidate::new(name))
                .into_iter()
                .filter_map(|at| self.name_rules.get(at).copied())
                .max();
            last = last.max(by_name);
        }
        last
    }
}

/// The protected paths: the defaults plus the user's patterns.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "Vec<String>")]
pub struct ProtectedPaths {
    rules: Vec<Rule>,
    /// The user's patterns as written.
    configured: Vec<String>,
    matcher: Option<Matcher>,
}

impl Default for ProtectedPaths {
    fn default() -> Self {
        let rules = DEFAULTS
            .iter()
            .filter_map(|&(pattern, kind)| Rule::new(pattern, kind).ok())
            .collect();
        Self::from_rules(rules, Vec::new())
    }
}

impl PartialEq for ProtectedPaths {
    fn eq(&self, other: &Self) -> bool {
        self.configured == other.configured
    }
}

impl TryFrom<Vec<String>> for ProtectedPaths {
    type Error = PatternError;

    fn try_from(patterns: Vec<String>) -> Result<Self, Self::Error> {
        Self::with_patterns(&patterns)
    }
}

/// The protected paths that exist in a workspace, found by
/// [`ProtectedPaths::existing_in`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExistingProtected {
    /// Relative to the workspace root, sorted. A protected directory is listed once,
    /// without what it holds (`.git`, `.github/workflows`).
    pub paths: Vec<PathBuf>,
    /// False when the walk stopped at [`MAX_WALKED_ENTRIES`] or [`MAX_WALKED_DEPTH`] (or a
    /// directory could not be read): paths beyond are not listed.
    pub complete: bool,
}

/// The most directory entries [`ProtectedPaths::existing_in`] looks at.
pub const MAX_WALKED_ENTRIES: usize = 500_000;
/// The deepest directory [`ProtectedPaths::existing_in`] descends into.
pub const MAX_WALKED_DEPTH: usize = 48;

impl ProtectedPaths {
    /// The defaults plus `patterns` (`!pattern` unprotects whatever it matches).
    pub fn with_patterns(patterns: &[String]) -> Result<Self, PatternError> {
        let mut rules = Self::default().rules;
        for pattern in patterns {
            rules.push(Rule::new(pattern, Kind::Configured)?);
        }
        Ok(Self::from_rules(rules, patterns.to_vec()))
    }

    fn from_rules(rules: Vec<Rule>, configured: Vec<String>) -> Self {
        let matcher = Matcher::new(&rules);
        Self {
            rules,
            configured,
            matcher,
        }
    }

    /// The last rule matching `folded` (a lower-cased relative path): the one that
    /// decides.
    fn last_match(&self, folded: &Path) -> Option<&Rule> {
        match &self.matcher {
            Some(matcher) => matcher
                .last_match(folded)
                .and_then(|index| self.rules.get(index)),
            None => self.rules.iter().rev().find(|rule| rule.matches(folded)),
        }
    }

    /// Also protects the directory git runs hooks from (`core.hooksPath`), given
    /// relative to the workspace root. It goes before the user's patterns, so an
    /// exception there still applies.
    pub fn protect_hooks_dir(&mut self, relative: &Path) {
        let Some(dir) = relative.to_str().filter(|dir| !dir.is_empty()) else {
            return;
        };
        let escaped = globset::escape(dir.trim_end_matches('/'));
        let at = self
            .rules
            .iter()
            .position(|rule| rule.kind == Kind::Configured)
            .unwrap_or(self.rules.len());
        let rules = [escaped.clone(), format!("{escaped}/**")]
            .iter()
            .filter_map(|pattern| Rule::new(pattern, Kind::GitHooks).ok())
            .collect::<Vec<_>>();
        self.rules.splice(at..at, rules);
        self.matcher = Matcher::new(&self.rules);
    }

    /// The protection `relative` (to the workspace root) falls under, if any.
    pub fn check(&self, relative: &Path) -> Option<Protection> {
        let rule = self.last_match(&fold(relative))?;
        (!rule.exception).then(|| Protection {
            path: shown(relative),
            why: rule.why(),
        })
    }

    /// Protected paths a recursive delete of `directory` would reach: the repository's
    /// `.git` for the root (which says enough), else every protected directory below
    /// `directory` that a pattern names (`.github/workflows` for `.github`). Files a
    /// name-only pattern matches (`Cargo.lock`) could be anywhere and are not guessed.
    pub fn inside(&self, directory: &Path) -> Vec<Protection> {
        if directory.as_os_str().is_empty() {
            return self.check(Path::new(".git")).into_iter().collect();
        }
        let folded = fold(directory);
        let mut found: Vec<Protection> = Vec::new();
        for rule in &self.rules {
            let Some(base) = rule.base.as_deref() else {
                continue;
            };
            if rule.exception || !base.starts_with(&folded) || self.excepted(base) {
                continue;
            }
            let protection = Protection {
                path: shown(base),
                why: rule.why(),
            };
            if !found.contains(&protection) {
                found.push(protection);
            }
        }
        found
    }

    /// Whether the walk lists `relative`: a path a rule protects itself (`.git`,
    /// `Cargo.lock`), or a directory a rule protects as a whole (`.github/workflows`
    /// for `.github/workflows/**`). One match per entry: the walk calls this for each.
    fn listed(&self, relative: &Path, is_directory: bool) -> bool {
        let folded = fold(relative);
        let last = self.last_match(&folded);
        if last.is_some_and(|rule| !rule.exception) {
            return true;
        }
        let excepted = last.is_some_and(|rule| rule.exception);
        is_directory
            && !excepted
            && self.rules.iter().any(|rule| {
                !rule.exception
                    && rule.pattern.ends_with("/**")
                    && rule.base.as_deref() == Some(folded.as_path())
            })
    }

    /// Whether the last pattern matching `folded` (lower-cased) unprotects it.
    fn excepted(&self, folded: &Path) -> bool {
        self.last_match(folded).is_some_and(|rule| rule.exception)
    }

    /// The protected paths that exist under `root`, relative to it, for the sandbox to
    /// make read-only. The walk never follows symbolic links (a link at a protected
    /// name is listed itself), lists a protected directory without entering it, and
    /// stops after [`MAX_WALKED_ENTRIES`] entries or below [`MAX_WALKED_DEPTH`] levels,
    /// saying so in [`ExistingProtected::complete`].
    pub fn existing_in(&self, root: &Path) -> ExistingProtected {
        let mut found = ExistingProtected {
            paths: Vec::new(),
            complete: true,
        };
        let mut pending: VecDeque<(PathBuf, usize)> = VecDeque::from([(PathBuf::new(), 0)]);
        let mut walked = 0usize;
        while let Some((directory, depth)) = pending.pop_front() {
            let Ok(entries) = std::fs::read_dir(root.join(&directory)) else {
                found.complete = false;
                continue;
            };
            for entry in entries {
                let Ok(entry) = entry else {
                    found.complete = false;
                    continue;
                };
                walked += 1;
                if walked > MAX_WALKED_ENTRIES {
                    found.complete = false;
                    found.paths.sort();
                    return found;
                }
                let relative = directory.join(entry.file_name());
                let kind = entry.file_type().ok();
                let is_directory = kind.is_some_and(|kind| kind.is_dir());
                // A link at a protected directory's name is listed as that directory.
                let is_link = kind.is_some_and(|kind| kind.is_symlink());
                if self.listed(&relative, is_directory || is_link) {
                    found.paths.push(relative);
                } else if is_directory {
                    if depth + 1 < MAX_WALKED_DEPTH {
                        pending.push_back((relative, depth + 1));
                    } else {
                        found.complete = false;
                    }
                }
            }
        }
        found.paths.sort();
        found
    }
}

/// The path as matched: lower-cased, so case variants of a protected name match.
fn fold(relative: &Path) -> PathBuf {
    PathBuf::from(relative.to_string_lossy().to_lowercase())
}

/// A root-relative path for messages; the root itself is `.`.
pub(crate) fn shown(relative: &Path) -> String {
    if relative.as_os_str().is_empty() {
        ".".to_string()
    } else {
        relative.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn why(paths: &ProtectedPaths, path: &str) -> Option<String> {
        paths
            .check(Path::new(path))
            .map(|protection| protection.to_string())
    }

    #[test]
    fn defaults_cover_git_ci_lockfiles_env_and_keys() {
        let paths = ProtectedPaths::default();
        let table = [
            (".git", Some(".git is protected (git metadata)")),
            (
                ".git/config",
                Some(".git/config is protected (git metadata)"),
            ),
            (
                "vendor/lib/.git/HEAD",
                Some("vendor/lib/.git/HEAD is protected (git metadata)"),
            ),
            (
                ".github/workflows/ci.yml",
                Some(".github/workflows/ci.yml is protected (CI configuration)"),
            ),
            (
                ".gitlab-ci.yml",
                Some(".gitlab-ci.yml is protected (CI configuration)"),
            ),
            (
                ".circleci/config.yml",
                Some(".circleci/config.yml is protected (CI configuration)"),
            ),
            ("Cargo.lock", Some("Cargo.lock is protected (lockfile)")),
            (
                "web/package-lock.json",
                Some("web/package-lock.json is protected (lockfile)"),
            ),
            ("go.sum", Some("go.sum is protected (lockfile)")),
            (".env", Some(".env is protected (environment file)")),
            (
                ".env.production",
                Some(".env.production is protected (environment file)"),
            ),
            (
                "certs/server.pem",
                Some("certs/server.pem is protected (key file)"),
            ),
            (
                "id_ed25519.pub",
                Some("id_ed25519.pub is protected (key file)"),
            ),
            (".envrc", Some(".envrc is protected (environment file)")),
            (
                ".gitattributes",
                Some(".gitattributes is protected (git configuration that can run programs)"),
            ),
            (
                "sub/.gitattributes",
                Some("sub/.gitattributes is protected (git configuration that can run programs)"),
            ),
            (
                ".gitmodules",
                Some(".gitmodules is protected (git configuration that can run programs)"),
            ),
            (
                ".husky/pre-commit",
                Some(".husky/pre-commit is protected (git hooks)"),
            ),
            (
                ".pre-commit-config.yaml",
                Some(".pre-commit-config.yaml is protected (git hooks)"),
            ),
            (
                ".vscode/settings.json",
                Some(
                    ".vscode/settings.json is protected (editor configuration that can run commands)",
                ),
            ),
            (
                ".vscode/tasks.json",
                Some(
                    ".vscode/tasks.json is protected (editor configuration that can run commands)",
                ),
            ),
            (
                "x.code-workspace",
                Some("x.code-workspace is protected (editor configuration that can run commands)"),
            ),
            (
                ".idea/workspace.xml",
                Some(
                    ".idea/workspace.xml is protected (editor configuration that can run commands)",
                ),
            ),
            (
                ".mcp.json",
                Some(".mcp.json is protected (agent configuration or instructions)"),
            ),
            (
                ".duet/mcp.toml",
                Some(".duet/mcp.toml is protected (agent configuration or instructions)"),
            ),
            (
                ".claude/settings.json",
                Some(".claude/settings.json is protected (agent configuration or instructions)"),
            ),
            (
                ".claude/commands/x.md",
                Some(".claude/commands/x.md is protected (agent configuration or instructions)"),
            ),
            (
                "AGENTS.md",
                Some("AGENTS.md is protected (agent configuration or instructions)"),
            ),
            (".duet/notes.md", None),
            ("src/main.rs", None),
            (".github/dependabot.yml", None),
            (".vscode/extensions.json", None),
            ("environment.rs", None),
            ("Cargo.toml", None),
        ];
        for (path, expected) in table {
            assert_eq!(why(&paths, path).as_deref(), expected, "{path}");
        }
    }

    /// Checklist J23: on a case-insensitive file system `.GIT/hooks/x` is
    /// `.git/hooks/x`, so protected names match in any case.
    #[test]
    fn protected_names_match_in_any_case() {
        let paths = ProtectedPaths::default();
        for (path, kind) in [
            (".GIT/hooks/x", "git metadata"),
            (".Git/config", "git metadata"),
            ("sub/.gIt", "git metadata"),
            (
                ".Vscode/settings.json",
                "editor configuration that can run commands",
            ),
            (
                ".vscode/SETTINGS.JSON",
                "editor configuration that can run commands",
            ),
            (".MCP.json", "agent configuration or instructions"),
            ("CARGO.LOCK", "lockfile"),
            (".GitHub/Workflows/ci.yml", "CI configuration"),
            (".ENVRC", "environment file"),
        ] {
            assert_eq!(
                why(&paths, path),
                Some(format!("{path} is protected ({kind})")),
                "{path}"
            );
        }
        let configured = ProtectedPaths::with_patterns(&["Secrets/**".to_string()]).unwrap();
        assert!(configured.check(Path::new("secrets/a")).is_some());
        assert!(configured.check(Path::new("SECRETS/a")).is_some());
    }

    #[test]
    fn the_last_matching_pattern_decides() {
        let paths = ProtectedPaths::with_patterns(&[
            "!.env".to_string(),
            "docs/**".to_string(),
            "!docs/public/**".to_string(),
            ".duet/notes.md".to_string(),
        ])
        .unwrap();
        assert_eq!(why(&paths, ".env"), None);
        assert!(why(&paths, "docs/a.md").is_some());
        assert_eq!(why(&paths, "docs/public/a.md"), None);
        assert_eq!(
            why(&paths, ".duet/notes.md").as_deref(),
            Some(".duet/notes.md is protected (matches `.duet/notes.md` in [policy] protected)"),
            "a user's pattern overrides a default exception"
        );
    }

    #[test]
    fn the_hooks_directory_is_protected_unless_the_user_says_otherwise() {
        let mut paths = ProtectedPaths::default();
        paths.protect_hooks_dir(Path::new("tools/hooks"));
        assert_eq!(
            why(&paths, "tools/hooks/pre-commit").as_deref(),
            Some("tools/hooks/pre-commit is protected (git hooks)")
        );
        assert!(why(&paths, "tools/hooks").is_some());
        assert_eq!(why(&paths, "tools/other"), None);
        assert_eq!(
            paths
                .inside(Path::new("tools"))
                .into_iter()
                .map(|protection| protection.path)
                .collect::<Vec<_>>(),
            ["tools/hooks"]
        );

        let mut unprotected =
            ProtectedPaths::with_patterns(&["!tools/hooks/**".to_string()]).unwrap();
        unprotected.protect_hooks_dir(Path::new("tools/hooks"));
        assert_eq!(why(&unprotected, "tools/hooks/pre-commit"), None);
    }

    #[test]
    fn existing_protected_paths_are_listed_relative_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            ".git/config",
            ".git/hooks/pre-commit",
            ".github/workflows/ci.yml",
            ".github/dependabot.yml",
            "Cargo.lock",
            "src/main.rs",
            "web/.env",
            "vendor/lib/.git/HEAD",
            ".vscode/settings.json",
            ".vscode/extensions.json",
            ".envrc",
            "deep/a/b/c/d/key.pem",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        // A link at a protected name is listed; a link to elsewhere is not followed.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("Cargo.lock"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("linked")).unwrap();
        std::os::unix::fs::symlink("/dev/null", root.join(".gitmodules")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join(".husky")).unwrap();

        let existing = ProtectedPaths::default().existing_in(root);
        let listed: Vec<String> = existing
            .paths
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        assert_eq!(
            listed,
            [
                ".envrc",
                ".git",
                ".github/workflows",
                ".gitmodules",
                ".husky",
                ".vscode/settings.json",
                "Cargo.lock",
                "deep/a/b/c/d/key.pem",
                "vendor/lib/.git",
                "web/.env",
            ]
        );
        assert!(existing.complete);
    }

    #[test]
    fn configured_patterns_add_and_exceptions_remove() {
        let paths =
            ProtectedPaths::with_patterns(&["secrets/**".to_string(), "!Cargo.lock".to_string()])
                .unwrap();
        assert_eq!(
            why(&paths, "secrets/db.txt").as_deref(),
            Some("secrets/db.txt is protected (matches `secrets/**` in [policy] protected)")
        );
        assert_eq!(why(&paths, "Cargo.lock"), None);
        assert!(why(&paths, "yarn.lock").is_some(), "other defaults stay");
    }

    #[test]
    fn a_recursive_delete_reaches_what_lies_below() {
        let paths = ProtectedPaths::default();
        let reached = |dir: &str| -> Vec<String> {
            paths
                .inside(Path::new(dir))
                .into_iter()
                .map(|protection| protection.path)
                .collect()
        };
        assert!(reached("").contains(&".git".to_string()));
        assert_eq!(reached(".github"), [".github/workflows"]);
        assert!(reached("src").is_empty());
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let error = ProtectedPaths::with_patterns(&["[oops".to_string()])
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(error.contains("[oops"), "{error}");
    }
}

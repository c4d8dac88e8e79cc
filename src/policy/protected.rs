//! Protected paths: files no mode changes without a person saying yes.
//!
//! Owns: the default globs (git metadata, CI configuration, lockfiles, environment
//! files, keys), the user's additions and exceptions (`[policy] protected`, where
//! `!glob` unprotects), and naming the protection a path falls under.
//! Does not own: what happens to a protected write (`Policy::judge` asks; front ends
//! refuse it headless).
//! Invariant: matching is on the path relative to the workspace root. A pattern with a
//! `/` matches the whole relative path; one without matches the file name at any depth.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::pathglob::PathGlob;

/// Why a path is protected by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    GitMetadata,
    CiConfig,
    Lockfile,
    Environment,
    Key,
    /// Listed in the user's `[policy] protected`.
    Configured,
}

const DEFAULTS: &[(&str, Kind)] = &[
    ("**/.git", Kind::GitMetadata),
    ("**/.git/**", Kind::GitMetadata),
    (".github/workflows/**", Kind::CiConfig),
    (".gitlab-ci.yml", Kind::CiConfig),
    (".ci/**", Kind::CiConfig),
    (".circleci/**", Kind::CiConfig),
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
    glob: PathGlob,
    kind: Kind,
    /// `!pattern`: matching paths are not protected.
    exception: bool,
    /// The directory every match lies under, when the pattern starts with one
    /// (`.github/workflows` for `.github/workflows/**`).
    base: Option<PathBuf>,
}

impl Rule {
    fn new(pattern: &str, kind: Kind) -> Result<Self, PatternError> {
        let (exception, glob) = match pattern.strip_prefix('!') {
            Some(glob) => (true, glob),
            None => (false, pattern),
        };
        let compiled = PathGlob::new(glob).map_err(|error| PatternError {
            pattern: pattern.to_string(),
            reason: error.reason,
        })?;
        let whole_path = compiled.is_whole_path();
        let literal: PathBuf = Path::new(glob)
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
            kind,
            exception,
            base: (whole_path && !literal.as_os_str().is_empty()).then_some(literal),
        })
    }

    fn matches(&self, relative: &Path) -> bool {
        self.glob.matches(relative)
    }

    fn why(&self) -> String {
        match self.kind {
            Kind::GitMetadata => "git metadata".into(),
            Kind::CiConfig => "CI configuration".into(),
            Kind::Lockfile => "lockfile".into(),
            Kind::Environment => "environment file".into(),
            Kind::Key => "key file".into(),
            Kind::Configured => format!("matches `{}` in [policy] protected", self.pattern),
        }
    }
}

/// The protected paths: the defaults plus the user's patterns.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "Vec<String>")]
pub struct ProtectedPaths {
    rules: Vec<Rule>,
    /// The user's patterns as written.
    configured: Vec<String>,
}

impl Default for ProtectedPaths {
    fn default() -> Self {
        let rules = DEFAULTS
            .iter()
            .filter_map(|&(pattern, kind)| Rule::new(pattern, kind).ok())
            .collect();
        Self {
            rules,
            configured: Vec::new(),
        }
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

impl ProtectedPaths {
    /// The defaults plus `patterns` (`!pattern` unprotects whatever it matches).
    pub fn with_patterns(patterns: &[String]) -> Result<Self, PatternError> {
        let mut paths = Self::default();
        for pattern in patterns {
            paths.rules.push(Rule::new(pattern, Kind::Configured)?);
        }
        paths.configured = patterns.to_vec();
        Ok(paths)
    }

    /// The protection `relative` (to the workspace root) falls under, if any.
    pub fn check(&self, relative: &Path) -> Option<Protection> {
        if self.is_exception(relative) {
            return None;
        }
        let rule = self
            .rules
            .iter()
            .find(|rule| !rule.exception && rule.matches(relative))?;
        Some(Protection {
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
        let mut found: Vec<Protection> = Vec::new();
        for rule in &self.rules {
            let Some(base) = rule.base.as_deref() else {
                continue;
            };
            if rule.exception || !base.starts_with(directory) || self.is_exception(base) {
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

    fn is_exception(&self, relative: &Path) -> bool {
        self.rules
            .iter()
            .any(|rule| rule.exception && rule.matches(relative))
    }
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
            ("src/main.rs", None),
            (".github/dependabot.yml", None),
            ("environment.rs", None),
            ("Cargo.toml", None),
        ];
        for (path, expected) in table {
            assert_eq!(why(&paths, path).as_deref(), expected, "{path}");
        }
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

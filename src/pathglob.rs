//! Path patterns as config files write them (`[policy] protected`, `[lint] linters`).
//!
//! Owns: compiling a pattern and matching it against a workspace-relative path, with
//! one rule everywhere, as in `.gitignore`: a pattern containing `/` matches the whole
//! relative path (`*` never crosses a `/`), one without matches the file name in any
//! directory.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

/// A compiled path pattern.
#[derive(Clone, Debug)]
pub struct PathGlob {
    matcher: GlobMatcher,
    /// The pattern has a `/`: match the whole relative path, not the file name.
    whole_path: bool,
}

/// A pattern that does not compile; `reason` says why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid pattern `{pattern}`: {reason}")]
pub struct GlobError {
    pub pattern: String,
    pub reason: String,
}

impl PathGlob {
    pub fn new(pattern: &str) -> Result<Self, GlobError> {
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|error| GlobError {
                pattern: pattern.to_string(),
                reason: error.kind().to_string(),
            })?
            .compile_matcher();
        Ok(Self {
            matcher,
            whole_path: pattern.contains('/'),
        })
    }

    /// Whether the pattern matches the path, given relative to the workspace root.
    pub fn matches(&self, relative: &Path) -> bool {
        if self.whole_path {
            self.matcher.is_match(relative)
        } else {
            relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        }
    }

    /// Whether the pattern matches whole paths (it has a `/`).
    pub fn is_whole_path(&self) -> bool {
        self.whole_path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        PathGlob::new(pattern).unwrap().matches(Path::new(path))
    }

    #[test]
    fn a_pattern_without_a_slash_matches_the_file_name_anywhere() {
        assert!(matches("*.lock", "Cargo.lock"));
        assert!(matches("*.lock", "sub/dir/yarn.lock"));
        assert!(!matches("*.lock", "Cargo.lock.d/x"));
    }

    #[test]
    fn a_pattern_with_a_slash_matches_the_whole_path_and_star_stays_in_one_directory() {
        assert!(matches(
            ".github/workflows/*.yml",
            ".github/workflows/ci.yml"
        ));
        assert!(!matches(
            ".github/workflows/*.yml",
            ".github/workflows/sub/ci.yml"
        ));
        assert!(matches(".github/**", ".github/workflows/sub/ci.yml"));
        assert!(!matches("src/*.rs", "other/src/a.rs"));
    }

    #[test]
    fn a_bad_pattern_says_why() {
        let error = PathGlob::new("a[").unwrap_err();
        assert_eq!(error.pattern, "a[");
        assert!(!error.reason.is_empty());
    }
}

//! SCAFFOLD: replaced by the lint work.
#![allow(dead_code)] // scaffold fields, used once the real module lands
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Project lint settings.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct LintConfig {}

/// Runs the checks after each write.
#[derive(Debug)]
pub struct Linter {
    root: PathBuf,
    config: LintConfig,
}

impl Linter {
    pub fn new(root: &Path, config: LintConfig) -> Self {
        Self {
            root: root.to_path_buf(),
            config,
        }
    }

    /// The text appended to a write or edit result.
    pub async fn check_write(
        &self,
        _abs: &Path,
        _display: &str,
        _before: Option<&str>,
        _after: &str,
    ) -> String {
        String::new()
    }

    /// The project-wide checks run once after the last edit of a batch.
    pub async fn turn_checks(&self) -> Option<String> {
        None
    }
}

//! SCAFFOLD: replaced by the shell work.
#![allow(dead_code)] // scaffold fields, used once the real module lands
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Settings of the persistent shell.
#[derive(Clone, Debug)]
pub struct ShellConfig {
    /// Per-call time limit unless the call gives one.
    pub default_timeout: Duration,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(120),
        }
    }
}

/// The session's persistent shell, started on first use.
#[derive(Debug)]
pub struct Shell {
    root: PathBuf,
    config: ShellConfig,
}

impl Shell {
    pub fn new(root: &Path, config: ShellConfig) -> Self {
        Self {
            root: root.to_path_buf(),
            config,
        }
    }
}

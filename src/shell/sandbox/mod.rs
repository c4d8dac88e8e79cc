//! The sandbox every program duet runs for the project goes through: the shell, and
//! the `--done` command, turn checks and linters. On Linux it is a set of layers the
//! kernel enforces, built by duet's own launcher:
//!
//! - namespaces of its own (user, mount, process, IPC, host name) with a fresh `/proc`
//!   (duet and the user's other processes are invisible), a minimal `/dev`, an empty
//!   `/run` and a private `/tmp`;
//! - no network but its own loopback (unless configured);
//! - writes only to the workspace, the private `/tmp` and `[sandbox] writable`
//!   (Landlock), with the protected paths inside the workspace mounted read-only;
//! - the user's credential files hidden;
//! - no capabilities, `no_new_privs`, and a system-call filter.
//!
//! duet cannot confine a process portable-pty spawns, so programs start through the
//! launcher: duet's own binary as `duet __sandbox ... -- bash ...` ([`launcher`]),
//! which builds the layers, writes what it achieved — a [`Confinement`] — to a report
//! file, and only then starts the program.
//!
//! Owns: the sandbox settings, the launcher's command line (built here and parsed
//! there), which paths are protected or hidden, probing what the machine allows, and
//! checking each started program's launcher against that. Does not own: spawning the
//! shell (the session) or which variables programs see ([`super::environment`]).
//! Invariant: a protection is only ever reported active when a launcher reported it
//! applied; a layer missing without the user's config accepting it stops every
//! program from starting (fail closed); and a program whose launcher achieved less
//! than the probe promised is never handed a command.

mod blocked;
mod host;
pub mod launcher;
#[cfg(target_os = "linux")]
mod linux;
mod report;
mod runner;

use std::path::PathBuf;

pub use blocked::{BLOCKED_DIR, Blocked};
pub use report::{Confinement, Layer, LayerName, NetworkIsolation, Protections, WriteLimits};
pub use runner::{ProtectedWatch, Resident, Sandbox, SandboxError};

pub(crate) use host::{Plan, View};

#[cfg(test)]
mod tests;

/// The newest Landlock ABI whose access rights duet asks for. Later ABIs add rights
/// (such as connecting to Unix sockets) that would change what commands may do, so
/// raising this is a deliberate, tested change.
pub(crate) const TARGET_LANDLOCK_ABI: u8 = 5;

/// How to confine programs; `ShellConfig::sandbox` is `None` when they run unconfined.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxConfig {
    /// The binary that understands `__sandbox`; `None` means this executable. Tests
    /// of the library name the built `duet` binary.
    pub launcher: Option<PathBuf>,
    /// Let commands use the network (no network namespace).
    pub network: bool,
    /// Writable besides the workspace, the private temp dir and the device files.
    /// Paths that do not exist when a program starts are ignored.
    pub writable: Vec<PathBuf>,
    /// Files and directories hidden from programs (credentials, duet's own config and
    /// state). Paths that do not exist are ignored.
    pub hidden: Vec<PathBuf>,
    /// Layers the user accepts running without (`[sandbox] accept_missing`); any other
    /// missing layer stops programs from starting.
    pub accept_missing: Vec<LayerName>,
    /// The workspace itself is read-only at first (the `read-only` approval mode);
    /// [`Sandbox::set_workspace_read_only`] changes it for later programs.
    pub workspace_read_only: bool,
}

/// Where credentials live, relative to the home directory: hidden from every program
/// duet runs unless `[sandbox] expose` names them.
pub const CREDENTIAL_PATHS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".codex/auth.json",
    ".claude/.credentials.json",
];

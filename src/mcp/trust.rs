//! Which of a project's MCP servers the user trusted, bound to what they run.
//!
//! A project's `.mcp.json` or `.duet/mcp.toml` is written by whoever wrote the project,
//! and can change under the user at any `git pull`. So trusting a project server
//! (`duet mcp trust`) records a fingerprint of it: a SHA-256 of its entry (command,
//! arguments, environment, URL) and of the bytes of every file inside the workspace
//! its command line names that holds code (`node server.js`, `sh -c "sh start.sh"`; a
//! script's extension, a `#!` line, an ELF header or the executable bit: a log it
//! names changes at every start). A server starts
//! only while its fingerprint is the one recorded; one changed byte in either makes it
//! untrusted again until the user looks and trusts it anew.
//!
//! Owns: the fingerprint, and the record of trusted fingerprints per workspace
//! ([`TRUST_FILE`] in duet's state directory, which no sandboxed program sees).
//! Does not own: whether project servers may start at all (`[mcp] project_servers`),
//! or starting them.
//! Invariant: a fingerprint covers everything in the entry that decides what runs, and
//! a record is written whole (a new file renamed over the old) or not at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::{ServerConfig, Transport};

/// The file in duet's state directory that holds the trusted fingerprints.
pub const TRUST_FILE: &str = "trusted-mcp-servers.json";

/// The files one command line may name that are read into a fingerprint, at most.
const MAX_FILES: usize = 32;
/// Bigger files are fingerprinted by their first bytes and their length.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// What the user's record says of one project server as it is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustState {
    /// Trusted with exactly this fingerprint.
    Trusted,
    /// Trusted once, with another fingerprint: it changed since.
    Changed,
    /// Never trusted in this workspace.
    Unknown,
}

/// A project server's fingerprint and what the record says of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectTrust {
    pub state: TrustState,
    pub fingerprint: Fingerprint,
}

/// The SHA-256 of a server's entry and of the workspace files its command line names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// Lower-case hex.
    pub digest: String,
    /// The files read into it, relative to the workspace.
    pub files: Vec<PathBuf>,
}

impl Fingerprint {
    /// The first twelve hex digits, enough to tell two apart on screen.
    pub fn short(&self) -> &str {
        self.digest.get(..12).unwrap_or(&self.digest)
    }

    /// The files read into it, comma-separated; empty when there are none.
    pub fn files_list(&self) -> String {
        self.files
            .iter()
            .map(|file| file.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a trust record duet wrote ({source}); move it away to start afresh", .path.display())]
    Corrupt {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The user's record of trusted project servers.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    record: Record,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    version: u32,
    /// Workspace (canonical path) → server name → fingerprint digest.
    workspaces: BTreeMap<String, BTreeMap<String, String>>,
}

impl TrustStore {
    /// Reads the record in `state_dir`; an absent file is an empty record.
    pub fn load(state_dir: &Path) -> Result<Self, TrustError> {
        let path = state_dir.join(TRUST_FILE);
        let record = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|source| TrustError::Corrupt {
                path: path.clone(),
                source,
            })?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Record::default(),
            Err(source) => return Err(TrustError::Read { path, source }),
        };
        Ok(Self { path, record })
    }

    /// What the record says of `server` of `workspace`, fingerprinted as it is now.
    pub fn judge(&self, workspace: &Path, server: &ServerConfig) -> ProjectTrust {
        let fingerprint = fingerprint(server, workspace);
        let recorded = self
            .record
            .workspaces
            .get(&key(workspace))
            .and_then(|servers| servers.get(&server.name));
        let state = match recorded {
            Some(digest) if *digest == fingerprint.digest => TrustState::Trusted,
            Some(_) => TrustState::Changed,
            None => TrustState::Unknown,
        };
        ProjectTrust { state, fingerprint }
    }

    /// Records `fingerprint` as trusted for `name` in `workspace` (call [`Self::save`]).
    pub fn trust(&mut self, workspace: &Path, name: &str, fingerprint: &Fingerprint) {
        self.record.version = 1;
        self.record
            .workspaces
            .entry(key(workspace))
            .or_default()
            .insert(name.to_string(), fingerprint.digest.clone());
    }

    /// Forgets `name` in `workspace`; false when it was not trusted there.
    pub fn revoke(&mut self, workspace: &Path, name: &str) -> bool {
        let workspace = key(workspace);
        let Some(servers) = self.record.workspaces.get_mut(&workspace) else {
            return false;
        };
        let removed = servers.remove(name).is_some();
        if servers.is_empty() {
            self.record.workspaces.remove(&workspace);
        }
        removed
    }

    /// Writes the record: a new file beside the old one, renamed over it.
    pub fn save(&self) -> Result<(), TrustError> {
        let failed = |source: std::io::Error| TrustError::Write {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(failed)?;
        let text = serde_json::to_string_pretty(&self.record).map_err(std::io::Error::from);
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
        std::io::Write::write_all(&mut file, text.map_err(failed)?.as_bytes()).map_err(failed)?;
        file.as_file().sync_all().map_err(failed)?;
        file.persist(&self.path)
            .map_err(|error| failed(error.error))?;
        Ok(())
    }
}

fn key(workspace: &Path) -> String {
    workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// The fingerprint of `server` as it is now in `workspace`.
pub fn fingerprint(server: &ServerConfig, workspace: &Path) -> Fingerprint {
    // Length-prefixed fields, so no two entries run together into the same text.
    let mut text = String::from("duet mcp trust v1\n");
    let mut field = |name: &str, value: &str| {
        text.push_str(&format!("{name} {} {value}\n", value.len()));
    };
    field("name", &server.name);
    let mut words: Vec<&str> = Vec::new();
    match &server.transport {
        Transport::Stdio {
            command, args, env, ..
        } => {
            field("command", command);
            words.push(command);
            for arg in args {
                field("arg", arg);
                words.push(arg);
            }
            for (name, value) in env {
                field("env", &format!("{name}={value}"));
            }
        }
        Transport::Http { url } => field("url", url),
    }
    let files = named_files(&words, workspace);
    for file in &files {
        field("file", &file.display().to_string());
        field("content", &file_digest(&workspace.join(file)));
    }
    Fingerprint {
        digest: hex(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref()),
        files,
    }
}

/// The regular files inside `workspace` that the words of a command line name, each
/// word split at spaces and shell punctuation (`sh -c "sh start.sh; ..."`), relative to
/// the workspace, sorted.
fn named_files(words: &[&str], workspace: &Path) -> Vec<PathBuf> {
    let Ok(root) = workspace.canonicalize() else {
        return Vec::new();
    };
    let mut files = Vec::new();
    let separators = |c: char| c.is_whitespace() || ";|&<>()'\"`=".contains(c);
    for token in words.iter().flat_map(|word| word.split(separators)) {
        if token.is_empty() || files.len() >= MAX_FILES {
            continue;
        }
        let Ok(path) = root.join(token).canonicalize() else {
            continue;
        };
        let inside = path.starts_with(&root) && path != root;
        if let Ok(relative) = path.strip_prefix(&root)
            && inside
            && path.is_file()
            && holds_code(&path)
        {
            files.push(relative.to_path_buf());
        }
    }
    files.sort();
    files.dedup();
    files
}

/// Extensions of files a server's command line runs or loads. Other files it names
/// (a log, its output) change with every start and would end the user's trust at once.
const CODE_EXTENSIONS: &[&str] = &[
    "sh", "bash", "zsh", "fish", "js", "mjs", "cjs", "ts", "mts", "cts", "jsx", "tsx", "py", "pyz",
    "rb", "pl", "pm", "php", "lua", "tcl", "r", "jar", "war", "class", "wasm", "exe", "bin", "so",
    "dylib", "ps1", "bat", "cmd", "toml", "yaml", "yml", "ini", "cfg", "conf",
];

/// Whether the file at `path` holds code: an extension of [`CODE_EXTENSIONS`], the
/// executable bit, or a `#!` line or ELF header at its start.
fn holds_code(path: &Path) -> bool {
    use std::io::Read as _;
    use std::os::unix::fs::PermissionsExt as _;
    let by_extension = path
        .extension()
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| {
            CODE_EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str())
        });
    let executable =
        std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o111 != 0);
    let mut start = [0u8; 4];
    let header = std::fs::File::open(path)
        .and_then(|mut file| file.read(&mut start))
        .is_ok_and(|read| start[..read].starts_with(b"#!") || start[..read] == *b"\x7fELF");
    by_extension || executable || header
}

/// The SHA-256 of a file's bytes (the first [`MAX_FILE_BYTES`] and its length for a
/// bigger one), or why it could not be read.
fn file_digest(path: &Path) -> String {
    use std::io::Read as _;
    let read = std::fs::File::open(path).and_then(|file| {
        let length = file.metadata()?.len();
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
        Ok((length, bytes))
    });
    match read {
        Ok((length, bytes)) => format!(
            "{length} {}",
            hex(ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref())
        ),
        Err(error) => format!("unreadable: {}", error.kind()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::parse_project_json;

    fn server(workspace: &Path, json: &str) -> ServerConfig {
        parse_project_json(&workspace.join(".mcp.json"), json)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn one_changed_byte_in_the_entry_or_a_file_it_runs_changes_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::write(ws.join("start.sh"), "exec server\n").unwrap();
        std::fs::create_dir(ws.join("tools")).unwrap();
        std::fs::write(ws.join("tools/server.js"), "serve()\n").unwrap();
        std::fs::write(ws.join("out.log"), "written by every start\n").unwrap();
        let entry = r#"{"mcpServers": {"p": {"command": "sh", "args": ["-c", "sh start.sh; node tools/server.js > out.log"], "env": {"A": "1"}}}}"#;
        let first = fingerprint(&server(ws, entry), ws);
        assert_eq!(
            first.files,
            [PathBuf::from("start.sh"), PathBuf::from("tools/server.js")]
        );
        assert_eq!(fingerprint(&server(ws, entry), ws), first);
        // What the server writes as it runs is not part of it.
        std::fs::write(ws.join("out.log"), "another start\n").unwrap();
        assert_eq!(fingerprint(&server(ws, entry), ws), first);

        std::fs::write(ws.join("start.sh"), "exec serveR\n").unwrap();
        let script_changed = fingerprint(&server(ws, entry), ws);
        assert_ne!(script_changed.digest, first.digest);
        std::fs::write(ws.join("start.sh"), "exec server\n").unwrap();

        for changed in [
            entry.replace("\"1\"", "\"2\""),
            entry.replace("node", "nodE"),
            entry.replace("\"p\"", "\"q\""),
        ] {
            assert_ne!(fingerprint(&server(ws, &changed), ws).digest, first.digest);
        }
    }

    #[test]
    fn files_outside_the_workspace_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.sh"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.sh"), dir.path().join("link.sh"))
            .unwrap();
        let entry = format!(
            r#"{{"mcpServers": {{"p": {{"command": "{}", "args": ["link.sh", "../x"]}}}}}}"#,
            outside.path().join("x.sh").display()
        );
        assert!(
            fingerprint(&server(dir.path(), &entry), dir.path())
                .files
                .is_empty()
        );
    }

    #[test]
    fn the_record_survives_a_reload_and_judges_each_server() {
        let state = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let entry = r#"{"mcpServers": {"p": {"command": "serve"}}}"#;
        let p = server(ws, entry);
        let mut store = TrustStore::load(state.path()).unwrap();
        assert_eq!(store.judge(ws, &p).state, TrustState::Unknown);
        let now = store.judge(ws, &p).fingerprint;
        store.trust(ws, "p", &now);
        store.save().unwrap();

        let store = TrustStore::load(state.path()).unwrap();
        assert_eq!(store.judge(ws, &p).state, TrustState::Trusted);
        let changed = server(ws, &entry.replace("serve", "serve2"));
        assert_eq!(store.judge(ws, &changed).state, TrustState::Changed);
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(store.judge(elsewhere.path(), &p).state, TrustState::Unknown);

        let mut store = store;
        assert!(store.revoke(ws, "p"));
        assert!(!store.revoke(ws, "p"));
        store.save().unwrap();
        let store = TrustStore::load(state.path()).unwrap();
        assert_eq!(store.judge(ws, &p).state, TrustState::Unknown);

        std::fs::write(state.path().join(TRUST_FILE), "{not json").unwrap();
        let error = TrustStore::load(state.path()).unwrap_err().to_string();
        assert!(error.contains("move it away"), "{error}");
    }
}

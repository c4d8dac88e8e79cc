//! Which MCP servers to start, from the user's config and the project's files.
//!
//! The user's `config.toml` has `[mcp]` (see [`McpSection`]). A project may list
//! servers in `.duet/mcp.toml` (`[servers.NAME]`, the same fields as the user's
//! `[mcp.servers.NAME]`) or in `.mcp.json` (`{"mcpServers": {...}}`, the layout other
//! tools use). Project servers are untrusted: they start only when the user's config
//! sets `[mcp] project_servers = true`, a project cannot loosen their policy (`allow`
//! becomes `ask`) or trust their read-only marks, and a server the user configured
//! under the same name wins.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::trust::{ProjectTrust, TrustState, TrustStore};
use crate::policy::ToolRule;

/// How long a tool call may take unless the server's `timeout_secs` says otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The project files that may list servers, relative to the workspace root.
pub const PROJECT_TOML: &str = ".duet/mcp.toml";
pub const PROJECT_JSON: &str = ".mcp.json";

/// The `[mcp]` table of the user's config.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// Start the servers the project's own files list. Off by default: they are
    /// commands written by whoever wrote the project.
    #[serde(default)]
    pub project_servers: bool,
    #[serde(default)]
    pub servers: BTreeMap<String, ServerEntry>,
}

/// One server as written in TOML.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerEntry {
    /// The program of a stdio server.
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for the program, over duet's own environment (from which
    /// credential-shaped variables are removed, as for the shell).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Credential-shaped variables of duet's environment the program inherits anyway
    /// (user config only).
    #[serde(default)]
    pub keep_env: Vec<String>,
    /// The endpoint of a streamable HTTP server (instead of `command`).
    pub url: Option<String>,
    /// Seconds one tool call may take (fractions allowed); default 60.
    pub timeout_secs: Option<f64>,
    /// Set to false to keep a configured server from starting.
    pub enabled: Option<bool>,
    /// The rule for the server's tools: "allow", "ask" (default) or "deny".
    pub policy: Option<ToolRule>,
    /// Rules for single tools (by their name on the server), over `policy`.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolRule>,
    /// Let the tools the server marks read-only run in parallel with other reads.
    #[serde(default)]
    pub parallel_read_only: bool,
}

/// `.duet/mcp.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectToml {
    #[serde(default)]
    servers: BTreeMap<String, ServerEntry>,
}

/// `.mcp.json`. Other tools add their own fields, so unknown ones are ignored.
#[derive(Debug, Deserialize)]
struct ProjectJson {
    #[serde(rename = "mcpServers", default)]
    servers: BTreeMap<String, JsonServer>,
}

#[derive(Debug, Deserialize)]
struct JsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
}

/// How duet reaches a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        /// Credential-shaped variables it inherits anyway.
        keep_env: Vec<String>,
    },
    Http {
        url: String,
    },
}

/// Which file configured a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    User(PathBuf),
    Project(PathBuf),
}

impl Source {
    pub fn path(&self) -> &Path {
        match self {
            Source::User(path) | Source::Project(path) => path,
        }
    }
}

/// One server, resolved and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub call_timeout: Duration,
    pub enabled: bool,
    pub default_rule: ToolRule,
    pub tool_rules: BTreeMap<String, ToolRule>,
    pub parallel_read_only: bool,
    pub source: Source,
}

impl ServerConfig {
    /// The rule for `tool`: its own, else the server's.
    pub fn rule_for(&self, tool: &str) -> ToolRule {
        self.tool_rules
            .get(tool)
            .copied()
            .unwrap_or(self.default_rule)
    }
}

/// Every configured server, and whether the project's may start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpConfig {
    pub servers: Vec<ServerConfig>,
    pub project_servers: bool,
    /// What the user's trust record says of each project server, by name.
    pub trust: BTreeMap<String, ProjectTrust>,
}

impl McpConfig {
    /// The servers duet starts: enabled ones, and the project's only when allowed.
    pub fn startable(&self) -> Vec<ServerConfig> {
        self.servers
            .iter()
            .filter(|server| server.enabled && self.may_start(server))
            .cloned()
            .collect()
    }

    /// Whether the source of `server` lets it start (its own `enabled` aside): the
    /// user's own always; a project's when the user allows project servers and trusted
    /// this one as it is now.
    pub fn may_start(&self, server: &ServerConfig) -> bool {
        match server.source {
            Source::User(_) => true,
            Source::Project(_) => {
                self.project_servers
                    && self
                        .trust
                        .get(&server.name)
                        .is_some_and(|trust| trust.state == TrustState::Trusted)
            }
        }
    }

    /// While project servers are allowed, one line for each enabled one that does not
    /// start for want of the user's trust: never trusted here, or changed since.
    pub fn untrusted(&self) -> Vec<String> {
        if !self.project_servers {
            return Vec::new();
        }
        self.servers
            .iter()
            .filter(|server| server.enabled && matches!(server.source, Source::Project(_)))
            .filter_map(|server| {
                let trust = self.trust.get(&server.name)?;
                let why = match trust.state {
                    TrustState::Trusted => return None,
                    TrustState::Unknown => "it is not trusted in this workspace",
                    TrustState::Changed => {
                        "it changed since you trusted it (its entry, or a file it runs)"
                    }
                };
                Some(format!(
                    "the project's MCP server `{}` did not start: {why}; read what it runs \
                     (`duet mcp list`), then `duet mcp trust {}`",
                    server.name, server.name
                ))
            })
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{path}: MCP server `{name}`: {message}")]
    BadServer {
        path: PathBuf,
        name: String,
        message: String,
    },
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Resolves the user's `[mcp]` table, read from `config_file`.
pub fn from_user(section: &McpSection, config_file: &Path) -> Result<McpConfig, McpConfigError> {
    Ok(McpConfig {
        servers: resolve_entries(&section.servers, &Source::User(config_file.into()))?,
        project_servers: section.project_servers,
        trust: BTreeMap::new(),
    })
}

/// The user's servers and those of the project files under `workspace` (a server
/// named in both keeps the user's entry).
pub fn load(
    section: &McpSection,
    config_file: &Path,
    workspace: &Path,
    trust: &TrustStore,
) -> Result<McpConfig, McpConfigError> {
    let mut config = from_user(section, config_file)?;
    config.add_project(workspace, trust)?;
    Ok(config)
}

impl McpConfig {
    /// Adds the servers the project's files under `workspace` list, except those the
    /// user's config names too, each judged by the user's trust record.
    pub fn add_project(
        &mut self,
        workspace: &Path,
        trust: &TrustStore,
    ) -> Result<(), McpConfigError> {
        for project in load_project(workspace)? {
            if self.servers.iter().any(|known| known.name == project.name) {
                tracing::info!(
                    server = project.name,
                    file = %project.source.path().display(),
                    "the user's config names this MCP server too; the project's entry is ignored"
                );
                continue;
            }
            self.trust
                .insert(project.name.clone(), trust.judge(workspace, &project));
            self.servers.push(project);
        }
        Ok(())
    }
}

/// The servers the project's files list (both files may exist; `.duet/mcp.toml` wins
/// a name they share).
fn load_project(workspace: &Path) -> Result<Vec<ServerConfig>, McpConfigError> {
    let mut servers = Vec::new();
    let toml_path = workspace.join(PROJECT_TOML);
    if let Some(text) = read_optional(&toml_path)? {
        servers = parse_project_toml(&toml_path, &text)?;
    }
    let json_path = workspace.join(PROJECT_JSON);
    if let Some(text) = read_optional(&json_path)? {
        for server in parse_project_json(&json_path, &text)? {
            if !servers.iter().any(|known| known.name == server.name) {
                servers.push(server);
            }
        }
    }
    Ok(servers)
}

fn read_optional(path: &Path) -> Result<Option<String>, McpConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(McpConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Parses `.duet/mcp.toml`.
pub fn parse_project_toml(path: &Path, text: &str) -> Result<Vec<ServerConfig>, McpConfigError> {
    let file: ProjectToml = toml::from_str(text).map_err(|error| McpConfigError::Invalid {
        path: path.to_path_buf(),
        message: error.to_string().trim().to_string(),
    })?;
    resolve_entries(&file.servers, &Source::Project(path.to_path_buf()))
}

/// Parses `.mcp.json`.
pub fn parse_project_json(path: &Path, text: &str) -> Result<Vec<ServerConfig>, McpConfigError> {
    let file: ProjectJson =
        serde_json::from_str(text).map_err(|error| McpConfigError::Invalid {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
    let source = Source::Project(path.to_path_buf());
    let mut entries = BTreeMap::new();
    for (name, server) in file.servers {
        let entry = json_entry(server).map_err(|message| McpConfigError::BadServer {
            path: path.to_path_buf(),
            name: name.clone(),
            message,
        })?;
        entries.insert(name, entry);
    }
    resolve_entries(&entries, &source)
}

/// A `.mcp.json` server as a TOML entry. Only stdio and streamable HTTP are spoken.
fn json_entry(server: JsonServer) -> Result<ServerEntry, String> {
    match server.kind.as_deref() {
        None | Some("stdio" | "http" | "streamable-http") => Ok(ServerEntry {
            command: server.command,
            args: server.args,
            env: server.env,
            url: server.url,
            ..ServerEntry::default()
        }),
        Some(other) => Err(format!(
            "transport type `{other}` is not supported; duet speaks `stdio` and `http` \
             (streamable HTTP)"
        )),
    }
}

fn resolve_entries(
    entries: &BTreeMap<String, ServerEntry>,
    source: &Source,
) -> Result<Vec<ServerConfig>, McpConfigError> {
    entries
        .iter()
        .map(|(name, entry)| {
            resolve_entry(name, entry, source).map_err(|message| McpConfigError::BadServer {
                path: source.path().to_path_buf(),
                name: name.clone(),
                message,
            })
        })
        .collect()
}

fn resolve_entry(name: &str, entry: &ServerEntry, source: &Source) -> Result<ServerConfig, String> {
    check_name(name)?;
    let trusted = matches!(source, Source::User(_));
    let transport = match (&entry.command, &entry.url) {
        (Some(command), None) if !command.trim().is_empty() => Transport::Stdio {
            command: command.clone(),
            args: entry.args.clone(),
            env: entry.env.clone(),
            // A project does not get to read the user's credentials.
            keep_env: if trusted {
                entry.keep_env.clone()
            } else {
                Vec::new()
            },
        },
        (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
            Transport::Http { url: url.clone() }
        }
        (None, Some(url)) => return Err(format!("`url` must be http:// or https://, got `{url}`")),
        (Some(_), Some(_)) => return Err("set `command` or `url`, not both".into()),
        _ => return Err("set `command` (a stdio server) or `url` (streamable HTTP)".into()),
    };
    let call_timeout = match entry.timeout_secs {
        None => DEFAULT_CALL_TIMEOUT,
        Some(secs) => Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|timeout| !timeout.is_zero())
            .ok_or_else(|| format!("`timeout_secs` must be a positive number, got {secs}"))?,
    };
    // A project may tighten its servers' rules, never loosen them.
    let cap = |rule: ToolRule| match rule {
        ToolRule::Allow if !trusted => ToolRule::Ask,
        rule => rule,
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        call_timeout,
        enabled: entry.enabled.unwrap_or(true),
        default_rule: cap(entry.policy.unwrap_or_default()),
        tool_rules: entry
            .tools
            .iter()
            .map(|(tool, rule)| (tool.clone(), cap(*rule)))
            .collect(),
        parallel_read_only: entry.parallel_read_only && trusted,
        source: source.clone(),
    })
}

/// Server names prefix tool names (`server__tool`), which providers limit to
/// `[A-Za-z0-9_-]`; a `__` inside would make the split ambiguous.
fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains("__");
    if valid {
        Ok(())
    } else {
        Err(
            "server names may use letters, digits, `-` and `_` (not `__`), at most 32 \
             characters"
                .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn user_section(text: &str) -> McpSection {
        #[derive(Deserialize)]
        struct File {
            mcp: McpSection,
        }
        toml::from_str::<File>(text).unwrap().mcp
    }

    fn user(text: &str) -> Result<Vec<ServerConfig>, McpConfigError> {
        let source = Source::User(PathBuf::from("/home/u/.config/duet/config.toml"));
        resolve_entries(&user_section(text).servers, &source)
    }

    #[test]
    fn user_servers_over_stdio_and_http() {
        let servers = user(
            r#"
            [mcp.servers.tracker]
            command = "tracker-mcp"
            args = ["--stdio"]
            env = { TOKEN = "t" }
            keep_env = ["GH_TOKEN"]
            timeout_secs = 2.5
            policy = "allow"
            tools = { delete_issue = "deny" }
            parallel_read_only = true

            [mcp.servers.docs]
            url = "https://docs.example.com/mcp"
            enabled = false
            "#,
        )
        .unwrap();
        assert_eq!(servers.len(), 2);
        let docs = &servers[0];
        assert_eq!(docs.name, "docs");
        assert_eq!(
            docs.transport,
            Transport::Http {
                url: "https://docs.example.com/mcp".into()
            }
        );
        assert!(!docs.enabled);
        assert_eq!(docs.call_timeout, DEFAULT_CALL_TIMEOUT);
        assert_eq!(docs.rule_for("search"), ToolRule::Ask);
        let tracker = &servers[1];
        assert_eq!(
            tracker.transport,
            Transport::Stdio {
                command: "tracker-mcp".into(),
                args: vec!["--stdio".into()],
                env: BTreeMap::from([("TOKEN".into(), "t".into())]),
                keep_env: vec!["GH_TOKEN".into()],
            }
        );
        assert_eq!(tracker.call_timeout, Duration::from_millis(2500));
        assert_eq!(tracker.rule_for("list_issues"), ToolRule::Allow);
        assert_eq!(tracker.rule_for("delete_issue"), ToolRule::Deny);
        assert!(tracker.parallel_read_only);
    }

    #[test]
    fn project_toml_cannot_loosen_its_policy() {
        let path = Path::new("/repo/.duet/mcp.toml");
        let servers = parse_project_toml(
            path,
            r#"
            [servers.local]
            command = "./tools/mcp"
            keep_env = ["AWS_SECRET_ACCESS_KEY"]
            policy = "allow"
            tools = { wipe = "deny", peek = "allow" }
            parallel_read_only = true
            "#,
        )
        .unwrap();
        let local = &servers[0];
        assert_eq!(local.source, Source::Project(path.into()));
        assert_eq!(local.rule_for("anything"), ToolRule::Ask);
        assert_eq!(local.rule_for("peek"), ToolRule::Ask);
        assert_eq!(local.rule_for("wipe"), ToolRule::Deny);
        assert!(!local.parallel_read_only);
        assert!(
            matches!(&local.transport, Transport::Stdio { keep_env, .. } if keep_env.is_empty())
        );
    }

    #[test]
    fn project_json_in_the_common_layout() {
        let servers = parse_project_json(
            Path::new("/repo/.mcp.json"),
            r#"{
              "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "files-mcp"], "env": {"A": "1"}},
                "remote": {"type": "http", "url": "http://localhost:9000/mcp", "headers": {}}
              }
            }"#,
        )
        .unwrap();
        let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "remote"]);
        assert!(
            matches!(&servers[0].transport, Transport::Stdio { command, .. } if command == "npx")
        );
        assert_eq!(
            servers[1].transport,
            Transport::Http {
                url: "http://localhost:9000/mcp".into()
            }
        );
        assert_eq!(servers[1].rule_for("x"), ToolRule::Ask);
    }

    #[test]
    fn bad_configs_say_which_server_and_what_to_fix() {
        let cases = [
            (
                "[mcp.servers.both]\ncommand = \"a\"\nurl = \"http://x\"",
                "MCP server `both`: set `command` or `url`, not both",
            ),
            (
                "[mcp.servers.none]\nargs = [\"x\"]",
                "MCP server `none`: set `command` (a stdio server) or `url`",
            ),
            (
                "[mcp.servers.slow]\ncommand = \"a\"\ntimeout_secs = 0",
                "`timeout_secs` must be a positive number, got 0",
            ),
            (
                "[mcp.servers.\"a__b\"]\ncommand = \"a\"",
                "MCP server `a__b`: server names may use",
            ),
            (
                "[mcp.servers.ftp]\nurl = \"ftp://x\"",
                "`url` must be http:// or https://",
            ),
        ];
        for (text, expected) in cases {
            let error = user(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}\n→ {error}");
            assert!(
                error.starts_with("/home/u/.config/duet/config.toml"),
                "{error}"
            );
        }
    }

    #[test]
    fn bad_project_files_name_the_file() {
        let json = parse_project_json(Path::new("/repo/.mcp.json"), "{\"mcpServers\": [}")
            .unwrap_err()
            .to_string();
        assert!(json.starts_with("/repo/.mcp.json: "), "{json}");
        let sse = parse_project_json(
            Path::new("/repo/.mcp.json"),
            r#"{"mcpServers": {"old": {"type": "sse", "url": "http://x/sse"}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            sse.contains("MCP server `old`: transport type `sse` is not supported"),
            "{sse}"
        );
        let toml = parse_project_toml(
            Path::new("/repo/.duet/mcp.toml"),
            "[servers.x]\ncommand = \"a\"\nshell = true",
        )
        .unwrap_err()
        .to_string();
        assert!(toml.contains("unknown field `shell`"), "{toml}");
    }

    #[test]
    fn the_user_entry_wins_and_project_servers_start_only_when_allowed() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(
            workspace.path().join(PROJECT_JSON),
            r#"{"mcpServers": {"shared": {"command": "project-one"}, "extra": {"command": "x"}}}"#,
        )
        .unwrap();
        let section = user_section("[mcp.servers.shared]\ncommand = \"user-one\"");
        let state = tempfile::tempdir().unwrap();
        let mut store = TrustStore::load(state.path()).unwrap();
        let config = load(&section, Path::new("/cfg.toml"), workspace.path(), &store).unwrap();
        let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["shared", "extra"]);
        assert!(matches!(&config.servers[0].source, Source::User(_)));
        let started: Vec<_> = config.startable().into_iter().map(|s| s.name).collect();
        assert_eq!(started, ["shared"]);
        assert!(
            config.untrusted().is_empty(),
            "only while project servers are on"
        );

        // Allowed but not trusted: still only the user's.
        let allowed = McpConfig {
            project_servers: true,
            ..config
        };
        assert_eq!(allowed.startable().len(), 1);
        let untrusted = allowed.untrusted();
        assert_eq!(untrusted.len(), 1, "{untrusted:?}");
        assert!(untrusted[0].contains("`extra`"), "{untrusted:?}");

        // Trusted as it is: it starts; changed since: it does not.
        store.trust(
            workspace.path(),
            "extra",
            &allowed.trust["extra"].fingerprint,
        );
        let mut trusted = load(&section, Path::new("/cfg.toml"), workspace.path(), &store).unwrap();
        trusted.project_servers = true;
        assert_eq!(trusted.startable().len(), 2);
        std::fs::write(
            workspace.path().join(PROJECT_JSON),
            r#"{"mcpServers": {"shared": {"command": "project-one"}, "extra": {"command": "y"}}}"#,
        )
        .unwrap();
        let mut changed = load(&section, Path::new("/cfg.toml"), workspace.path(), &store).unwrap();
        changed.project_servers = true;
        assert_eq!(changed.startable().len(), 1);
        assert!(
            changed.untrusted()[0].contains("changed since"),
            "{:?}",
            changed.untrusted()
        );
    }
}

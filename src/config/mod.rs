//! Settings: which model to talk to, how, and where duet keeps its files.
//!
//! Owns: the config file format, the precedence CLI flag > environment > config file >
//! built-in default, and the one-screen explanation shown when nothing is configured.
//! Only the user's own config file is read: a project cannot configure duet (least of
//! all its `[policy]`), since whoever wrote the project could then loosen it.
//! Does not own: talking to the model (`provider/`) or acting on the settings.
//! Invariant: resolution is a pure function of (file, environment, flags), so it is
//! tested without touching the process environment.

mod budget;
mod context;
pub mod init;
mod lenient;
mod models;
pub mod probe;

use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use budget::{Budget, BudgetSection, DEFAULT_MAX_STEPS};
pub use context::{Compaction, ContextSection, DEFAULT_COMPACT_AT, DEFAULT_KEEP_RECENT_STEPS};
pub use lenient::{Loaded, load_file_lenient, parse_file_lenient};
pub use models::{ModelEntry, ModelInfo, ModelTable, Prices};

use crate::lint::LintConfig;
use crate::mcp::{McpConfig, McpConfigError, McpSection};
use crate::policy::{ApprovalMode, PolicyConfig};
use crate::provider::{DEFAULT_IDLE_TIMEOUT, Endpoint, RequestFeatures, RetryPolicy, Wire};
use crate::shell::ShellConfig;
use crate::shell::sandbox::{CREDENTIAL_PATHS, LayerName, SandboxConfig};

/// Output tokens per model call unless configured.
pub const DEFAULT_MAX_TOKENS: u32 = 16_384;
const ANTHROPIC_DEFAULT_BASE: &str = "https://api.anthropic.com";
const OPENAI_DEFAULT_BASE: &str = "https://api.openai.com/v1";
const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";
const OPENAI_DEFAULT_MODEL: &str = "gpt-5";

/// The config file as written by the user. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub provider: Option<Wire>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// Name of the environment variable holding the key, when it is not the standard one.
    pub api_key_env: Option<String>,
    pub approval: Option<ApprovalMode>,
    pub max_tokens: Option<u32>,
    /// `[shell]`: the persistent shell's limits.
    #[serde(default)]
    pub shell: ShellSection,
    /// `[lint]`: checks after every write and after each batch of edits.
    #[serde(default)]
    pub lint: LintConfig,
    /// `[policy]`: protected paths and the command classes `auto` mode may run.
    #[serde(default)]
    pub policy: PolicyConfig,
    /// `[sandbox]`: how the shell is confined.
    #[serde(default)]
    pub sandbox: SandboxSection,
    /// `[budget]`: limits on each task.
    #[serde(default)]
    pub budget: BudgetSection,
    /// `[models."name-prefix"]`: context windows and prices, over the built-in table.
    #[serde(default)]
    pub models: ModelTable,
    /// `[network]`: retries and the idle watchdog of model calls.
    #[serde(default)]
    pub network: NetworkSection,
    /// `[context]`: when a full conversation is compacted.
    #[serde(default)]
    pub context: ContextSection,
    /// `[mcp]`: the MCP servers whose tools are offered to the model.
    #[serde(default)]
    pub mcp: McpSection,
    /// `[ui]`: the terminal UI.
    #[serde(default)]
    pub ui: UiSection,
    /// `[hooks]`: the user's hooks, and the workspaces whose own hooks may run.
    #[serde(default)]
    pub hooks: crate::hooks::config::HooksSection,
}

/// The `[ui]` table.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiSection {
    /// Ring the terminal (a desktop notification where the terminal shows them) when a
    /// turn ends or an approval waits while the terminal is not focused; default on.
    pub notify: Option<bool>,
}

/// The `[network]` table; unset fields keep the defaults of [`RetryPolicy`] and
/// [`DEFAULT_IDLE_TIMEOUT`].
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    /// Retries of a model call that failed for a passing reason (rate limit, overload,
    /// network); 0 turns retrying off.
    pub max_retries: Option<u32>,
    /// Seconds without a byte from the provider before the call is abandoned (and
    /// retried).
    pub idle_timeout_secs: Option<NonZeroU64>,
    /// Chat completions: ask for the final usage chunk with `stream_options`; `false`
    /// for a server that refuses the field.
    pub stream_options: Option<bool>,
}

impl NetworkSection {
    fn retry_policy(&self) -> RetryPolicy {
        let default = RetryPolicy::default();
        RetryPolicy {
            max_retries: self.max_retries.unwrap_or(default.max_retries),
            ..default
        }
    }

    fn request_features(&self) -> RequestFeatures {
        RequestFeatures {
            stream_options: self
                .stream_options
                .unwrap_or(RequestFeatures::default().stream_options),
        }
    }

    fn idle_timeout(&self) -> Duration {
        self.idle_timeout_secs
            .map_or(DEFAULT_IDLE_TIMEOUT, |secs| Duration::from_secs(secs.get()))
    }
}

/// The `[shell]` table; unset fields keep [`ShellConfig`]'s defaults.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellSection {
    /// Seconds a command may run unless the call asks for another limit.
    pub timeout_secs: Option<u64>,
    /// The most a call may ask for.
    pub max_timeout_secs: Option<u64>,
    /// Seconds of silence after which a command blocked reading the terminal is stopped
    /// as "waiting for input"; 0 turns the check off.
    pub input_wait_secs: Option<u64>,
    /// Variables the shell inherits although they look like credentials.
    #[serde(default)]
    pub keep_env: Vec<String>,
}

impl ShellSection {
    fn apply(&self, mut config: ShellConfig) -> ShellConfig {
        if let Some(secs) = self.timeout_secs {
            config.default_timeout = Duration::from_secs(secs);
        }
        if let Some(secs) = self.max_timeout_secs {
            config.max_timeout = Duration::from_secs(secs);
        }
        if let Some(secs) = self.input_wait_secs {
            config.input_wait = (secs > 0).then(|| Duration::from_secs(secs));
        }
        config.secrets.keep.clone_from(&self.keep_env);
        config
    }
}

/// The `[sandbox]` table: on, without network, by default.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// Confine the shell at all (default true).
    pub enabled: Option<bool>,
    /// Let commands use the network (default false).
    pub network: Option<bool>,
    /// More writable paths: absolute, or `~/...` in the home directory.
    #[serde(default)]
    pub writable: Vec<String>,
    /// Credential paths programs may read after all (`~/.npmrc`).
    #[serde(default)]
    pub expose: Vec<String>,
    /// Layers programs may run without when the machine cannot apply them; `"all"`
    /// accepts running with no sandbox at all.
    #[serde(default)]
    pub accept_missing: Vec<String>,
}

impl SandboxSection {
    /// The sandbox settings; `own_dirs` (duet's config and state directories) are
    /// hidden from programs along with the user's credentials.
    fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        own_dirs: &[PathBuf],
    ) -> Result<Option<SandboxConfig>, ConfigError> {
        if !self.enabled.unwrap_or(true) {
            return Ok(None);
        }
        let paths = |setting: &'static str, list: &[String]| -> Result<Vec<PathBuf>, ConfigError> {
            list.iter()
                .map(|path| home_path(setting, path, env))
                .collect()
        };
        let writable = paths("[sandbox] writable", &self.writable)?;
        let expose = paths("[sandbox] expose", &self.expose)?;
        let mut hidden: Vec<PathBuf> = match env("HOME") {
            Some(home) => CREDENTIAL_PATHS
                .iter()
                .map(|relative| Path::new(&home).join(relative))
                .collect(),
            None => Vec::new(),
        };
        hidden.extend(own_dirs.iter().cloned());
        hidden.retain(|path| !expose.contains(path));
        let accept_missing = self
            .accept_missing
            .iter()
            .map(|name| match name.as_str() {
                "all" => Ok(LayerName::ALL.to_vec()),
                name => name.parse::<LayerName>().map(|layer| vec![layer]),
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(|message| ConfigError::BadSetting {
                setting: "[sandbox] accept_missing",
                message: format!("{message}, or \"all\""),
            })?
            .concat();
        Ok(Some(SandboxConfig {
            launcher: None,
            network: self.network.unwrap_or(false),
            writable,
            hidden,
            accept_missing,
            workspace_read_only: false,
        }))
    }
}

fn home_path(
    setting: &'static str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, ConfigError> {
    let bad = |message: &str| ConfigError::BadSetting {
        setting,
        message: format!("`{text}` {message}"),
    };
    let path = match text.strip_prefix("~/") {
        Some(rest) => {
            PathBuf::from(env("HOME").ok_or_else(|| bad("needs HOME to be set"))?).join(rest)
        }
        None => PathBuf::from(text),
    };
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(bad("is not an absolute path (or one starting with ~/)"))
    }
}

/// Settings given on the command line; they win over everything else.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Flags {
    pub provider: Option<Wire>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub approval: Option<ApprovalMode>,
    pub budget: BudgetSection,
}

/// Fully resolved settings for one run.
#[derive(Clone, Debug)]
pub struct Settings {
    pub endpoint: Endpoint,
    /// The environment variable the API key is read from (named in auth errors).
    pub api_key_env: String,
    pub approval: ApprovalMode,
    pub max_tokens: u32,
    pub retry: RetryPolicy,
    /// No byte from the provider for this long abandons a model call.
    pub idle_timeout: Duration,
    /// Optional request fields the server is asked with.
    pub request_features: RequestFeatures,
    pub shell: ShellConfig,
    pub lint: LintConfig,
    pub policy: PolicyConfig,
    pub budget: Budget,
    /// The context window and prices of `endpoint.model`, where known.
    pub model_info: ModelInfo,
    /// When the conversation is compacted.
    pub compaction: Compaction,
    /// The MCP servers of the user's `[mcp]` table (a project's are added where the
    /// workspace is known).
    pub mcp: McpConfig,
    /// Whether the terminal UI notifies (`[ui] notify`).
    pub notify: bool,
    /// The user's hooks (a trusted project's are added where the workspace is known).
    pub hooks: Vec<crate::hooks::Hook>,
    /// The `[hooks]` table, which says which projects' hooks may run.
    pub hooks_section: crate::hooks::config::HooksSection,
}

/// Where duet reads and writes its own files.
#[derive(Clone, Debug, PartialEq)]
pub struct Paths {
    pub config_file: PathBuf,
    pub state_dir: PathBuf,
}

impl Paths {
    /// The platform directories (`~/.config/duet`, `~/.local/state/duet` on Linux),
    /// honouring `XDG_CONFIG_HOME` / `XDG_STATE_HOME`.
    pub fn discover() -> Result<Self, ConfigError> {
        let dirs = directories::ProjectDirs::from("", "", "duet").ok_or(ConfigError::NoHome)?;
        let state_dir = dirs
            .state_dir()
            .unwrap_or_else(|| dirs.data_local_dir())
            .to_path_buf();
        Ok(Self {
            config_file: dirs.config_dir().join("config.toml"),
            state_dir,
        })
    }

    pub fn log_file(&self) -> PathBuf {
        self.state_dir.join("logs").join("duet.log")
    }

    /// Where session transcripts are recorded, one `<id>.jsonl` file each.
    pub fn sessions_dir(&self) -> PathBuf {
        self.state_dir.join("sessions")
    }

    /// Where clipped tool outputs of one session are saved in full.
    pub fn outputs_dir(&self, session_id: &str) -> PathBuf {
        self.state_dir.join("outputs").join(session_id)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}", not_configured_help(.config_file))]
    NotConfigured { config_file: PathBuf },
    #[error(
        "{provider} needs an API key: set {env_var} (or point {base_env} at a server that needs none)"
    )]
    MissingKey {
        provider: Wire,
        env_var: String,
        base_env: &'static str,
    },
    #[error(
        "no model chosen for the server at {base_url}: set DUET_MODEL (or `model` in the config \
         file) to a model it serves"
    )]
    MissingModel { base_url: String },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error(
        "a cost budget is set but the price of `{model}` is unknown, so it cannot be \
         enforced: add its prices to the config file, e.g.\n\n  [models.\"{model}\"]\n  \
         input = 3.0    # US dollars per million tokens\n  output = 15.0"
    )]
    UnpricedModel { model: String },
    #[error("environment variable {name}: {message}")]
    BadEnv { name: String, message: String },
    #[error("{setting}: {message}")]
    BadSetting {
        setting: &'static str,
        message: String,
    },
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not find a home directory for duet's config and state files")]
    NoHome,
    #[error(transparent)]
    Mcp(#[from] McpConfigError),
}

/// Reads the config file; a missing file is an empty config.
pub fn load_file(path: &Path) -> Result<FileConfig, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_file(path, &text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(FileConfig::default()),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Parses config text; errors name the file and line.
pub fn parse_file(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|error| {
        let line = error
            .span()
            .map(|span| line_of(text, span.start))
            .unwrap_or(1);
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            message: error.message().trim().to_string(),
        }
    })
}

fn line_of(text: &str, byte: usize) -> usize {
    let end = byte.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Resolves the settings from the config file, an environment lookup and flags.
pub fn resolve(
    file: &FileConfig,
    env: &dyn Fn(&str) -> Option<String>,
    flags: &Flags,
    paths: &Paths,
) -> Result<Settings, ConfigError> {
    let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let wire = match flags
        .provider
        .or(parse_env(&env, "DUET_PROVIDER")?)
        .or(file.provider)
    {
        Some(wire) => wire,
        None => infer_wire(&env).ok_or_else(|| ConfigError::NotConfigured {
            config_file: paths.config_file.clone(),
        })?,
    };
    let vars = WireVars::of(wire);
    let custom_base = flags
        .base_url
        .clone()
        .or_else(|| env(vars.base_env))
        .or_else(|| file.base_url.clone());
    let key_env = file
        .api_key_env
        .clone()
        .unwrap_or_else(|| vars.key_env.to_string());
    let api_key = env(&key_env);
    if api_key.is_none() && custom_base.is_none() {
        return Err(ConfigError::MissingKey {
            provider: wire,
            env_var: key_env.clone(),
            base_env: vars.base_env,
        });
    }
    let model = flags
        .model
        .clone()
        .or_else(|| env("DUET_MODEL"))
        .or_else(|| file.model.clone());
    let model = match (model, &custom_base) {
        (Some(model), _) => model,
        // A local server serves whatever it was started with; guessing would only fail later.
        (None, Some(base)) if matches!(wire, Wire::OpenAiChat | Wire::OpenAiResponses) => {
            return Err(ConfigError::MissingModel {
                base_url: base.clone(),
            });
        }
        (None, _) => vars.default_model.to_string(),
    };
    let model_info = models::lookup(&model, &file.models);
    let budget = file.budget.overlaid(&flags.budget).resolve();
    if budget.max_cost_usd.is_some() && model_info.prices.is_none() {
        return Err(ConfigError::UnpricedModel { model });
    }
    let mut shell = resolve_shell(file, &env, paths)?;
    // The key duet itself uses never reaches the shell, whatever it is called.
    shell.secrets.extra.push(key_env.clone());
    Ok(Settings {
        endpoint: Endpoint {
            wire,
            base_url: custom_base.unwrap_or_else(|| vars.default_base.to_string()),
            api_key,
            model,
        },
        api_key_env: key_env,
        approval: flags
            .approval
            .or(parse_env(&env, "DUET_APPROVAL")?)
            .or(file.approval)
            .unwrap_or_default(),
        max_tokens: file.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        retry: file.network.retry_policy(),
        idle_timeout: file.network.idle_timeout(),
        request_features: file.network.request_features(),
        shell,
        lint: file.lint.clone(),
        policy: file.policy.clone(),
        budget,
        model_info,
        compaction: file.context.resolve()?,
        mcp: crate::mcp::config::from_user(&file.mcp, &paths.config_file)?,
        notify: file.ui.notify.unwrap_or(true),
        hooks: file.hooks.user_hooks(&paths.config_file).map_err(|error| {
            ConfigError::BadSetting {
                setting: "hooks",
                message: error.to_string(),
            }
        })?,
        hooks_section: file.hooks.clone(),
    })
}

/// The shell's settings alone (`[shell]` and `[sandbox]`), which need no model.
pub fn resolve_shell(
    file: &FileConfig,
    env: &dyn Fn(&str) -> Option<String>,
    paths: &Paths,
) -> Result<ShellConfig, ConfigError> {
    let mut shell = file.shell.apply(ShellConfig::default());
    let own_dirs: Vec<PathBuf> = paths
        .config_file
        .parent()
        .into_iter()
        .map(Path::to_path_buf)
        .chain([paths.state_dir.clone()])
        .collect();
    shell.sandbox = file.sandbox.resolve(env, &own_dirs)?;
    Ok(shell)
}

struct WireVars {
    key_env: &'static str,
    base_env: &'static str,
    default_base: &'static str,
    default_model: &'static str,
}

impl WireVars {
    fn of(wire: Wire) -> Self {
        match wire {
            Wire::Anthropic => Self {
                key_env: "ANTHROPIC_API_KEY",
                base_env: "ANTHROPIC_BASE_URL",
                default_base: ANTHROPIC_DEFAULT_BASE,
                default_model: ANTHROPIC_DEFAULT_MODEL,
            },
            Wire::OpenAiChat | Wire::OpenAiResponses => Self {
                key_env: "OPENAI_API_KEY",
                base_env: "OPENAI_BASE_URL",
                default_base: OPENAI_DEFAULT_BASE,
                default_model: OPENAI_DEFAULT_MODEL,
            },
        }
    }
}

/// With no provider named anywhere, the first wire whose key or base URL is set wins.
fn infer_wire(env: &dyn Fn(&str) -> Option<String>) -> Option<Wire> {
    Wire::ALL.into_iter().find(|&wire| {
        let vars = WireVars::of(wire);
        env(vars.key_env).is_some() || env(vars.base_env).is_some()
    })
}

fn parse_env<T: std::str::FromStr<Err = String>>(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
) -> Result<Option<T>, ConfigError> {
    env(name)
        .map(|value| value.trim().parse())
        .transpose()
        .map_err(|message| ConfigError::BadEnv {
            name: name.to_string(),
            message,
        })
}

fn not_configured_help(config_file: &Path) -> String {
    format!(
        "duet needs a model to talk to, and none is configured. Set one of these and run again:

  Anthropic       export ANTHROPIC_API_KEY=sk-ant-...
  OpenAI          export OPENAI_API_KEY=sk-...
  OpenAI (Responses API)  export OPENAI_API_KEY=sk-... DUET_PROVIDER=openai-responses
  Ollama          export OPENAI_BASE_URL=http://127.0.0.1:11434/v1 DUET_MODEL=qwen2.5-coder
  llama.cpp/vLLM  export OPENAI_BASE_URL=http://127.0.0.1:8080/v1 DUET_MODEL=<served model>

Optional: DUET_MODEL picks the model (defaults: {ANTHROPIC_DEFAULT_MODEL}, {OPENAI_DEFAULT_MODEL}),
ANTHROPIC_BASE_URL / OPENAI_BASE_URL point at another server, DUET_PROVIDER=anthropic|openai|openai-responses
chooses when both are set. The same settings can live in {}:

  provider = \"anthropic\"        # or \"openai\", \"openai-responses\"
  model = \"{ANTHROPIC_DEFAULT_MODEL}\"
  # base_url = \"http://127.0.0.1:11434/v1\"
  # approval = \"ask\"            # or \"auto-edit\", \"auto\", \"read-only\"",
        config_file.display()
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use pretty_assertions::assert_eq;

    use super::*;
    use crate::policy::CommandClass;

    fn paths() -> Paths {
        Paths {
            config_file: PathBuf::from("/home/u/.config/duet/config.toml"),
            state_dir: PathBuf::from("/home/u/.local/state/duet"),
        }
    }

    fn resolve_with(
        file: &FileConfig,
        vars: &[(&str, &str)],
        flags: &Flags,
    ) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(file, &|name| map.get(name).cloned(), flags, &paths())
    }

    #[test]
    fn nothing_configured_explains_every_option_in_one_screen() {
        let error = resolve_with(&FileConfig::default(), &[], &Flags::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        for needle in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "DUET_MODEL",
            "/home/u/.config/duet/config.toml",
        ] {
            assert!(error.contains(needle), "missing {needle} in:\n{error}");
        }
        assert!(
            error.lines().count() <= 24,
            "more than one screen:\n{error}"
        );
    }

    #[test]
    fn anthropic_key_alone_selects_anthropic_with_defaults() {
        let settings = resolve_with(
            &FileConfig::default(),
            &[("ANTHROPIC_API_KEY", "k")],
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(settings.endpoint.wire, Wire::Anthropic);
        assert_eq!(settings.endpoint.base_url, ANTHROPIC_DEFAULT_BASE);
        assert_eq!(settings.endpoint.model, ANTHROPIC_DEFAULT_MODEL);
        assert_eq!(settings.endpoint.api_key.as_deref(), Some("k"));
        assert_eq!(settings.approval, ApprovalMode::Ask);
    }

    #[test]
    fn local_openai_server_needs_no_key_but_a_model() {
        let base = [("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")];
        let error = resolve_with(&FileConfig::default(), &base, &Flags::default()).err();
        assert!(
            matches!(error, Some(ConfigError::MissingModel { .. })),
            "{error:?}"
        );

        let vars = [base[0], ("DUET_MODEL", "qwen2.5-coder")];
        let settings = resolve_with(&FileConfig::default(), &vars, &Flags::default()).unwrap();
        assert_eq!(settings.endpoint.wire, Wire::OpenAiChat);
        assert_eq!(settings.endpoint.api_key, None);
        assert_eq!(settings.endpoint.model, "qwen2.5-coder");
    }

    #[test]
    fn hosted_provider_without_key_names_the_variable() {
        let file = FileConfig {
            provider: Some(Wire::OpenAiChat),
            ..FileConfig::default()
        };
        let error = resolve_with(&file, &[], &Flags::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("OPENAI_API_KEY"), "{error}");
    }

    #[test]
    fn openai_responses_is_chosen_by_name_and_uses_the_openai_variables() {
        let vars = [
            ("OPENAI_API_KEY", "o"),
            ("OPENAI_BASE_URL", "https://proxy/v1"),
        ];
        // The key alone still means chat completions: Responses is never guessed.
        let settings = resolve_with(&FileConfig::default(), &vars[..1], &Flags::default()).unwrap();
        assert_eq!(settings.endpoint.wire, Wire::OpenAiChat);

        let file: FileConfig = toml::from_str("provider = \"openai-responses\"").unwrap();
        let settings = resolve_with(&file, &vars[..1], &Flags::default()).unwrap();
        assert_eq!(settings.endpoint.wire, Wire::OpenAiResponses);
        assert_eq!(settings.endpoint.base_url, OPENAI_DEFAULT_BASE);
        assert_eq!(settings.endpoint.model, OPENAI_DEFAULT_MODEL);
        assert_eq!(settings.endpoint.api_key.as_deref(), Some("o"));

        let with_env = [vars[0], vars[1], ("DUET_PROVIDER", "openai-responses")];
        let error = resolve_with(&FileConfig::default(), &with_env, &Flags::default()).err();
        assert!(
            matches!(error, Some(ConfigError::MissingModel { .. })),
            "{error:?}"
        );
        let bad = [("DUET_PROVIDER", "openai-response")];
        let error = resolve_with(&FileConfig::default(), &bad, &Flags::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("valid: anthropic, openai, openai-responses"),
            "{error}"
        );
    }

    #[test]
    fn flags_beat_environment_beat_file() {
        let file = FileConfig {
            provider: Some(Wire::OpenAiChat),
            model: Some("from-file".into()),
            approval: Some(ApprovalMode::ReadOnly),
            max_tokens: Some(1000),
            ..FileConfig::default()
        };
        let vars = [
            ("ANTHROPIC_API_KEY", "a"),
            ("OPENAI_API_KEY", "o"),
            ("DUET_MODEL", "from-env"),
        ];
        let settings = resolve_with(&file, &vars, &Flags::default()).unwrap();
        assert_eq!(settings.endpoint.wire, Wire::OpenAiChat);
        assert_eq!(settings.endpoint.model, "from-env");
        assert_eq!(settings.approval, ApprovalMode::ReadOnly);
        assert_eq!(settings.max_tokens, 1000);

        let flags = Flags {
            provider: Some(Wire::Anthropic),
            model: Some("from-flag".into()),
            base_url: Some("http://127.0.0.1:9".into()),
            approval: Some(ApprovalMode::Auto),
            budget: BudgetSection::default(),
        };
        let settings = resolve_with(&file, &vars, &flags).unwrap();
        assert_eq!(settings.endpoint.wire, Wire::Anthropic);
        assert_eq!(settings.endpoint.model, "from-flag");
        assert_eq!(settings.endpoint.base_url, "http://127.0.0.1:9");
        assert_eq!(settings.endpoint.api_key.as_deref(), Some("a"));
        assert_eq!(settings.approval, ApprovalMode::Auto);
    }

    #[test]
    fn custom_key_variable_is_honoured() {
        let file = FileConfig {
            provider: Some(Wire::Anthropic),
            api_key_env: Some("WORK_CLAUDE_KEY".into()),
            ..FileConfig::default()
        };
        let settings = resolve_with(&file, &[("WORK_CLAUDE_KEY", "w")], &Flags::default()).unwrap();
        assert_eq!(settings.endpoint.api_key.as_deref(), Some("w"));
        assert_eq!(settings.api_key_env, "WORK_CLAUDE_KEY");
    }

    #[test]
    fn bad_environment_values_are_named() {
        let vars = [("ANTHROPIC_API_KEY", "a"), ("DUET_APPROVAL", "yolo")];
        let error = resolve_with(&FileConfig::default(), &vars, &Flags::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("DUET_APPROVAL"), "{error}");
        assert!(error.contains("read-only"), "{error}");
    }

    #[test]
    fn file_errors_carry_line_numbers_and_valid_choices() {
        let path = Path::new("/c/config.toml");
        let text = "model = \"m\"\n\nprovider = \"gemini\"\n";
        let error = parse_file(path, text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.starts_with("/c/config.toml:3:"), "{error}");
        assert!(error.contains("anthropic"), "{error}");

        let error = parse_file(path, "modle = \"m\"\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.starts_with("/c/config.toml:1:"), "{error}");
        assert!(error.contains("modle"), "{error}");
    }

    #[test]
    fn a_full_file_parses() {
        let text = r#"
provider = "openai"
model = "llama3"
base_url = "http://127.0.0.1:8080/v1"
approval = "read-only"
max_tokens = 4096
"#;
        let file = parse_file(Path::new("c.toml"), text).unwrap();
        assert_eq!(
            file,
            FileConfig {
                provider: Some(Wire::OpenAiChat),
                model: Some("llama3".into()),
                base_url: Some("http://127.0.0.1:8080/v1".into()),
                api_key_env: None,
                approval: Some(ApprovalMode::ReadOnly),
                max_tokens: Some(4096),
                shell: ShellSection::default(),
                lint: LintConfig::default(),
                policy: PolicyConfig::default(),
                sandbox: SandboxSection::default(),
                budget: BudgetSection::default(),
                models: ModelTable::default(),
                network: NetworkSection::default(),
                context: ContextSection::default(),
                mcp: McpSection::default(),
                ui: UiSection::default(),
                hooks: Default::default(),
            }
        );
    }

    #[test]
    fn budget_and_models_tables_reach_the_settings() {
        let text = r#"
model = "my-local"
[budget]
max_steps = 12
max_cost_usd = 0.5
[models."my-local"]
context_window = 32768
input = 0.1
output = 0.2
"#;
        let file = parse_file(Path::new("c.toml"), text).unwrap();
        let vars = [("ANTHROPIC_API_KEY", "k")];
        let settings = resolve_with(&file, &vars, &Flags::default()).unwrap();
        assert_eq!(settings.budget.max_steps, 12);
        assert_eq!(settings.budget.max_cost_usd, Some(0.5));
        assert_eq!(settings.model_info.context_window, Some(32_768));
        assert_eq!(settings.model_info.prices.map(|p| p.output), Some(0.2));
    }

    #[test]
    fn the_context_table_reaches_the_settings() {
        let text = "[context]\ncompact_at = 0.5\nkeep_recent_steps = 2\n";
        let file = parse_file(Path::new("c.toml"), text).unwrap();
        let vars = [("ANTHROPIC_API_KEY", "k")];
        let settings = resolve_with(&file, &vars, &Flags::default()).unwrap();
        assert_eq!(settings.compaction.compact_at, 0.5);
        assert_eq!(settings.compaction.keep_recent_steps, 2);
        let bad = parse_file(Path::new("c.toml"), "[context]\ncompact_at = 2.0\n").unwrap();
        let error = resolve_with(&bad, &vars, &Flags::default()).unwrap_err();
        assert!(error.to_string().contains("context.compact_at"), "{error}");
    }

    #[test]
    fn a_cost_budget_for_an_unpriced_model_is_refused() {
        let file = parse_file(Path::new("c.toml"), "model = \"mystery\"\n").unwrap();
        let flags = Flags {
            budget: BudgetSection {
                max_cost_usd: Some(1.0),
                ..BudgetSection::default()
            },
            ..Flags::default()
        };
        let vars = [("ANTHROPIC_API_KEY", "k")];
        let error = resolve_with(&file, &vars, &flags).unwrap_err().to_string();
        assert!(error.contains("price of `mystery` is unknown"), "{error}");
        assert!(error.contains("[models.\"mystery\"]"), "{error}");
    }

    #[test]
    fn the_network_table_sets_retries_and_the_idle_watchdog() {
        let with_key = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "k".to_string());
        let defaults = resolve(
            &FileConfig::default(),
            &with_key,
            &Flags::default(),
            &paths(),
        )
        .unwrap();
        assert_eq!(defaults.retry, RetryPolicy::default());
        assert_eq!(defaults.idle_timeout, DEFAULT_IDLE_TIMEOUT);
        assert_eq!(defaults.api_key_env, "ANTHROPIC_API_KEY");
        assert!(defaults.request_features.stream_options);

        let text = "[network]\nmax_retries = 0\nidle_timeout_secs = 20\nstream_options = false\n";
        let file = parse_file(Path::new("c.toml"), text).unwrap();
        let settings = resolve(&file, &with_key, &Flags::default(), &paths()).unwrap();
        assert_eq!(settings.retry.max_retries, 0);
        assert_eq!(
            settings.retry.initial_delay,
            RetryPolicy::default().initial_delay
        );
        assert_eq!(settings.idle_timeout, Duration::from_secs(20));
        assert!(!settings.request_features.stream_options);

        let error = parse_file(Path::new("/c.toml"), "[network]\nidle_timeout_secs = 0\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.starts_with("/c.toml:2:"), "{error}");
    }

    #[test]
    fn the_policy_table_reaches_the_settings() {
        let text = r#"
[policy]
protected = ["secrets/**", "!Cargo.lock"]
auto_allow = ["network"]
"#;
        let file = parse_file(Path::new("c.toml"), text).unwrap();
        let vars = [("ANTHROPIC_API_KEY", "k")];
        let settings = resolve_with(&file, &vars, &Flags::default()).unwrap();
        assert_eq!(settings.policy.auto_allow, [CommandClass::Network]);
        assert!(
            settings
                .policy
                .protected
                .check(Path::new("secrets/token"))
                .is_some()
        );
        assert_eq!(
            settings.policy.protected.check(Path::new("Cargo.lock")),
            None
        );
    }

    #[test]
    fn policy_mistakes_are_reported_with_their_line() {
        for (text, needle) in [
            ("[policy]\nprotected = [\"[oops\"]\n", "[oops"),
            ("[policy]\nauto_allow = [\"everything\"]\n", "everything"),
            ("[policy]\nprotect = []\n", "protect"),
        ] {
            let error = parse_file(Path::new("/c/config.toml"), text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.starts_with("/c/config.toml:2:"), "{error}");
            assert!(error.contains(needle), "{error}");
        }
    }

    #[test]
    fn shell_and_lint_tables_configure_their_modules() {
        let text = r#"
[shell]
timeout_secs = 30
input_wait_secs = 0

[lint]
linters = { "*.py" = "ruff check --quiet {path}" }
turn_checks = ["cargo check --quiet"]
"#;
        let file = parse_file(Path::new("c.toml"), text).unwrap();
        let settings = resolve(
            &file,
            &|name| (name == "ANTHROPIC_API_KEY").then(|| "k".to_string()),
            &Flags::default(),
            &paths(),
        )
        .unwrap();
        assert_eq!(settings.shell.default_timeout, Duration::from_secs(30));
        assert_eq!(settings.shell.input_wait, None);
        assert_eq!(
            settings.shell.max_timeout,
            ShellConfig::default().max_timeout
        );
        assert_eq!(settings.lint.turn_checks, ["cargo check --quiet"]);
        assert_eq!(
            settings.lint.linters.get("*.py").map(String::as_str),
            Some("ruff check --quiet {path}")
        );
    }

    #[test]
    fn the_sandbox_is_on_without_network_by_default() {
        let settings = resolve_with(
            &FileConfig::default(),
            &[("ANTHROPIC_API_KEY", "k")],
            &Flags::default(),
        )
        .unwrap();
        let sandbox = settings.shell.sandbox.unwrap();
        assert!(!sandbox.network);
        assert_eq!(sandbox.writable, Vec::<PathBuf>::new());
        assert_eq!(sandbox.accept_missing, []);
        // duet's own config and state are hidden even without a HOME to find more.
        assert_eq!(
            sandbox.hidden,
            [
                PathBuf::from("/home/u/.config/duet"),
                PathBuf::from("/home/u/.local/state/duet")
            ]
        );
        assert_eq!(settings.api_key_env, "ANTHROPIC_API_KEY");
        assert_eq!(settings.shell.secrets.extra, ["ANTHROPIC_API_KEY"]);
    }

    #[test]
    fn sandbox_and_secret_settings_reach_the_shell() {
        let text = r#"
api_key_env = "WORK_CLAUDE_KEY"
provider = "anthropic"

[shell]
keep_env = ["AWS_PROFILE"]

[sandbox]
network = true
writable = ["~/.cache", "/opt/cache"]
"#;
        let file = parse_file(Path::new("c.toml"), text).unwrap();
        let vars = [("WORK_CLAUDE_KEY", "w"), ("HOME", "/home/u")];
        let settings = resolve_with(&file, &vars, &Flags::default()).unwrap();
        assert_eq!(settings.shell.secrets.keep, ["AWS_PROFILE"]);
        assert!(settings.shell.secrets.hides("WORK_CLAUDE_KEY"));
        assert!(!settings.shell.secrets.hides("AWS_PROFILE"));
        let sandbox = settings.shell.sandbox.unwrap();
        assert!(sandbox.network);
        assert_eq!(
            sandbox.writable,
            [PathBuf::from("/home/u/.cache"), PathBuf::from("/opt/cache")]
        );
        assert!(sandbox.hidden.contains(&PathBuf::from("/home/u/.ssh")));
        assert!(sandbox.hidden.contains(&PathBuf::from("/home/u/.npmrc")));

        let off = parse_file(Path::new("c.toml"), "[sandbox]\nenabled = false\n").unwrap();
        let settings = resolve_with(&off, &[("ANTHROPIC_API_KEY", "k")], &Flags::default());
        assert_eq!(settings.unwrap().shell.sandbox, None);
    }

    #[test]
    fn exposed_credentials_are_not_hidden_and_layers_may_be_accepted_missing() {
        let text =
            "[sandbox]\nexpose = [\"~/.npmrc\"]\naccept_missing = [\"syscalls\", \"network\"]\n";
        let file = parse_file(Path::new("c.toml"), text).unwrap();
        let vars = [("ANTHROPIC_API_KEY", "k"), ("HOME", "/home/u")];
        let sandbox = resolve_with(&file, &vars, &Flags::default())
            .unwrap()
            .shell
            .sandbox
            .unwrap();
        assert!(!sandbox.hidden.contains(&PathBuf::from("/home/u/.npmrc")));
        assert!(sandbox.hidden.contains(&PathBuf::from("/home/u/.ssh")));
        assert_eq!(
            sandbox.accept_missing,
            [LayerName::Syscalls, LayerName::Network]
        );

        let all = parse_file(
            Path::new("c.toml"),
            "[sandbox]\naccept_missing = [\"all\"]\n",
        )
        .unwrap();
        let sandbox = resolve_with(&all, &vars, &Flags::default())
            .unwrap()
            .shell
            .sandbox
            .unwrap();
        assert_eq!(sandbox.accept_missing, LayerName::ALL);

        let bad = parse_file(
            Path::new("c.toml"),
            "[sandbox]\naccept_missing = [\"seccomp\"]\n",
        )
        .unwrap();
        let error = resolve_with(&bad, &vars, &Flags::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("accept_missing"), "{error}");
        assert!(error.contains("`seccomp` is not a layer"), "{error}");
    }

    #[test]
    fn a_relative_writable_path_is_refused_by_name() {
        let file = parse_file(Path::new("c.toml"), "[sandbox]\nwritable = [\"cache\"]\n").unwrap();
        let error = resolve_with(&file, &[("ANTHROPIC_API_KEY", "k")], &Flags::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("[sandbox] writable"), "{error}");
        assert!(error.contains("`cache`"), "{error}");
    }

    #[test]
    fn a_bad_linter_pattern_is_reported_with_its_line() {
        let text = "model = \"m\"\n[lint]\nlinters = { \"[*.py\" = \"ruff {path}\" }\n";
        let error = parse_file(Path::new("/c/config.toml"), text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.starts_with("/c/config.toml:3:"), "{error}");
        assert!(error.contains("[*.py"), "{error}");
    }

    #[test]
    fn missing_file_is_empty_config() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            load_file(&dir.path().join("none.toml")).unwrap(),
            FileConfig::default()
        );
    }
}

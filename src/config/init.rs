//! Writing the user's config file and saying where duet keeps its files: `duet config
//! init`, `duet config path`, the model picked in the setup view, and the guidance
//! shown when no model is configured.
//!
//! Owns: the commented template (`assets/config.toml`), the refusal to overwrite an
//! existing file, saving a picked model, and the text listing local servers found by
//! [`super::probe`].
//! Does not own: reading the file (`super`), or probing (`super::probe`).
//! Invariant: an existing config file is never replaced by the template, and saving a
//! pick keeps everything else in the file (comments included).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::probe::FoundServer;
use super::{Paths, not_configured_help};

/// The file `duet config init` writes: every setting, commented out, at its default.
pub const TEMPLATE: &str = include_str!("../../assets/config.toml");

#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error(
        "{} already exists, and duet leaves it as it is: edit it, or move it away and run \
         `duet config init` again",
        .0.display()
    )]
    Exists(PathBuf),
    #[error("could not write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Writes [`TEMPLATE`] to `path` (creating its directory), unless a file is there.
pub fn write_template(path: &Path) -> Result<(), InitError> {
    let failed = |source| InitError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => InitError::Exists(path.to_path_buf()),
            _ => failed(error),
        })?;
    file.write_all(TEMPLATE.as_bytes()).map_err(failed)
}

/// A local model picked in the setup view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalChoice {
    /// The OpenAI-compatible base URL of the server.
    pub base_url: String,
    pub model: String,
}

/// The top-level keys a [`LocalChoice`] sets.
const CHOICE_KEYS: [&str; 3] = ["provider", "model", "base_url"];

/// Saves `choice` in the config file at `path`: the provider, model and base URL go at
/// the top, earlier top-level settings of those keys are commented out, and the rest of
/// the file stays as it is.
pub fn save_choice(path: &Path, choice: &LocalChoice) -> Result<(), InitError> {
    let failed = |source| InitError::Write {
        path: path.to_path_buf(),
        source,
    };
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(failed(error)),
    };
    let text = with_choice(&existing, choice);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(failed)?;
    // Written beside the file and renamed over it, so a failure leaves the old file.
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)?;
    file.persist(path).map_err(|error| failed(error.error))?;
    Ok(())
}

/// `existing` with `choice` set at the top.
fn with_choice(existing: &str, choice: &LocalChoice) -> String {
    let quoted = |value: &str| toml::Value::String(value.to_string()).to_string();
    let mut text = format!(
        "# Picked in duet's setup view.\nprovider = {}\nmodel = {}\nbase_url = {}\n",
        quoted(&crate::provider::Wire::OpenAiChat.to_string()),
        quoted(&choice.model),
        quoted(&choice.base_url),
    );
    let mut top_level = true;
    for line in existing.lines() {
        let trimmed = line.trim_start();
        top_level &= !trimmed.starts_with('[');
        let replaced = top_level
            && CHOICE_KEYS.iter().any(|key| {
                trimmed
                    .strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            });
        if replaced {
            text.push_str("# (replaced by the setup view) ");
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// `duet config path`: one line per kind of file, `extra` (e.g. the keymap) after the
/// config file.
pub fn locations(paths: &Paths, extra: &[(&str, PathBuf)]) -> String {
    let mut rows = vec![("config", paths.config_file.clone())];
    rows.extend(extra.iter().map(|(name, path)| (*name, path.clone())));
    rows.extend([
        ("state", paths.state_dir.clone()),
        ("logs", paths.log_file()),
        ("sessions", paths.sessions_dir()),
    ]);
    rows.iter()
        .map(|(name, path)| format!("{name:<9} {}\n", path.display()))
        .collect()
}

/// The "nothing configured" guidance, followed by the local servers that answered and
/// how to use each.
pub fn nothing_configured(config_file: &Path, found: &[FoundServer]) -> String {
    let mut text = not_configured_help(config_file);
    text.push_str("\n\n");
    if found.is_empty() {
        text.push_str(
            "No local model server answered (looked for Ollama on port 11434, llama.cpp \
             on 8080, vLLM on 8000, LM Studio on 1234).",
        );
        return text;
    }
    text.push_str("Found on this machine:\n");
    for server in found {
        text.push_str(&found_line(server));
    }
    text
}

fn found_line(found: &FoundServer) -> String {
    let (name, base_url) = (found.server.name, &found.server.base_url);
    match found.models.first() {
        None => format!("  {name} at {base_url}, serving no model yet\n"),
        Some(first) => format!(
            "  {name} at {base_url}: {}\n    export OPENAI_BASE_URL={base_url} DUET_MODEL={first}\n",
            found.models.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use pretty_assertions::assert_eq;

    use super::*;
    use crate::config::probe::LocalServer;

    #[test]
    fn init_writes_the_template_once_and_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("duet").join("config.toml");
        write_template(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), TEMPLATE);

        std::fs::write(&path, "model = \"mine\"\n").unwrap();
        let error = write_template(&path).unwrap_err();
        assert!(matches!(error, InitError::Exists(_)), "{error}");
        assert!(error.to_string().contains("config.toml"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "model = \"mine\"\n"
        );
    }

    #[test]
    fn a_saved_choice_replaces_the_model_settings_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let choice = LocalChoice {
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "qwen2.5-coder".into(),
        };
        save_choice(&path, &choice).unwrap();
        let fresh = crate::config::load_file(&path).unwrap();
        assert_eq!(fresh.model.as_deref(), Some("qwen2.5-coder"));

        std::fs::write(
            &path,
            "# mine\nmodel = \"old\"\napproval = \"auto\"\n[models.\"x\"]\ncontext_window = 1\n",
        )
        .unwrap();
        save_choice(&path, &choice).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("# mine\n# (replaced by the setup view) model = \"old\"\n"),
            "{text}"
        );
        assert!(
            text.ends_with("[models.\"x\"]\ncontext_window = 1\n"),
            "{text}"
        );
        // Keys of the same names inside tables are not the model settings.
        let nested = with_choice("[t]\nmodel = 1\n", &choice);
        assert!(nested.ends_with("\n[t]\nmodel = 1\n"), "{nested}");
        let config = crate::config::load_file(&path).unwrap();
        assert_eq!(config.provider, Some(crate::provider::Wire::OpenAiChat));
        assert_eq!(config.model.as_deref(), Some("qwen2.5-coder"));
        assert_eq!(
            config.base_url.as_deref(),
            Some("http://127.0.0.1:11434/v1")
        );
        assert_eq!(config.approval, Some(crate::policy::ApprovalMode::Auto));
    }

    /// The keys `FileConfig` accepts at the top level (`table` empty) or in `table`,
    /// from serde's own list in its unknown-field error.
    fn accepted_keys(table: &str) -> BTreeSet<String> {
        let header = if table.is_empty() {
            String::new()
        } else {
            format!("[{table}]\n")
        };
        let text = format!("{header}not_a_setting = 0\n");
        let error = crate::config::parse_file(Path::new("c.toml"), &text)
            .unwrap_err()
            .to_string();
        let (_, expected) = error.split_once("expected").unwrap();
        expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect()
    }

    /// The template with its commented-out settings and table headers put back.
    fn uncommented_template() -> toml::Table {
        let setting = |line: &str| {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            line.starts_with('[') || (!name.is_empty() && line[name.len()..].starts_with(" = "))
        };
        let text: String = TEMPLATE
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(rest) if setting(rest) => format!("{rest}\n"),
                _ => format!("{line}\n"),
            })
            .collect();
        crate::config::parse_file(Path::new("template"), &text).unwrap();
        text.parse().unwrap()
    }

    fn keys(table: &toml::Table) -> BTreeSet<String> {
        table.keys().cloned().collect()
    }

    #[test]
    fn the_template_documents_every_setting_the_config_accepts() {
        let documented = uncommented_template();
        assert_eq!(keys(&documented), accepted_keys(""));
        for (name, value) in &documented {
            let Some(section) = value.as_table() else {
                continue;
            };
            if name == "models" {
                for (model, entry) in section {
                    let entry = entry.as_table().unwrap();
                    assert_eq!(keys(entry), accepted_keys(&format!("models.\"{model}\"")));
                }
                continue;
            }
            assert_eq!(keys(section), accepted_keys(name), "[{name}]");
            // Named entries (`[mcp.servers.NAME]`) are checked like the models'.
            for (table, entries) in section {
                for (entry_name, entry) in entries.as_table().into_iter().flatten() {
                    let header = format!("{name}.{table}.{entry_name}");
                    assert_eq!(
                        keys(entry.as_table().unwrap()),
                        accepted_keys(&header),
                        "[{header}]"
                    );
                }
            }
        }
    }

    #[test]
    fn the_readme_config_reference_is_the_template() {
        let readme = include_str!("../../README.md");
        assert!(
            readme.contains(&format!("```toml\n{TEMPLATE}```\n")),
            "README.md's config reference differs from assets/config.toml"
        );
    }

    #[test]
    fn locations_name_every_kind_of_file() {
        let paths = Paths {
            config_file: PathBuf::from("/c/duet/config.toml"),
            state_dir: PathBuf::from("/s/duet"),
        };
        let text = locations(&paths, &[("keymap", PathBuf::from("/c/duet/keymap.toml"))]);
        assert_eq!(
            text,
            "config    /c/duet/config.toml\n\
             keymap    /c/duet/keymap.toml\n\
             state     /s/duet\n\
             logs      /s/duet/logs/duet.log\n\
             sessions  /s/duet/sessions\n"
        );
    }

    #[test]
    fn the_guidance_lists_found_servers_with_the_line_that_uses_them() {
        let config = Path::new("/c/duet/config.toml");
        let nothing = nothing_configured(config, &[]);
        assert!(nothing.contains("ANTHROPIC_API_KEY"), "{nothing}");
        assert!(
            nothing.contains("No local model server answered"),
            "{nothing}"
        );

        let found = [
            FoundServer {
                server: LocalServer::new("Ollama", "http://127.0.0.1:11434/v1"),
                models: vec!["qwen2.5-coder".into(), "llama3".into()],
            },
            FoundServer {
                server: LocalServer::new("vLLM", "http://127.0.0.1:8000/v1"),
                models: Vec::new(),
            },
        ];
        let text = nothing_configured(config, &found);
        assert!(
            text.ends_with(
                "Found on this machine:\n  Ollama at http://127.0.0.1:11434/v1: qwen2.5-coder, \
                 llama3\n    export OPENAI_BASE_URL=http://127.0.0.1:11434/v1 \
                 DUET_MODEL=qwen2.5-coder\n  vLLM at http://127.0.0.1:8000/v1, serving no \
                 model yet\n"
            ),
            "{text}"
        );
    }
}

//! Writing the user's config file and saying where duet keeps its files: `duet config
//! init`, `duet config path`, and the guidance shown when no model is configured.
//!
//! Owns: the commented template (`assets/config.toml`), the refusal to overwrite an
//! existing file, and the text listing local servers found by [`super::probe`].
//! Does not own: reading the file (`super`), or probing (`super::probe`).
//! Invariant: an existing config file is never replaced.

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

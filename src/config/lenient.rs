//! Reading a config file that has mistakes in it: every unknown key and bad value is
//! reported with its file and line (serde's message names the valid keys or choices),
//! and the settings it would have changed keep their defaults.
//!
//! Owns: the loop that deserializes, drops the setting an error points at, and tries
//! again. Does not own: the file format itself ([`super::FileConfig`]).
//! Invariant: only a file that is not TOML at all, or an error that points at no
//! setting, fails the load; each retry removes one setting, so the loop ends.

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{ConfigError, FileConfig, line_of};

/// A config file read despite mistakes, and the mistakes.
#[derive(Debug, Default)]
pub struct Loaded {
    pub config: FileConfig,
    /// One [`ConfigError::Invalid`] per setting that was ignored.
    pub problems: Vec<ConfigError>,
}

/// Reads the config file leniently; a missing file is an empty config.
pub fn load_file_lenient(path: &Path) -> Result<Loaded, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_file_lenient(path, &text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Loaded::default()),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Parses config text, leaving out (and reporting) each setting that is unknown or
/// has a bad value.
pub fn parse_file_lenient(path: &Path, text: &str) -> Result<Loaded, ConfigError> {
    let invalid = |error: &toml::de::Error| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: error.span().map_or(1, |span| line_of(text, span.start)),
        message: error.message().trim().to_string(),
    };
    let document = DeTable::parse(text).map_err(|error| invalid(&error))?;
    let span = document.span();
    let mut table = document.into_inner();
    let mut problems = Vec::new();
    loop {
        let deserializer = toml::de::Deserializer::from(Spanned::new(span.clone(), table.clone()));
        let error = match FileConfig::deserialize(deserializer) {
            Ok(config) => return Ok(Loaded { config, problems }),
            Err(error) => error,
        };
        let removed = error
            .span()
            .is_some_and(|at| remove_setting_at(&mut table, at.start));
        if !removed {
            return Err(invalid(&error));
        }
        problems.push(invalid(&error));
    }
}

/// Removes the innermost setting whose key or value covers byte `at`; false when none
/// does.
fn remove_setting_at(table: &mut DeTable<'_>, at: usize) -> bool {
    for (_, value) in table.iter_mut() {
        if let DeValue::Table(inner) = value.get_mut()
            && remove_setting_at(inner, at)
        {
            return true;
        }
    }
    let covers = |span: Range<usize>| span.contains(&at);
    let hit = table
        .iter()
        .find(|(key, value)| covers(key.span()) || covers(value.span()))
        .map(|(key, _)| key.clone());
    hit.is_some_and(|key| table.remove(&key).is_some())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::policy::ApprovalMode;
    use crate::provider::Wire;

    fn messages(loaded: &Loaded) -> Vec<String> {
        loaded.problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn every_mistake_is_reported_with_its_line_and_the_rest_is_kept() {
        let text = "\
model = \"m\"
modle = \"typo\"
provider = \"gemini\"
approval = \"auto\"

[shell]
timeout_secs = 30
timeout = 5

[polcy]
protected = []
";
        let loaded = parse_file_lenient(Path::new("/c/config.toml"), text).unwrap();
        assert_eq!(loaded.config.model.as_deref(), Some("m"));
        assert_eq!(loaded.config.approval, Some(ApprovalMode::Auto));
        assert_eq!(loaded.config.provider, None);
        assert_eq!(loaded.config.shell.timeout_secs, Some(30));
        let problems = messages(&loaded);
        assert_eq!(problems.len(), 4, "{problems:#?}");
        let at = |line: usize, needles: &[&str]| {
            let prefix = format!("/c/config.toml:{line}:");
            assert!(
                problems.iter().any(|problem| problem.starts_with(&prefix)
                    && needles.iter().all(|needle| problem.contains(needle))),
                "no problem at line {line} with {needles:?} in {problems:#?}"
            );
        };
        at(2, &["modle", "provider", "model", "base_url"]);
        at(3, &["gemini", "anthropic", "openai"]);
        at(8, &["timeout", "timeout_secs", "input_wait_secs"]);
        at(10, &["polcy", "policy"]);
    }

    #[test]
    fn a_clean_file_has_no_problems_and_matches_the_strict_reader() {
        let text = "provider = \"openai\"\nmodel = \"llama3\"\n[network]\nmax_retries = 1\n";
        let loaded = parse_file_lenient(Path::new("c.toml"), text).unwrap();
        assert!(loaded.problems.is_empty());
        assert_eq!(loaded.config.provider, Some(Wire::OpenAiChat));
        assert_eq!(
            loaded.config,
            super::super::parse_file(Path::new("c.toml"), text).unwrap()
        );
    }

    #[test]
    fn a_file_that_is_not_toml_fails_at_its_line() {
        let error = parse_file_lenient(Path::new("/c.toml"), "model = \"m\"\n\nthis is not toml\n")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("/c.toml:3:"), "{error}");
    }

    #[test]
    fn the_shipped_template_is_read_without_problems() {
        let loaded =
            parse_file_lenient(Path::new("config.toml"), super::super::init::TEMPLATE).unwrap();
        assert!(loaded.problems.is_empty());
        assert_eq!(loaded.config, FileConfig::default());
    }
}

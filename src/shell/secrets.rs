//! Which inherited environment variables the shell never sees: the ones that look like
//! credentials, so a command the model runs (or prints, or sends somewhere) cannot
//! read duet's API key or the user's cloud tokens.
//!
//! Owns: the name patterns and the `keep_env` exceptions. Does not own: removing the
//! variables from the shell's environment (the session does, with this list).
//! Invariant: matching is a pure function of the name; a variable named in `keep`
//! is never dropped.

use std::ffi::{OsStr, OsString};

/// Names (upper-cased) that are credentials wherever they appear.
const EXACT: &[&str] = &["GITHUB_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"];
/// Endings that mark a credential: `FOO_API_KEY`, and the bare `API_KEY` too.
const SUFFIXES: &[&str] = &[
    "API_KEY",
    "KEY",
    "TOKEN",
    "SECRET",
    "SECRET_KEY",
    "PASS",
    "PASSWD",
    "AUTH",
    "DSN",
];
/// Endings that mark a credential only after another word: `MYSQL_PWD`, never the
/// shell's own `PWD`.
const QUALIFIED_SUFFIXES: &[&str] = &["_PWD"];
/// Prefixes whose whole family is sensitive.
const PREFIXES: &[&str] = &["AWS_"];
/// Anywhere in the name.
const INFIXES: &[&str] = &["PASSWORD", "CREDENTIAL"];

/// The variables to hide from the shell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretFilter {
    /// Dropped as well, whatever they are called: duet's own key variable when the
    /// config names a custom one.
    pub extra: Vec<String>,
    /// Passed on although they look like credentials (`[shell] keep_env`).
    pub keep: Vec<String>,
}

impl SecretFilter {
    /// Whether the variable `name` is kept from the shell.
    pub fn hides(&self, name: &str) -> bool {
        if self.keep.iter().any(|kept| kept == name) {
            return false;
        }
        looks_like_secret(name) || self.extra.iter().any(|extra| extra == name)
    }

    /// The names among `names` that are kept from the shell, in the order given.
    pub fn hidden<I, N>(&self, names: I) -> Vec<OsString>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<OsStr>,
    {
        names
            .into_iter()
            .filter(|name| self.hides(&name.as_ref().to_string_lossy()))
            .map(|name| name.as_ref().to_os_string())
            .collect()
    }
}

/// Whether `name` is shaped like a credential variable (case-insensitive): one of
/// `*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASS`, `*_PASSWD`, `*_PWD`, `*_AUTH`, `*_DSN`,
/// `*PASSWORD*`, `*CREDENTIAL*`, `AWS_*`, `GITHUB_TOKEN`, `ANTHROPIC_API_KEY`,
/// `OPENAI_API_KEY`.
pub fn looks_like_secret(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    EXACT.contains(&name.as_str())
        || SUFFIXES.iter().any(|suffix| ends_with_word(&name, suffix))
        || QUALIFIED_SUFFIXES
            .iter()
            .any(|suffix| name.len() > suffix.len() && name.ends_with(suffix))
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || INFIXES.iter().any(|infix| name.contains(infix))
}

/// `name` is `word` or ends in `_word`: `GH_TOKEN` and `TOKEN`, not `NOTOKEN`.
fn ends_with_word(name: &str, word: &str) -> bool {
    name.strip_suffix(word)
        .is_some_and(|rest| rest.is_empty() || rest.ends_with('_'))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn credential_shaped_names_are_secrets() {
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "CARGO_REGISTRY_TOKEN",
            "API_KEY",
            "STRIPE_SECRET",
            "STRIPE_SECRET_KEY",
            "DJANGO_SECRET_KEY",
            "PGPASSWORD",
            "MYSQL_PASSWORD_FILE",
            "AWS_ACCESS_KEY_ID",
            "AWS_PROFILE",
            "github_token",
            "my_api_key",
            "STRIPE_KEY",
            "AZURE_OPENAI_KEY",
            "SSH_PRIVATE_KEY",
            "DB_PASS",
            "MYSQL_PWD",
            "SENTRY_DSN",
            "GOOGLE_CREDENTIALS",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "REDIS_AUTH",
            "npm_config__auth",
        ] {
            assert!(looks_like_secret(name), "{name} should be a secret");
        }
    }

    #[test]
    fn ordinary_names_are_not_secrets() {
        for name in [
            "PATH",
            "HOME",
            "TERM",
            "SHELL",
            "EDITOR",
            "NOTOKEN",
            "TOKENIZERS_PARALLELISM",
            "SECRETS_DIR",
            "KEYBOARD",
            "API_KEY_HELP",
            "MY_AWS_REGION",
            "SSH_AUTH_SOCK",
            "PWD",
            "OLDPWD",
            "BYPASS",
            "KEYMAP",
        ] {
            assert!(!looks_like_secret(name), "{name} should not be a secret");
        }
    }

    #[test]
    fn keep_wins_and_extra_names_are_hidden() {
        let filter = SecretFilter {
            extra: vec!["WORK_CLAUDE_KEY".into()],
            keep: vec!["AWS_PROFILE".into()],
        };
        assert!(filter.hides("WORK_CLAUDE_KEY"));
        assert!(filter.hides("AWS_SECRET_ACCESS_KEY"));
        assert!(!filter.hides("AWS_PROFILE"));
        assert!(!filter.hides("PATH"));
    }

    #[test]
    fn hidden_lists_the_matching_names_in_order() {
        let filter = SecretFilter::default();
        let names = ["PATH", "OPENAI_API_KEY", "HOME", "GH_TOKEN"];
        assert_eq!(
            filter.hidden(names),
            [OsString::from("OPENAI_API_KEY"), OsString::from("GH_TOKEN")]
        );
    }
}

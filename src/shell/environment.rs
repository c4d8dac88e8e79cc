//! Which of duet's own environment variables the programs it runs for the project get:
//! an allow-list of names that configure tools (paths, locale, toolchain homes), minus
//! any whose name or value looks like a credential, plus what the user names in
//! `[shell] keep_env`. Everything else — API keys, tokens, database URLs, whatever a
//! user keeps in their environment — is withheld.
//!
//! Owns: the allow-list, the value checks, and the count of what was withheld. Does
//! not own: the variables the shell session sets itself (pagers, `TERM`), or
//! credential-shaped names in general ([`super::secrets`]).
//! Invariant: a variable reaches a program only if its name is allowed and neither its
//! name nor its value looks like a credential, or the user's config names it.

use std::ffi::{OsStr, OsString};

use super::secrets::{SecretFilter, looks_like_secret};

/// Names passed as they are (compared upper-cased).
const EXACT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "LS_COLORS",
    "HOSTNAME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "VIRTUAL_ENV",
    "CC",
    "CXX",
    "AR",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "MAKEFLAGS",
    "LD_LIBRARY_PATH",
    "PKG_CONFIG_PATH",
    "BUNDLE_GEMFILE",
    "GOPATH",
    "GOROOT",
    "GOBIN",
    "GOFLAGS",
    "GOPROXY",
    "GOPRIVATE",
    "GONOPROXY",
    "GONOSUMDB",
    "GOSUMDB",
    "GOINSECURE",
    "GOCACHE",
    "GOMODCACHE",
    "GOTOOLCHAIN",
    "GOOS",
    "GOARCH",
    "GOEXPERIMENT",
];

/// Families of tool settings (compared upper-cased).
const PREFIXES: &[&str] = &[
    "LC_", "XDG_", "CARGO_", "RUSTUP_", "RUST", "PYTHON", "CONDA_", "PYENV_", "PIPX_", "UV_",
    "POETRY_", "NODE_", "NVM_", "JAVA_", "GRADLE_", "MAVEN_", "DOTNET_", "GEM_", "RBENV_", "ASDF_",
    "MISE_", "DENO_", "BUN_", "PNPM_", "VOLTA_", "CMAKE_",
];

/// Name endings whose values are locations.
const SUFFIXES: &[&str] = &["_HOME", "_PATH", "_DIR", "_ROOT"];

/// The part of the environment that programs run for the project get.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvironmentPolicy {
    /// Passed on whatever they are named or hold (`[shell] keep_env`).
    pub keep: Vec<String>,
    /// Withheld whatever they are called: duet's own key variable when the config names
    /// a custom one.
    pub extra_hidden: Vec<String>,
}

/// An environment split by the policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filtered {
    pub passed: Vec<(OsString, OsString)>,
    pub withheld: Vec<OsString>,
}

impl EnvironmentPolicy {
    /// The policy for a `[shell]` secret filter's settings.
    pub fn from_filter(filter: &SecretFilter) -> Self {
        Self {
            keep: filter.keep.clone(),
            extra_hidden: filter.extra.clone(),
        }
    }

    /// Whether the variable `name` holding `value` is passed on.
    pub fn passes(&self, name: &OsStr, value: &OsStr) -> bool {
        let name = name.to_string_lossy();
        if self.keep.iter().any(|kept| *kept == name) {
            return true;
        }
        if self.extra_hidden.iter().any(|hidden| *hidden == name) {
            return false;
        }
        allowed_name(&name) && !looks_like_secret(&name) && !value_looks_secret(value)
    }

    /// Splits `vars` into what is passed and what is withheld, in their order.
    pub fn filter<I>(&self, vars: I) -> Filtered
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let mut filtered = Filtered::default();
        for (name, value) in vars {
            if self.passes(&name, &value) {
                filtered.passed.push((name, value));
            } else {
                filtered.withheld.push(name);
            }
        }
        filtered
    }
}

/// Whether a name is on the allow-list.
fn allowed_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    EXACT.contains(&upper.as_str())
        || PREFIXES.iter().any(|prefix| upper.starts_with(prefix))
        || SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
}

/// A value that carries a credential whatever its name: a URL with a password
/// (`postgres://app:hunter2@db/x`, a proxy with a login), or a private key.
fn value_looks_secret(value: &OsStr) -> bool {
    let value = value.to_string_lossy();
    if value.contains("-----BEGIN") {
        return true;
    }
    value
        .split(|c: char| c.is_whitespace() || c == ',')
        .any(|part| {
            let Some((_, rest)) = part.split_once("://") else {
                return false;
            };
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            authority
                .rsplit_once('@')
                .is_some_and(|(userinfo, _)| userinfo.contains(':'))
        })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn passes(policy: &EnvironmentPolicy, name: &str, value: &str) -> bool {
        policy.passes(OsStr::new(name), OsStr::new(value))
    }

    #[test]
    fn tool_settings_pass() {
        let policy = EnvironmentPolicy::default();
        for name in [
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "CARGO_HOME",
            "RUSTUP_HOME",
            "RUSTFLAGS",
            "GOPATH",
            "PYTHONPATH",
            "VIRTUAL_ENV",
            "JAVA_HOME",
            "ANDROID_SDK_ROOT",
            "XDG_CACHE_HOME",
            "http_proxy",
            "NODE_OPTIONS",
        ] {
            assert!(passes(&policy, name, "/some/where"), "{name} should pass");
        }
    }

    #[test]
    fn credentials_and_unknown_names_are_withheld() {
        let policy = EnvironmentPolicy::default();
        for (name, value) in [
            ("ANTHROPIC_API_KEY", "sk-ant-x"),
            ("OPENAI_API_KEY", "sk-x"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("CARGO_REGISTRY_TOKEN", "x"),
            ("DATABASE_URL", "postgres://app:hunter2@db/x"),
            ("STRIPE_KEY", "sk_live_x"),
            ("SSH_PRIVATE_KEY", "-----BEGIN OPENSSH PRIVATE KEY-----"),
            ("DB_PASS", "x"),
            ("MYSQL_PWD", "x"),
            ("AZURE_OPENAI_KEY", "x"),
            ("SENTRY_DSN", "https://abc@o1.ingest.sentry.io/1"),
            ("GOOGLE_CREDENTIALS", "{}"),
            ("REDIS_AUTH", "x"),
            ("npm_config__auth", "x"),
            ("SOME_RANDOM_SETTING", "x"),
            ("SSH_AUTH_SOCK", "/run/user/1000/ssh-agent"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
        ] {
            assert!(!passes(&policy, name, value), "{name} should be withheld");
        }
    }

    #[test]
    fn an_allowed_name_with_a_secret_value_is_withheld() {
        let policy = EnvironmentPolicy::default();
        assert!(!passes(
            &policy,
            "HTTPS_PROXY",
            "http://me:secret@proxy.corp:3128"
        ));
        assert!(passes(&policy, "HTTPS_PROXY", "http://proxy.corp:3128"));
        assert!(passes(
            &policy,
            "GOPROXY",
            "https://proxy.golang.org,direct"
        ));
        assert!(!passes(
            &policy,
            "PIP_INDEX_URL",
            "https://u:p@pypi.corp/simple"
        ));
    }

    #[test]
    fn keep_wins_and_extra_names_are_withheld() {
        let policy = EnvironmentPolicy {
            keep: vec!["DATABASE_URL".into()],
            extra_hidden: vec!["WORK_KEY_HOME".into()],
        };
        assert!(passes(&policy, "DATABASE_URL", "postgres://a:b@c/d"));
        assert!(!passes(&policy, "WORK_KEY_HOME", "/x"));
    }

    #[test]
    fn filter_keeps_the_order_and_names_what_it_withheld() {
        let policy = EnvironmentPolicy::default();
        let vars = [("PATH", "/bin"), ("OPENAI_API_KEY", "sk"), ("HOME", "/h")]
            .map(|(name, value)| (OsString::from(name), OsString::from(value)));
        let filtered = policy.filter(vars);
        assert_eq!(
            filtered.passed,
            [
                (OsString::from("PATH"), OsString::from("/bin")),
                (OsString::from("HOME"), OsString::from("/h"))
            ]
        );
        assert_eq!(filtered.withheld, [OsString::from("OPENAI_API_KEY")]);
    }
}

//! Environment variables that change what a program runs or where it reads its
//! configuration: setting, exporting or unsetting one is never a read.
//!
//! Owns: the names and name patterns (`GIT_*`, `LESS*`, `*PAGER`, `LD_*`, `PYTHON*`,
//! `*_OPTIONS`, ...), matched on the upper-cased name so `npm_config_x` counts too.
//! Does not own: where an assignment is written (`syntax` finds `X=y cmd`, `export`,
//! `declare -x`, `local`, `readonly`, `unset`, `for X in`, `read X`, `printf -v X`;
//! `wrappers` finds `env X=y`).
//! Invariant: the list errs towards naming too much. A variable missing here is only
//! as safe as every program that reads it, so the patterns are wide (every `GIT_*`,
//! every `*_PATH`, every `*_OPTIONS`), and an assignment of a listed name is
//! [`super::CommandClass::Unknown`] whatever its value.

/// Whole names.
const NAMES: &[&str] = &[
    "PATH",
    "CDPATH",
    "HOME",
    "SHELL",
    "ENV",
    "BASH_ENV",
    "IFS",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "GLOBIGNORE",
    "INPUTRC",
    "EDITOR",
    "VISUAL",
    "BROWSER",
    "TERMINFO",
    "TERMCAP",
    "EXINIT",
    "VIMINIT",
    "MYVIMRC",
    "GVIMINIT",
    "RUSTC",
    "RUSTDOC",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "AS",
    "NM",
    "RANLIB",
    "MAKE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "LUA_INIT",
    "GCONV_PATH",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "TAR_OPTIONS",
    "ZIPOPT",
    "UNZIP",
    "WGETRC",
    "CURL_HOME",
    "GNUPGHOME",
    "SCREENRC",
];

/// Name prefixes: every variable of these programs or mechanisms.
const PREFIXES: &[&str] = &[
    "GIT_",
    "LESS",
    "LD_",
    "DYLD_",
    "BASH_",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "HIST",
    "MAIL",
    "PYTHON",
    "NODE_",
    "NPM_CONFIG_",
    "YARN_",
    "PNPM_",
    "BUN_",
    "DENO_",
    "CARGO_",
    "RUSTC_",
    "RUSTUP_",
    "GO",
    "CGO_",
    "JAVA_",
    "_JAVA_",
    "JDK_",
    "MAVEN_",
    "GRADLE_",
    "DOTNET_",
    "GEM_",
    "BUNDLE_",
    "PIP_",
    "UV_",
    "POETRY_",
    "CONDA",
    "VIRTUAL_ENV",
    "R_",
    "XDG_",
    "SSH_",
    "SUDO_",
    "RIPGREP_",
    "BAT_",
    "FZF_",
    "MAN",
    "GROFF_",
    "SYSTEMD_",
    "DOCKER_",
    "KUBE",
    "AWS_",
    "GCLOUD_",
    "CLOUDSDK_",
    "NIX_",
    "DIRENV_",
    "COMP_",
];

/// Name suffixes: what they name is a program, a configuration file, options or a
/// search path.
const SUFFIXES: &[&str] = &[
    "PAGER",
    "EDITOR",
    "BROWSER",
    "ASKPASS",
    "_COMMAND",
    "_CMD",
    "_PROGRAM",
    "_WRAPPER",
    "_RUNNER",
    "_SHELL",
    "_HOOK",
    "_HOOKS",
    "PATH",
    "_HOME",
    "_CONFIG",
    "_CONFIG_FILE",
    "_CONFIG_DIR",
    "_OPTIONS",
    "_OPTS",
    "OPT",
    "FLAGS",
    "_PRELOAD",
    "_PLUGINS",
    "_INIT",
    "_STARTUP",
    "_LOADER",
];

/// Whether assigning, exporting or unsetting `name` can change what a later command
/// runs, where it reads configuration from, or how the shell itself behaves.
pub(super) fn changes_behaviour(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    NAMES.contains(&upper.as_str())
        || PREFIXES.iter().any(|prefix| upper.starts_with(prefix))
        || SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::changes_behaviour;

    #[test]
    fn variables_that_run_programs_or_load_code_are_named() {
        for name in [
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "GIT_CONFIG_VALUE_0",
            "GIT_CONFIG_PARAMETERS",
            "GIT_PAGER",
            "GIT_EXTERNAL_DIFF",
            "GIT_SSH",
            "GIT_SSH_COMMAND",
            "GIT_EDITOR",
            "GIT_DIR",
            "GIT_WORK_TREE",
            "LESSOPEN",
            "LESSCLOSE",
            "LESSKEYIN",
            "PAGER",
            "MANPAGER",
            "SYSTEMD_PAGER",
            "EDITOR",
            "VISUAL",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "BASH_ENV",
            "ENV",
            "PROMPT_COMMAND",
            "PS0",
            "PS1",
            "PS4",
            "PYTHONPATH",
            "PYTHONSTARTUP",
            "NODE_OPTIONS",
            "RUSTC_WRAPPER",
            "RUSTC",
            "RUSTFLAGS",
            "CARGO_BUILD_RUSTC_WRAPPER",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            "PERL5OPT",
            "RUBYOPT",
            "SHELLOPTS",
            "BASHOPTS",
            "IFS",
            "PATH",
            "CDPATH",
            "HOME",
            "XDG_CONFIG_HOME",
            "RIPGREP_CONFIG_PATH",
            "TAR_OPTIONS",
            "JAVA_TOOL_OPTIONS",
            "npm_config_script_shell",
            "HISTFILE",
            "MAILPATH",
            "GOFLAGS",
            "SSH_ASKPASS",
            "OPENSSL_CONF",
        ] {
            assert!(changes_behaviour(name), "{name}");
        }
    }

    #[test]
    fn ordinary_variables_are_not() {
        for name in [
            "FOO",
            "RUST_LOG",
            "RUST_BACKTRACE",
            "CI",
            "NO_COLOR",
            "LANG",
            "LC_ALL",
            "TZ",
            "DEBUG",
            "COUNT",
            "i",
            "name",
        ] {
            assert!(!changes_behaviour(name), "{name}");
        }
    }
}

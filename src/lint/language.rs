//! Which built-in grammar, if any, checks a file.
//!
//! Owns: the mapping from a path (extension, a few well-known file names, a shebang
//! line for files without an extension) to a tree-sitter grammar, and each language's
//! name as the report shows it.
//! Does not own: parsing or reporting (`syntax.rs`).
//! Invariant: detection is a pure function of the path and the first line of the text;
//! an unknown file gets `None`, never a guess.

use std::path::Path;

/// A language with a built-in syntax check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Language {
    Bash,
    C,
    Cpp,
    Css,
    Go,
    Html,
    JavaScript,
    Json,
    Python,
    Rust,
    Toml,
    Tsx,
    TypeScript,
    Yaml,
}

impl Language {
    /// The language of `path`, falling back to the shebang in `text` for files without
    /// an extension (scripts like `bin/deploy`).
    pub(crate) fn detect(path: &Path, text: &str) -> Option<Self> {
        let name = path.file_name()?.to_str()?;
        if let Some(language) = Self::from_file_name(name) {
            return Some(language);
        }
        match path.extension().and_then(|ext| ext.to_str()) {
            Some(ext) => Self::from_extension(&ext.to_ascii_lowercase()),
            None => Self::from_shebang(text),
        }
    }

    /// Files whose name says what they are although their extension does not.
    fn from_file_name(name: &str) -> Option<Self> {
        match name {
            // Lock and manifest files that are TOML documents.
            "Cargo.lock" | "Pipfile" | "poetry.lock" | "uv.lock" | "pdm.lock" => Some(Self::Toml),
            ".bashrc" | ".bash_profile" | ".bash_aliases" | ".bash_logout" | ".profile"
            | "PKGBUILD" => Some(Self::Bash),
            _ => None,
        }
    }

    fn from_extension(ext: &str) -> Option<Self> {
        let language = match ext {
            "rs" => Self::Rust,
            "py" | "pyi" | "pyw" => Self::Python,
            // The JavaScript grammar parses JSX too.
            "js" | "mjs" | "cjs" | "jsx" => Self::JavaScript,
            "ts" | "mts" | "cts" => Self::TypeScript,
            "tsx" => Self::Tsx,
            "go" => Self::Go,
            "c" => Self::C,
            // `.h` is shared by C and C++; the C++ grammar accepts nearly all C, while
            // the C grammar rejects every class or template, so C++ raises fewer false
            // alarms.
            "h" | "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "inl"
            | "tpp" => Self::Cpp,
            // The JSON grammar accepts comments, so tsconfig-style files pass too.
            "json" | "jsonc" => Self::Json,
            "toml" => Self::Toml,
            "yaml" | "yml" => Self::Yaml,
            "sh" | "bash" => Self::Bash,
            "html" | "htm" | "xhtml" => Self::Html,
            "css" => Self::Css,
            _ => return None,
        };
        Some(language)
    }

    fn from_shebang(text: &str) -> Option<Self> {
        let first_line = text.lines().next()?;
        let command = first_line.strip_prefix("#!")?;
        let mut words = command.split_whitespace();
        let mut program = words.next()?.rsplit('/').next()?;
        if program == "env" {
            // `#!/usr/bin/env -S python3 -u`: skip env's own flags.
            program = words.find(|word| !word.starts_with('-'))?;
        }
        match program {
            "sh" | "bash" | "dash" => Some(Self::Bash),
            "node" => Some(Self::JavaScript),
            _ if program.starts_with("python") => Some(Self::Python),
            _ => None,
        }
    }

    /// The name shown in reports, e.g. "rust" in `lint: clean (rust syntax)`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Bash => "bash",
            Self::C => "c",
            Self::Cpp => "c++",
            Self::Css => "css",
            Self::Go => "go",
            Self::Html => "html",
            Self::JavaScript => "javascript",
            Self::Json => "json",
            Self::Python => "python",
            Self::Rust => "rust",
            Self::Toml => "toml",
            Self::Tsx => "tsx",
            Self::TypeScript => "typescript",
            Self::Yaml => "yaml",
        }
    }

    /// What the reader should know when this grammar reports errors.
    pub(crate) fn caveat(self) -> Option<&'static str> {
        match self {
            // The parser sees code before the preprocessor runs, so a macro used as a
            // specifier (`EXPORT int f(void);`) or as a type (`Array(int) a;`) looks
            // like a syntax error.
            Self::C | Self::Cpp => Some(
                "c/c++ is checked without expanding macros: an error where a macro is \
                 used may be a false alarm if the code compiles",
            ),
            _ => None,
        }
    }

    pub(crate) fn grammar(self) -> tree_sitter::Language {
        let function = match self {
            Self::Bash => tree_sitter_bash::LANGUAGE,
            Self::C => tree_sitter_c::LANGUAGE,
            Self::Cpp => tree_sitter_cpp::LANGUAGE,
            Self::Css => tree_sitter_css::LANGUAGE,
            Self::Go => tree_sitter_go::LANGUAGE,
            Self::Html => tree_sitter_html::LANGUAGE,
            Self::JavaScript => tree_sitter_javascript::LANGUAGE,
            Self::Json => tree_sitter_json::LANGUAGE,
            Self::Python => tree_sitter_python::LANGUAGE,
            Self::Rust => tree_sitter_rust::LANGUAGE,
            Self::Toml => tree_sitter_toml_ng::LANGUAGE,
            Self::Tsx => tree_sitter_typescript::LANGUAGE_TSX,
            Self::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
            Self::Yaml => tree_sitter_yaml::LANGUAGE,
        };
        function.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect(path: &str, text: &str) -> Option<&'static str> {
        Language::detect(Path::new(path), text).map(Language::name)
    }

    #[test]
    fn extensions_pick_the_grammar() {
        for (path, expected) in [
            ("src/main.rs", Some("rust")),
            ("a/b.PY", Some("python")),
            ("x.tsx", Some("tsx")),
            ("x.ts", Some("typescript")),
            ("x.jsx", Some("javascript")),
            ("inc/x.h", Some("c++")),
            ("x.c", Some("c")),
            ("config.yml", Some("yaml")),
            ("README.md", None),
            ("Makefile", None),
        ] {
            assert_eq!(detect(path, ""), expected, "{path}");
        }
    }

    #[test]
    fn well_known_names_and_shebangs() {
        assert_eq!(detect("Cargo.lock", ""), Some("toml"));
        assert_eq!(detect("home/.bashrc", ""), Some("bash"));
        assert_eq!(detect("bin/run", "#!/bin/sh\necho hi\n"), Some("bash"));
        assert_eq!(
            detect("bin/tool", "#!/usr/bin/env -S python3 -u\n"),
            Some("python")
        );
        assert_eq!(
            detect("bin/srv", "#!/usr/bin/env node\n"),
            Some("javascript")
        );
        assert_eq!(detect("bin/perlish", "#!/usr/bin/perl\n"), None);
        assert_eq!(detect("LICENSE", "MIT License\n"), None);
        // A shebang does not override a known extension.
        assert_eq!(detect("x.rs", "#!/bin/sh\n"), Some("rust"));
    }
}

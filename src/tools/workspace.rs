//! The workspace root and the one function that turns a path from the model into a
//! real path inside it.
//!
//! Owns: path resolution (relative and absolute inputs, `..`, symlinks), the open
//! handle of the root that every later use of a resolved path goes through
//! ([`Workspace::place`]), and the root-relative form of paths used in messages.
//! Does not own: whether the path exists or what kind of file it is; tools check that,
//! through [`crate::beneath`].
//! Invariant: [`Workspace::resolve`] only returns paths whose real location (after
//! following every symlink that exists) is the root or below it, in canonical form
//! (no link in them). Tools then use that path relative to the root handle with no
//! link followed, so a directory swapped for a link between the check and the use
//! makes the use fail instead of leaving the root.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::beneath::Root;

use super::ToolError;

/// Why a path from the model was refused. Every message names the path as given and
/// the workspace root it must stay inside.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error(
        "the path is empty. Give a path inside the workspace root `{}`, relative to it \
         (e.g. `src/main.rs`).",
        .root.display()
    )]
    Empty { root: PathBuf },

    #[error(
        "`{input}` is outside the workspace: paths must stay inside the workspace root \
         `{}`. Use a path relative to the root (e.g. `src/main.rs`) that does not climb \
         out of it with `..`.",
        .root.display()
    )]
    Outside { input: String, root: PathBuf },

    #[error(
        "`{input}` leads through a symbolic link to `{}`, which is outside the workspace: \
         paths must stay inside the workspace root `{}`. Only files whose real location \
         is inside the root can be used.",
        .real.display(),
        .root.display()
    )]
    SymlinkOutside {
        input: String,
        real: PathBuf,
        root: PathBuf,
    },

    #[error(
        "`{input}` goes through the symbolic link `{}`, which cannot be followed \
         ({detail}), so it cannot be checked to stay inside the workspace root `{}`. Use \
         a path that does not go through a broken link.",
        .link.display(),
        .root.display()
    )]
    BrokenSymlink {
        input: String,
        link: PathBuf,
        detail: String,
        root: PathBuf,
    },

    #[error(
        "`{input}` could not be resolved ({detail}), so it cannot be checked to stay \
         inside the workspace root `{}`. Check the path and try again.",
        .root.display()
    )]
    Unresolvable {
        input: String,
        detail: String,
        root: PathBuf,
    },
}

impl From<PathError> for ToolError {
    fn from(error: PathError) -> Self {
        ToolError::Refused(error.to_string())
    }
}

/// The directory the tools work in, canonicalized and opened once at start.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
    /// The root, open: every file operation on a resolved path is relative to it.
    handle: Arc<Root>,
    /// `/`, open, for the saved outputs (outside the root): their canonical paths are
    /// used from it with no link followed, so they too are exactly what was checked.
    filesystem: Arc<Root>,
    /// Where clipped tool outputs are saved in full: readable, never writable, so the
    /// model can follow the "full output saved to …" note of a clipped result.
    saved_outputs: Option<PathBuf>,
}

impl PartialEq for Workspace {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root && self.saved_outputs == other.saved_outputs
    }
}

impl Eq for Workspace {}

impl Workspace {
    /// Canonicalizes and opens `root`; fails if it does not exist or cannot be resolved.
    pub fn new(root: &Path) -> io::Result<Self> {
        let root = root.canonicalize()?;
        Ok(Self {
            handle: Arc::new(Root::open(&root)?),
            filesystem: Arc::new(Root::open(Path::new("/"))?),
            root,
            saved_outputs: None,
        })
    }

    /// The open handle of the root.
    pub fn handle(&self) -> &Root {
        &self.handle
    }

    /// Where to use `abs`, a path [`Workspace::resolve`] or
    /// [`Workspace::resolve_for_read`] returned: the root handle and the path relative
    /// to it (`/` and the whole path for a saved output).
    pub fn place<'a>(&self, abs: &'a Path) -> (&Root, &'a Path) {
        match abs.strip_prefix(&self.root) {
            Ok(relative) => (&self.handle, relative),
            Err(_) => (&self.filesystem, abs.strip_prefix("/").unwrap_or(abs)),
        }
    }

    /// The path as the model gave it, root-relative, when it differs from `resolved`
    /// (what [`Workspace::resolve`] made of it) because it goes through a symbolic link:
    /// whoever approves a change must see both.
    pub fn link_route(&self, input: &str, resolved: &Path) -> Option<String> {
        let lexical = normalize_lexically(&self.root.join(input));
        (lexical != resolved).then(|| self.display(&lexical))
    }

    /// Also lets [`Workspace::resolve_for_read`] accept absolute paths of files in
    /// `dir`, duet's own directory of saved tool outputs (it may not exist yet).
    pub fn with_saved_outputs(mut self, dir: &Path) -> Self {
        self.saved_outputs = Some(normalize_lexically(dir));
        self
    }

    /// Like [`Workspace::resolve`], but an absolute path to a saved tool output is also
    /// accepted. Only tools that never write use this.
    pub fn resolve_for_read(&self, input: &str) -> Result<PathBuf, PathError> {
        let inside = self.resolve(input);
        if inside.is_ok() {
            return inside;
        }
        match self.saved_output(input) {
            Some(path) => Ok(path),
            None => inside,
        }
    }

    /// `input` as a real file inside the saved-outputs directory, if it is one.
    fn saved_output(&self, input: &str) -> Option<PathBuf> {
        let dir = self.saved_outputs.as_ref()?.canonicalize().ok()?;
        let real = Path::new(input).canonicalize().ok()?;
        (Path::new(input).is_absolute() && real.starts_with(&dir) && real != dir).then_some(real)
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Turns a path from the model into the real absolute path it names, refusing
    /// anything that is, or leads, outside the root. The target itself need not exist
    /// (a file about to be written); its longest existing ancestor is canonicalized.
    pub fn resolve(&self, input: &str) -> Result<PathBuf, PathError> {
        if input.trim().is_empty() {
            return Err(PathError::Empty {
                root: self.root.clone(),
            });
        }
        let given = Path::new(input);
        let lexical = normalize_lexically(&self.root.join(given));
        // A relative path may not climb out with `..`, even if it would come back in
        // through some outside symlink. Absolute paths are judged by their real
        // location only, so `/var/x` works when the root is `/private/var/x`.
        if !given.is_absolute() && !lexical.starts_with(&self.root) {
            return Err(self.outside(input));
        }
        let real = self.real_location(input, &lexical)?;
        if real.starts_with(&self.root) {
            Ok(real)
        } else if lexical.starts_with(&self.root) {
            Err(PathError::SymlinkOutside {
                input: input.to_string(),
                real,
                root: self.root.clone(),
            })
        } else {
            Err(self.outside(input))
        }
    }

    /// `abs` relative to the root with `/` separators, for messages; `.` for the root
    /// itself, and the absolute path unchanged if it is not under the root.
    pub fn display(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_string(),
            Ok(relative) => relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => abs.display().to_string(),
        }
    }

    fn outside(&self, input: &str) -> PathError {
        PathError::Outside {
            input: input.to_string(),
            root: self.root.clone(),
        }
    }

    /// Canonicalizes the longest existing ancestor of `lexical` and appends the rest.
    fn real_location(&self, input: &str, lexical: &Path) -> Result<PathBuf, PathError> {
        let mut last_error = None;
        for ancestor in lexical.ancestors() {
            match ancestor.canonicalize() {
                Ok(real) => {
                    // `ancestors` yields prefixes of `lexical`, so this cannot fail.
                    let rest = lexical.strip_prefix(ancestor).unwrap_or(Path::new(""));
                    return Ok(if rest.as_os_str().is_empty() {
                        real
                    } else {
                        real.join(rest)
                    });
                }
                Err(error) => {
                    // Something exists here but cannot be followed: a dangling or
                    // looping symlink, or an unreadable directory. Skipping past it
                    // would hide where the path really leads.
                    if let Ok(meta) = ancestor.symlink_metadata() {
                        return Err(self.unfollowable(input, ancestor, &meta, &error));
                    }
                    last_error = Some(error);
                }
            }
        }
        Err(PathError::Unresolvable {
            input: input.to_string(),
            detail: last_error.map_or_else(|| "no part of it exists".into(), |e| e.to_string()),
            root: self.root.clone(),
        })
    }

    fn unfollowable(
        &self,
        input: &str,
        ancestor: &Path,
        meta: &std::fs::Metadata,
        error: &io::Error,
    ) -> PathError {
        if meta.file_type().is_symlink() {
            PathError::BrokenSymlink {
                input: input.to_string(),
                link: PathBuf::from(self.display(ancestor)),
                detail: link_problem(error),
                root: self.root.clone(),
            }
        } else {
            PathError::Unresolvable {
                input: input.to_string(),
                detail: error.to_string(),
                root: self.root.clone(),
            }
        }
    }
}

fn link_problem(error: &io::Error) -> String {
    if error.kind() == io::ErrorKind::NotFound {
        "its target does not exist".to_string()
    } else {
        error.to_string()
    }
}

/// Resolves `.` and `..` without touching the file system. `..` at the file system
/// root stays at the root, as the OS does.
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::fs;

    #[test]
    fn saved_outputs_are_readable_but_nothing_else_outside() {
        let (_dir, ws) = setup();
        let outputs = tempfile::tempdir().unwrap();
        let saved = outputs.path().join("call_1.txt");
        fs::write(&saved, "full output\n").unwrap();
        let ws = ws.with_saved_outputs(outputs.path());
        let input = saved.to_str().unwrap();
        assert_eq!(
            ws.resolve_for_read(input).unwrap(),
            saved.canonicalize().unwrap()
        );
        assert!(
            ws.resolve(input).is_err(),
            "saved outputs are never writable"
        );
        // Relative escapes and other absolute paths stay refused.
        assert!(ws.resolve_for_read("../x").is_err());
        assert!(ws.resolve_for_read("/etc/passwd").is_err());
        let beside = outputs.path().join("..").join("elsewhere.txt");
        assert!(ws.resolve_for_read(beside.to_str().unwrap()).is_err());
    }

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src")).unwrap();
        fs::write(dir.path().join("README.md"), "hi\n").unwrap();
        fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        (dir, workspace)
    }

    #[test]
    fn relative_paths_resolve_under_the_root() {
        let (_dir, ws) = setup();
        assert_eq!(
            ws.resolve("src/main.rs").unwrap(),
            ws.root().join("src/main.rs")
        );
        assert_eq!(
            ws.resolve("./src/./main.rs").unwrap(),
            ws.root().join("src/main.rs")
        );
        assert_eq!(ws.resolve(".").unwrap(), ws.root());
    }

    #[test]
    fn dot_dot_inside_the_root_is_fine() {
        let (_dir, ws) = setup();
        assert_eq!(
            ws.resolve("src/../README.md").unwrap(),
            ws.root().join("README.md")
        );
    }

    #[test]
    fn dot_dot_leaving_the_root_is_refused() {
        let (_dir, ws) = setup();
        for input in ["../etc/passwd", "src/../../x", ".."] {
            let error = ws.resolve(input).unwrap_err();
            assert_eq!(
                error,
                PathError::Outside {
                    input: input.into(),
                    root: ws.root().to_path_buf()
                }
            );
            let message = error.to_string();
            assert!(message.contains(&format!("`{input}`")), "{message}");
            assert!(
                message.contains(&ws.root().display().to_string()),
                "{message}"
            );
        }
    }

    #[test]
    fn absolute_paths_inside_are_allowed_outside_refused() {
        let (_dir, ws) = setup();
        let inside = ws.root().join("src/main.rs");
        assert_eq!(ws.resolve(inside.to_str().unwrap()).unwrap(), inside);
        let outside = ws.root().parent().unwrap().join("elsewhere.txt");
        let error = ws.resolve(outside.to_str().unwrap()).unwrap_err();
        assert!(matches!(error, PathError::Outside { .. }), "{error:?}");
        assert!(ws.resolve("/etc/passwd").is_err());
    }

    #[test]
    fn missing_files_resolve_for_writing() {
        let (_dir, ws) = setup();
        assert_eq!(
            ws.resolve("new/dir/file.txt").unwrap(),
            ws.root().join("new/dir/file.txt")
        );
    }

    #[test]
    fn empty_path_is_refused() {
        let (_dir, ws) = setup();
        for input in ["", "  "] {
            let error = ws.resolve(input).unwrap_err();
            assert!(matches!(error, PathError::Empty { .. }));
            assert!(error.to_string().contains("empty"));
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_inside_the_root_are_followed() {
        let (_dir, ws) = setup();
        std::os::unix::fs::symlink(ws.root().join("README.md"), ws.root().join("link.md")).unwrap();
        std::os::unix::fs::symlink(ws.root().join("src"), ws.root().join("code")).unwrap();
        assert_eq!(ws.resolve("link.md").unwrap(), ws.root().join("README.md"));
        assert_eq!(
            ws.resolve("code/main.rs").unwrap(),
            ws.root().join("src/main.rs")
        );
        assert_eq!(
            ws.resolve("code/new.rs").unwrap(),
            ws.root().join("src/new.rs")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_path_through_a_link_names_the_route_the_model_gave() {
        let (_dir, ws) = setup();
        std::os::unix::fs::symlink("README.md", ws.root().join("notes.md")).unwrap();
        std::os::unix::fs::symlink("src", ws.root().join("code")).unwrap();
        let resolved = ws.resolve("notes.md").unwrap();
        assert_eq!(
            ws.link_route("notes.md", &resolved).as_deref(),
            Some("notes.md")
        );
        let resolved = ws.resolve("./code/new.rs").unwrap();
        assert_eq!(
            ws.link_route("./code/new.rs", &resolved).as_deref(),
            Some("code/new.rs")
        );
        let resolved = ws.resolve("src/../README.md").unwrap();
        assert_eq!(ws.link_route("src/../README.md", &resolved), None);
        // The resolved path is used relative to the root handle.
        let (root, relative) = ws.place(&resolved);
        assert_eq!(relative, Path::new("README.md"));
        assert_eq!(root.read(relative).unwrap(), b"hi\n");
    }

    #[cfg(unix)]
    #[test]
    fn file_symlink_leaving_the_root_is_refused() {
        let (_dir, ws) = setup();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("secret.txt");
        fs::write(&target, "secret").unwrap();
        std::os::unix::fs::symlink(&target, ws.root().join("innocent.txt")).unwrap();
        let error = ws.resolve("innocent.txt").unwrap_err();
        let PathError::SymlinkOutside { real, .. } = &error else {
            panic!("expected SymlinkOutside, got {error:?}");
        };
        assert_eq!(real, &target.canonicalize().unwrap());
        let message = error.to_string();
        assert!(message.contains("`innocent.txt`"), "{message}");
        assert!(
            message.contains(&ws.root().display().to_string()),
            "{message}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn directory_symlink_leaving_the_root_is_refused_even_for_new_files() {
        let (_dir, ws) = setup();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.root().join("escape")).unwrap();
        for input in ["escape", "escape/new.txt", "escape/deeper/new.txt"] {
            let error = ws.resolve(input).unwrap_err();
            assert!(
                matches!(error, PathError::SymlinkOutside { .. }),
                "{input}: {error:?}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn dangling_symlink_is_refused() {
        let (_dir, ws) = setup();
        std::os::unix::fs::symlink("/nonexistent/target", ws.root().join("dangling")).unwrap();
        let error = ws.resolve("dangling").unwrap_err();
        assert!(
            matches!(error, PathError::BrokenSymlink { .. }),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("target does not exist"),
            "{error}"
        );
    }

    #[test]
    fn display_is_root_relative_with_slashes() {
        let (_dir, ws) = setup();
        assert_eq!(
            ws.display(&ws.root().join("src").join("main.rs")),
            "src/main.rs"
        );
        assert_eq!(ws.display(ws.root()), ".");
        assert_eq!(ws.display(Path::new("/elsewhere/x")), "/elsewhere/x");
    }

    #[test]
    fn path_errors_become_refusals() {
        let (_dir, ws) = setup();
        let error: ToolError = ws.resolve("../x").unwrap_err().into();
        assert!(matches!(error, ToolError::Refused(m) if m.contains("`../x`")));
    }

    #[cfg(unix)]
    mod properties {
        use std::os::unix::fs::symlink;
        use std::path::Path;

        use proptest::prelude::*;

        use super::*;

        /// A workspace `ws/` beside a directory `outside/`, with links that stay in
        /// (`in` → `a/b`), leave (`out` → `../outside`, `up` → `..`, `abs` → `/`),
        /// loop (`loop` → `loop`) or dangle (`dangling` → `nowhere`).
        fn tree() -> (tempfile::TempDir, Workspace) {
            let dir = tempfile::tempdir().unwrap();
            let ws = dir.path().join("ws");
            fs::create_dir_all(ws.join("a/b")).unwrap();
            fs::create_dir_all(dir.path().join("outside")).unwrap();
            fs::write(ws.join("a/f"), "x").unwrap();
            fs::write(dir.path().join("outside/secret"), "s").unwrap();
            for (link, target) in [
                ("in", "a/b"),
                ("a/b/back", "../.."),
                ("out", "../outside"),
                ("up", ".."),
                ("abs", "/"),
                ("loop", "loop"),
                ("dangling", "nowhere"),
            ] {
                symlink(target, ws.join(link)).unwrap();
            }
            let workspace = Workspace::new(&ws).unwrap();
            (dir, workspace)
        }

        fn segment() -> impl Strategy<Value = &'static str> {
            proptest::sample::select(vec![
                "a", "b", "f", "new", "..", ".", "", "in", "back", "out", "up", "abs", "loop",
                "dangling", "secret", "outside", "ws", "é ü", "etc",
            ])
        }

        /// Where the generated path starts: relative, the root, its parent, `/`.
        fn prefix(dir: &Path) -> impl Strategy<Value = String> {
            let parent = dir.display().to_string();
            let root = dir.join("ws").display().to_string();
            proptest::sample::select(vec![String::new(), root, parent, "/".to_string()])
        }

        /// The real location a resolved path would have once it exists: its longest
        /// existing ancestor, canonicalized, plus the rest.
        fn eventual_location(path: &Path) -> PathBuf {
            for ancestor in path.ancestors() {
                if let Ok(real) = ancestor.canonicalize() {
                    return real.join(path.strip_prefix(ancestor).unwrap());
                }
            }
            path.to_path_buf()
        }

        #[test]
        fn no_generated_path_resolves_outside_the_root() {
            let (dir, ws) = tree();
            let paths = (
                prefix(dir.path()),
                proptest::collection::vec(segment(), 1..7),
            )
                .prop_map(|(prefix, segments)| {
                    let joined = segments.join("/");
                    if prefix.is_empty() {
                        joined
                    } else {
                        format!("{prefix}/{joined}")
                    }
                });
            let mut runner =
                proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(2000));
            runner
                .run(&paths, |input| {
                    if let Ok(resolved) = ws.resolve(&input) {
                        prop_assert!(resolved.is_absolute());
                        let real = eventual_location(&resolved);
                        prop_assert!(
                            real.starts_with(ws.root()),
                            "`{input}` resolved to {resolved:?}, really {real:?}"
                        );
                    }
                    Ok(())
                })
                .unwrap();
        }
    }
}

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pretty_assertions::assert_eq;

use super::*;

/// A workspace `ws/` beside a directory `outside/` holding a decoy.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("ws/a/b")).unwrap();
        fs::create_dir_all(dir.path().join("outside")).unwrap();
        fs::write(dir.path().join("ws/a/f.txt"), "inside\n").unwrap();
        fs::write(dir.path().join("outside/decoy"), "decoy\n").unwrap();
        Self { dir }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    /// Every file under `outside/` with its bytes, to compare before and after.
    fn outside_tree(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        tree_of(&self.outside())
    }
}

fn tree_of(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                pending.push(path);
            } else {
                let content = if meta.is_symlink() {
                    fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes()
                } else {
                    fs::read(&path).unwrap()
                };
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), content);
            }
        }
    }
    files
}

/// Runs `test` once with `openat2` (where the kernel has it) and once walking.
fn with_each_resolver(test: impl Fn(&Fixture, &Root)) {
    for walking in [false, true] {
        let fixture = Fixture::new();
        let root = if walking {
            Root::open_walking(&fixture.ws()).unwrap()
        } else {
            Root::open(&fixture.ws()).unwrap()
        };
        test(&fixture, &root);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn openat2_is_used_where_the_kernel_has_it() {
    // Every supported CI kernel is 5.6 or newer; a fallback here would hide a regression.
    let fixture = Fixture::new();
    let root = Root::open(&fixture.ws()).unwrap();
    assert_eq!(root.resolver, Resolver::Openat2, "{root:?}");
}

#[test]
fn regular_files_are_read_and_stated() {
    with_each_resolver(|_, root| {
        assert_eq!(root.read(Path::new("a/f.txt")).unwrap(), b"inside\n");
        assert_eq!(root.read(Path::new("./a/./f.txt")).unwrap(), b"inside\n");
        let meta = root.metadata(Path::new("a/f.txt")).unwrap().unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.len(), 7);
        assert_eq!(meta.nlink(), 1);
        assert!(root.metadata(Path::new("a")).unwrap().unwrap().is_dir());
        assert!(root.metadata(Path::new("")).unwrap().unwrap().is_dir());
        assert_eq!(root.metadata(Path::new("a/none")).unwrap(), None);
        assert_eq!(root.metadata(Path::new("none/deeper")).unwrap(), None);
        // A file where a directory should be: nothing is there.
        assert_eq!(root.metadata(Path::new("a/f.txt/x")).unwrap(), None);
        assert!(
            root.open_file(Path::new("a/none"))
                .unwrap_err()
                .is_not_found()
        );
        assert!(matches!(
            root.open_file(Path::new("a")),
            Err(Error::IsDir { .. })
        ));
    });
}

#[test]
fn a_link_anywhere_in_the_path_is_refused_even_one_that_stays_inside() {
    with_each_resolver(|fixture, root| {
        let ws = fixture.ws();
        symlink("a", ws.join("in")).unwrap();
        symlink(fixture.outside(), ws.join("out")).unwrap();
        symlink(fixture.outside().join("decoy"), ws.join("notes.md")).unwrap();
        symlink("f.txt", ws.join("a/alias.txt")).unwrap();
        for (path, link) in [
            ("in/f.txt", "in"),
            ("out/decoy", "out"),
            ("notes.md", "notes.md"),
            ("a/alias.txt", "a/alias.txt"),
        ] {
            let error = root.read(Path::new(path)).unwrap_err();
            let Error::Link { link: found, .. } = &error else {
                panic!("{path}: expected a link error, got {error:?}");
            };
            assert_eq!(found, Path::new(link), "{path}");
            assert!(error.to_string().contains("symbolic link"), "{error}");
        }
        // A link is reported as a link, not as what it points at.
        let meta = root.metadata(Path::new("notes.md")).unwrap().unwrap();
        assert!(meta.is_symlink());
        assert_eq!(
            root.read_link(Path::new("notes.md")).unwrap(),
            fixture.outside().join("decoy")
        );
        assert!(matches!(
            root.metadata(Path::new("out/decoy")),
            Err(Error::Link { .. })
        ));
        assert!(matches!(
            root.list(Path::new("out")),
            Err(Error::Link { .. })
        ));
    });
}

#[test]
fn reads_may_follow_links_that_stay_inside_but_never_one_that_leaves() {
    let fixture = Fixture::new();
    let ws = fixture.ws();
    symlink("a/f.txt", ws.join("alias.md")).unwrap();
    symlink("../../outside/decoy", ws.join("a/up.md")).unwrap();
    symlink(fixture.outside().join("decoy"), ws.join("absolute.md")).unwrap();
    let root = Root::open(&ws).unwrap();
    let follows = root.resolver != Resolver::Walk;
    let read = |path: &str| {
        root.open_file_following_inside(Path::new(path))
            .map(|(mut file, _)| {
                let mut text = String::new();
                io::Read::read_to_string(&mut file, &mut text).unwrap();
                text
            })
    };
    if follows {
        assert_eq!(read("alias.md").unwrap(), "inside\n");
    } else {
        assert!(matches!(read("alias.md"), Err(Error::Link { .. })));
    }
    for path in ["a/up.md", "absolute.md"] {
        assert!(matches!(read(path), Err(Error::Link { .. })), "{path}");
    }
    assert!(read("none.md").unwrap_err().is_not_found());
    // Walking (no openat2), every link is refused.
    let walking = Root::open_walking(&ws).unwrap();
    assert!(matches!(
        walking.open_file_following_inside(Path::new("alias.md")),
        Err(Error::Link { .. })
    ));
}

#[test]
fn paths_that_climb_out_or_are_absolute_are_refused() {
    with_each_resolver(|fixture, root| {
        let absolute = fixture.outside().join("decoy");
        for path in [
            "../outside/decoy",
            "a/../../outside/decoy",
            absolute.to_str().unwrap(),
            "/etc/passwd",
            "",
            ".",
        ] {
            let error = root.read(Path::new(path)).unwrap_err();
            assert!(
                matches!(error, Error::NotBeneath { .. }),
                "{path}: {error:?}"
            );
            assert!(matches!(
                root.replace(Path::new(path), b"x", None),
                Err(Error::NotBeneath { .. })
            ));
        }
        assert_eq!(
            fs::read(fixture.outside().join("decoy")).unwrap(),
            b"decoy\n"
        );
    });
}

#[test]
fn replace_creates_parents_and_puts_a_new_file_in_place() {
    with_each_resolver(|fixture, root| {
        let replaced = root
            .replace(Path::new("new/dir/x.txt"), b"one", None)
            .unwrap();
        assert_eq!(replaced.previous, None);
        assert_eq!(
            fs::read(fixture.ws().join("new/dir/x.txt")).unwrap(),
            b"one"
        );
        // New files get the mode `fs::write` gives (0666 minus the umask).
        fs::write(fixture.ws().join("reference"), "x").unwrap();
        assert_eq!(
            fs::metadata(fixture.ws().join("new/dir/x.txt"))
                .unwrap()
                .mode(),
            fs::metadata(fixture.ws().join("reference")).unwrap().mode()
        );

        let inode = fs::metadata(fixture.ws().join("a/f.txt")).unwrap().ino();
        let replaced = root
            .replace(Path::new("a/f.txt"), b"two", Some(0o750))
            .unwrap();
        assert!(replaced.previous.unwrap().is_file());
        assert_eq!(replaced.other_hard_links(), None);
        let meta = fs::metadata(fixture.ws().join("a/f.txt")).unwrap();
        assert_ne!(
            meta.ino(),
            inode,
            "a new file, not a write into the old one"
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o750);
        assert_eq!(fs::read(fixture.ws().join("a/f.txt")).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(fixture.ws().join("a"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert!(
            names
                .iter()
                .all(|name| !name.to_string_lossy().starts_with(TEMP_PREFIX)),
            "temporary files left: {names:?}"
        );
        assert!(matches!(
            root.replace(Path::new("a"), b"x", None),
            Err(Error::IsDir { .. })
        ));
    });
}

#[test]
fn replace_puts_a_file_where_a_link_was_and_never_writes_through_it() {
    with_each_resolver(|fixture, root| {
        let ws = fixture.ws();
        symlink(fixture.outside().join("decoy"), ws.join("notes.md")).unwrap();
        let before = fixture.outside_tree();
        let replaced = root
            .replace(Path::new("notes.md"), b"mine\n", None)
            .unwrap();
        assert!(replaced.replaced_a_link());
        assert_eq!(fixture.outside_tree(), before);
        assert!(fs::symlink_metadata(ws.join("notes.md")).unwrap().is_file());
        assert_eq!(fs::read(ws.join("notes.md")).unwrap(), b"mine\n");
    });
}

#[test]
fn replace_and_create_dirs_refuse_a_linked_directory() {
    with_each_resolver(|fixture, root| {
        let ws = fixture.ws();
        symlink(fixture.outside(), ws.join("home")).unwrap();
        symlink("a", ws.join("in")).unwrap();
        let before = fixture.outside_tree();
        for path in ["home/.bashrc", "home/new/dir/x", "in/f.txt"] {
            let error = root.replace(Path::new(path), b"pwned", None).unwrap_err();
            assert!(
                matches!(&error, Error::Link { path: p, .. } if p == Path::new(path)),
                "{path}: {error:?}"
            );
        }
        assert!(matches!(
            root.create_dir_all(Path::new("home/sub")),
            Err(Error::Link { .. })
        ));
        assert!(matches!(
            root.create_fresh(Path::new("home/log")),
            Err(Error::Link { .. })
        ));
        assert_eq!(fixture.outside_tree(), before);
        assert_eq!(fs::read(ws.join("a/f.txt")).unwrap(), b"inside\n");
    });
}

#[test]
fn a_hard_linked_file_is_replaced_and_its_other_name_keeps_the_old_content() {
    with_each_resolver(|fixture, root| {
        fs::hard_link(fixture.outside().join("decoy"), fixture.ws().join("h.txt")).unwrap();
        let replaced = root.replace(Path::new("h.txt"), b"new\n", None).unwrap();
        assert_eq!(replaced.other_hard_links(), Some(1));
        assert_eq!(
            fs::read(fixture.outside().join("decoy")).unwrap(),
            b"decoy\n"
        );
        assert_eq!(fs::read(fixture.ws().join("h.txt")).unwrap(), b"new\n");
    });
}

#[test]
fn remove_takes_away_links_never_their_targets() {
    with_each_resolver(|fixture, root| {
        let ws = fixture.ws();
        symlink(fixture.outside().join("decoy"), ws.join("link")).unwrap();
        symlink(fixture.outside(), ws.join("home")).unwrap();
        let before = fixture.outside_tree();
        assert!(root.remove_file(Path::new("link")).unwrap());
        assert!(fs::symlink_metadata(ws.join("link")).is_err());
        assert!(matches!(
            root.remove_file(Path::new("home/decoy")),
            Err(Error::Link { .. })
        ));
        assert!(!root.remove_file(Path::new("a/none")).unwrap());
        assert!(!root.remove_file(Path::new("none/x")).unwrap());
        assert!(matches!(
            root.remove_file(Path::new("a")),
            Err(Error::IsDir { .. }) | Err(Error::Io { .. })
        ));
        assert!(root.remove_file(Path::new("home")).unwrap());
        assert_eq!(fixture.outside_tree(), before);
        fs::create_dir(ws.join("empty")).unwrap();
        assert!(root.remove_dir(Path::new("empty")).unwrap());
    });
}

#[test]
fn moves_take_entries_and_links_themselves_and_never_replace_or_leave() {
    with_each_resolver(|fixture, root| {
        let ws = fixture.ws();
        symlink(fixture.outside(), ws.join("home")).unwrap();
        let before = fixture.outside_tree();
        // A directory with what is in it, to a place whose parents are made.
        root.move_entry(Path::new("a"), Path::new("kept/1/a"))
            .unwrap();
        assert_eq!(
            fs::read_to_string(ws.join("kept/1/a/f.txt")).unwrap(),
            "inside\n"
        );
        assert!(!ws.join("a").exists());
        // A link moves as a link; where it leads is not touched.
        root.move_entry(Path::new("home"), Path::new("kept/1/home"))
            .unwrap();
        assert!(
            fs::symlink_metadata(ws.join("kept/1/home"))
                .unwrap()
                .is_symlink()
        );
        // Nothing already there is replaced.
        fs::write(ws.join("x"), "x").unwrap();
        fs::write(ws.join("y"), "y").unwrap();
        assert!(root.move_entry(Path::new("x"), Path::new("y")).is_err());
        assert_eq!(fs::read_to_string(ws.join("y")).unwrap(), "y");
        // Neither end goes through a link.
        symlink(fixture.outside(), ws.join("out")).unwrap();
        assert!(matches!(
            root.move_entry(Path::new("x"), Path::new("out/x")),
            Err(Error::Link { .. })
        ));
        assert!(matches!(
            root.move_entry(Path::new("out/decoy"), Path::new("decoy")),
            Err(Error::Link { .. })
        ));
        assert!(
            root.move_entry(Path::new("none"), Path::new("z"))
                .unwrap_err()
                .is_not_found()
        );
        assert_eq!(fixture.outside_tree(), before);
    });
}

#[test]
fn pipes_are_refused_without_blocking() {
    with_each_resolver(|fixture, root| {
        let status = std::process::Command::new("mkfifo")
            .arg(fixture.ws().join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        assert!(matches!(
            root.open_file(Path::new("pipe")),
            Err(Error::NotFile { .. })
        ));
        assert_eq!(
            root.metadata(Path::new("pipe")).unwrap().unwrap().kind(),
            Kind::Other
        );
    });
}

#[test]
fn create_fresh_gives_a_new_empty_file_to_write_and_read_back() {
    with_each_resolver(|fixture, root| {
        symlink(fixture.outside().join("decoy"), fixture.ws().join("log")).unwrap();
        let (mut file, replaced) = root.create_fresh(Path::new("log")).unwrap();
        assert!(replaced.replaced_a_link());
        file.write_all(b"output\n").unwrap();
        io::Seek::rewind(&mut file).unwrap();
        let mut back = String::new();
        io::Read::read_to_string(&mut file, &mut back).unwrap();
        assert_eq!(back, "output\n");
        assert_eq!(
            fs::read(fixture.outside().join("decoy")).unwrap(),
            b"decoy\n"
        );
    });
}

#[test]
fn staged_entries_move_into_place_and_the_rest_is_cleaned_up() {
    with_each_resolver(|fixture, root| {
        let ws = fixture.ws();
        symlink(fixture.outside().join("decoy"), ws.join("a/f.txt.link")).unwrap();
        symlink(fixture.outside(), ws.join("home")).unwrap();
        let before = fixture.outside_tree();
        {
            let staging = root.staging_dir(".duet-test-").unwrap();
            let mut file = staging.create("0").unwrap();
            file.write_all(b"restored\n").unwrap();
            staging.move_to("0", Path::new("a/f.txt.link")).unwrap();
            staging.symlink("1", Path::new("f.txt")).unwrap();
            staging.move_to("1", Path::new("new/dir/alias")).unwrap();
            staging.create("2").unwrap();
            assert!(matches!(
                staging.move_to("2", Path::new("home/.bashrc")),
                Err(Error::Link { .. })
            ));
            staging.create("leftover").unwrap();
        }
        assert_eq!(fs::read(ws.join("a/f.txt.link")).unwrap(), b"restored\n");
        assert_eq!(
            fs::read_link(ws.join("new/dir/alias")).unwrap(),
            Path::new("f.txt")
        );
        assert_eq!(fixture.outside_tree(), before);
        let names: Vec<String> = root
            .list(Path::new(""))
            .unwrap()
            .into_iter()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a", "home", "new"]);
    });
}

#[test]
fn a_directory_swapped_for_a_link_while_writing_never_lets_a_write_out() {
    with_each_resolver(|fixture, root| {
        let ws = fixture.ws();
        fs::create_dir(ws.join("d")).unwrap();
        let before = fixture.outside_tree();
        let stop = Arc::new(AtomicBool::new(false));
        // `d` is always there, a directory one moment and a link to outside the next:
        // it and the link `l` trade places atomically.
        symlink(fixture.outside(), ws.join("l")).unwrap();
        let swapper = {
            let (stop, ws) = (Arc::clone(&stop), ws.clone());
            std::thread::spawn(move || {
                let dir =
                    rustix::fs::open(&ws, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
                let mut swaps = 0_u32;
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(
                        &dir,
                        "d",
                        &dir,
                        "l",
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
        let (mut landed, mut refused) = (0, 0);
        for n in 0..400 {
            match root.replace(Path::new(&format!("d/f{n}")), b"pwned", None) {
                Ok(_) => landed += 1,
                Err(Error::Link { .. }) => refused += 1,
                Err(other) => panic!("unexpected {other:?}"),
            }
            if let Ok(bytes) = root.read(Path::new("d/decoy")) {
                panic!("read the decoy through the link: {bytes:?}");
            }
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 0, "the swapper never ran");
        assert_eq!(
            fixture.outside_tree(),
            before,
            "{landed} landed, {refused} refused"
        );
    });
}

#[test]
fn exact_metadata_refuses_paths_that_now_lead_through_a_link() {
    let fixture = Fixture::new();
    let ws = fixture.ws().canonicalize().unwrap();
    assert!(
        metadata_exact(&ws.join("a/f.txt"))
            .unwrap()
            .unwrap()
            .is_file()
    );
    assert_eq!(metadata_exact(&ws.join("a/none")).unwrap(), None);
    fs::rename(ws.join("a"), ws.join("a.real")).unwrap();
    symlink("a.real", ws.join("a")).unwrap();
    assert_eq!(metadata_exact(&ws.join("a/f.txt")).unwrap(), None);
    assert!(metadata_exact(&ws.join("a")).unwrap().unwrap().is_symlink());
    assert!(metadata_exact(Path::new("relative")).is_err());
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Links that stay in (`in` → `a/b`, `a/b/back` → `../..`), leave (`out` →
    /// `../outside`, `up` → `..`, `abs` → `/`, `decoy` → the decoy), loop or dangle.
    fn tree(fixture: &Fixture) {
        let ws = fixture.ws();
        for (link, target) in [
            ("in", PathBuf::from("a/b")),
            ("a/b/back", PathBuf::from("../..")),
            ("out", PathBuf::from("../outside")),
            ("up", PathBuf::from("..")),
            ("abs", PathBuf::from("/")),
            ("decoy", fixture.outside().join("decoy")),
            ("loop", PathBuf::from("loop")),
            ("dangling", PathBuf::from("nowhere")),
        ] {
            symlink(target, ws.join(link)).unwrap();
        }
    }

    fn segment() -> impl Strategy<Value = &'static str> {
        proptest::sample::select(vec![
            "a", "b", "f.txt", "new", "..", ".", "in", "back", "out", "up", "abs", "decoy", "loop",
            "dangling", "outside", "ws",
        ])
    }

    #[derive(Clone, Copy, Debug)]
    enum Op {
        Read,
        Stat,
        Replace,
        Remove,
        Fresh,
        Mkdir,
    }

    fn op() -> impl Strategy<Value = Op> {
        proptest::sample::select(vec![
            Op::Read,
            Op::Stat,
            Op::Replace,
            Op::Remove,
            Op::Fresh,
            Op::Mkdir,
        ])
    }

    /// Whether `rel` names an entry below `ws` reached without any link on the way.
    fn link_free_parents(ws: &Path, rel: &Path) -> bool {
        let mut walked = ws.to_path_buf();
        let parts: Vec<_> = rel.components().collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            walked.push(part);
            match fs::symlink_metadata(&walked) {
                Ok(meta) if meta.is_dir() => {}
                _ => return false,
            }
        }
        true
    }

    #[test]
    fn no_generated_operation_touches_or_reads_anything_outside() {
        for walking in [false, true] {
            let fixture = Fixture::new();
            tree(&fixture);
            let root = if walking {
                Root::open_walking(&fixture.ws()).unwrap()
            } else {
                Root::open(&fixture.ws()).unwrap()
            };
            let before = fixture.outside_tree();
            let cases = (proptest::collection::vec(segment(), 1..6), op());
            let mut runner =
                proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(1500));
            runner
                .run(&cases, |(segments, op)| {
                    let rel = PathBuf::from(segments.join("/"));
                    let ws = fixture.ws();
                    match op {
                        Op::Read => {
                            if let Ok(bytes) = root.read(&rel) {
                                prop_assert_ne!(bytes, b"decoy\n".to_vec(), "{:?}", rel);
                                prop_assert!(link_free_parents(&ws, &rel), "{:?}", rel);
                            }
                        }
                        Op::Stat => {
                            if let Ok(Some(_)) = root.metadata(&rel) {
                                prop_assert!(link_free_parents(&ws, &rel), "{:?}", rel);
                            }
                        }
                        Op::Replace => {
                            if root.replace(&rel, b"written", None).is_ok() {
                                prop_assert!(link_free_parents(&ws, &rel), "{:?}", rel);
                                let landed = ws.join(checked(&rel, AllowRoot::No).unwrap());
                                prop_assert!(fs::symlink_metadata(&landed).unwrap().is_file());
                            }
                        }
                        Op::Remove => {
                            let _ = root.remove_file(&rel);
                        }
                        Op::Fresh => {
                            let _ = root.create_fresh(&rel);
                        }
                        Op::Mkdir => {
                            let _ = root.create_dir_all(&rel);
                        }
                    }
                    prop_assert_eq!(fixture.outside_tree(), before.clone());
                    // Nothing appeared beside the workspace either.
                    let beside: Vec<_> = fs::read_dir(fixture.dir.path())
                        .unwrap()
                        .map(|entry| entry.unwrap().file_name())
                        .collect();
                    prop_assert_eq!(beside.len(), 2, "{:?}", beside);
                    Ok(())
                })
                .unwrap();
        }
    }
}

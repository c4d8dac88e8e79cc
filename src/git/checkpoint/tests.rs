use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use git2::{Repository, StatusOptions, TreeWalkMode, TreeWalkResult};
use pretty_assertions::assert_eq;

use super::user_index::UserIndex;
use super::*;
use crate::git::tests::commit_all;

/// A workspace on disk and the store that snapshots it.
struct Fixture {
    dir: tempfile::TempDir,
    private: tempfile::TempDir,
}

impl Fixture {
    /// A git repository holding `files`, all committed.
    fn git(files: &[(&str, &str)]) -> Self {
        let fixture = Self::plain(files);
        let repo = Repository::init(fixture.root()).unwrap();
        commit_all(&repo, "initial");
        fixture
    }

    /// A directory that is not a git repository.
    fn plain(files: &[(&str, &str)]) -> Self {
        let fixture = Self {
            dir: tempfile::tempdir().unwrap(),
            private: tempfile::tempdir().unwrap(),
        };
        for (path, content) in files {
            fixture.write(path, content.as_bytes());
        }
        fixture
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn private_repo(&self) -> PathBuf {
        self.private.path().join("checkpoints.git")
    }

    fn store(&self) -> CheckpointStore {
        CheckpointStore::open(self.root(), &self.private_repo()).unwrap()
    }

    fn write(&self, path: &str, content: &[u8]) {
        let full = self.root().join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, content).unwrap();
    }

    fn bytes(&self, path: &str) -> Vec<u8> {
        fs::read(self.root().join(path)).unwrap()
    }

    fn exists(&self, path: &str) -> bool {
        self.root().join(path).symlink_metadata().is_ok()
    }
}

/// Every file in a snapshot: path → content.
fn snapshot_files(store: &CheckpointStore, checkpoint: &Checkpoint) -> BTreeMap<String, Vec<u8>> {
    let inner = store.lock();
    let tree = inner.repo.find_tree(checkpoint.tree).unwrap();
    let mut files = BTreeMap::new();
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            let blob = inner.repo.find_blob(entry.id()).unwrap();
            files.insert(
                format!("{dir}{}", entry.name().unwrap()),
                blob.content().to_vec(),
            );
        }
        TreeWalkResult::Ok
    })
    .unwrap();
    files
}

fn names(files: &BTreeMap<String, Vec<u8>>) -> Vec<&str> {
    files.keys().map(String::as_str).collect()
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_snapshot_holds_tracked_and_untracked_files_but_not_ignored_ones() {
    let fx = Fixture::git(&[
        ("src/a.rs", "fn a() {}\n"),
        (".gitignore", "target/\n*.log\n"),
    ]);
    // Tracked although an ignore rule matches it.
    fx.write("kept.log", b"tracked log\n");
    let repo = Repository::open(fx.root()).unwrap();
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("kept.log")).unwrap();
    index.write().unwrap();
    fx.write("notes.txt", b"untracked\n");
    fx.write("target/debug/big.bin", &[0u8; 4096]);
    fx.write("run.log", b"ignored\n");
    fx.write("private.txt", b"excluded\n");
    fs::write(repo.path().join("info/exclude"), "private.txt\n").unwrap();
    fx.write("vendor/lib/.git/HEAD", b"ref: refs/heads/main\n");
    fx.write("vendor/lib/code.rs", b"nested repository\n");

    let store = fx.store();
    let checkpoint = store.snapshot("test").unwrap();
    let files = snapshot_files(&store, &checkpoint);
    assert_eq!(
        names(&files),
        [".gitignore", "kept.log", "notes.txt", "src/a.rs"]
    );
    assert_eq!(files["notes.txt"], b"untracked\n");
}

#[test]
fn snapshots_leave_the_users_index_head_refs_and_stash_alone() {
    let fx = Fixture::git(&[("a.txt", "one\n"), ("b.txt", "one\n")]);
    let mut repo = Repository::open(fx.root()).unwrap();
    fx.write("a.txt", b"stashed\n");
    let signature = Signature::now("t", "t@example.com").unwrap();
    repo.stash_save(&signature, "wip", None).unwrap();
    fx.write("b.txt", b"staged\n");
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("b.txt")).unwrap();
    index.write().unwrap();
    fx.write("a.txt", b"unstaged\n");
    fx.write("new.txt", b"untracked\n");

    let user_state = |repo: &mut Repository| {
        let mut options = StatusOptions::new();
        options.include_untracked(true);
        let statuses: Vec<(String, git2::Status)> = repo
            .statuses(Some(&mut options))
            .unwrap()
            .iter()
            .map(|entry| (entry.path().unwrap().to_string(), entry.status()))
            .collect();
        let mut stashes = Vec::new();
        repo.stash_foreach(|_, message, id| {
            stashes.push((message.to_string(), *id));
            true
        })
        .unwrap();
        let refs: Vec<(String, Option<git2::Oid>)> = repo
            .references()
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                (r.name().unwrap().to_string(), r.target())
            })
            .collect();
        let head = repo.head().unwrap().target();
        let index_bytes = fs::read(repo.path().join("index")).unwrap();
        (statuses, stashes, refs, head, index_bytes)
    };
    let before = user_state(&mut repo);
    let store = fx.store();
    let first = store.snapshot("first").unwrap();
    fx.write("c.txt", b"more\n");
    let second = store.snapshot("second").unwrap();
    fs::remove_file(fx.root().join("c.txt")).unwrap();
    assert_eq!(user_state(&mut repo), before);
    assert!(!first.same_files_as(&second));
    // The snapshot is of the work tree, not of the index.
    assert_eq!(snapshot_files(&store, &first)["a.txt"], b"unstaged\n");
}

#[test]
fn outside_git_a_private_repository_holds_the_snapshots_and_gitignore_still_applies() {
    let fx = Fixture::plain(&[
        ("main.py", "print('hi')\n"),
        (".gitignore", "node_modules/\n"),
        ("node_modules/pkg/index.js", "huge\n"),
    ]);
    let store = fx.store();
    let checkpoint = store.snapshot("test").unwrap();
    assert_eq!(
        names(&snapshot_files(&store, &checkpoint)),
        [".gitignore", "main.py"]
    );
    assert!(!fx.root().join(".git").exists());
    assert!(Repository::open_bare(fx.private_repo()).is_ok());
}

/// Sets the file's modification time an hour back, so the index can vouch for it.
fn age(fx: &Fixture, path: &str) {
    let file = fs::File::options()
        .write(true)
        .open(fx.root().join(path))
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

#[test]
fn blobs_keep_exact_bytes_even_where_git_would_convert_line_endings() {
    let fx = Fixture::git(&[("a.txt", "x\n")]);
    let repo = Repository::open(fx.root()).unwrap();
    repo.config()
        .unwrap()
        .set_str("core.autocrlf", "true")
        .unwrap();
    fx.write(".gitattributes", b"* text=auto\n");
    fx.write("crlf.txt", b"one\r\ntwo\r\n");
    age(&fx, "crlf.txt");
    // The index now holds the converted (LF) blob, with a stat matching the file.
    commit_all(&repo, "crlf");
    let store = fx.store();
    let checkpoint = store.snapshot("test").unwrap();
    assert_eq!(
        snapshot_files(&store, &checkpoint)["crlf.txt"],
        b"one\r\ntwo\r\n"
    );
}

#[test]
fn the_users_index_vouches_only_for_files_whose_stat_still_matches() {
    let fx = Fixture::plain(&[("old.txt", "settled\n"), ("new.txt", "fresh\n")]);
    age(&fx, "old.txt");
    age(&fx, "new.txt");
    let repo = Repository::init(fx.root()).unwrap();
    commit_all(&repo, "initial");
    fx.write("new.txt", b"changed\n");
    let files = walk::list_files(fx.root(), true).unwrap();
    let user_index = UserIndex::open(&repo, &fx.root().canonicalize().unwrap(), &files).unwrap();
    let vouched = user_index.vouched_blobs(&files);
    let expected = Oid::hash_object(ObjectType::Blob, b"settled\n").unwrap();
    assert_eq!(
        vouched.into_iter().collect::<Vec<_>>(),
        [(PathBuf::from("old.txt"), expected)]
    );

    let vouched_with = |attributes: &[u8]| {
        fx.write(".gitattributes", attributes);
        let files = walk::list_files(fx.root(), true).unwrap();
        let user_index =
            UserIndex::open(&repo, &fx.root().canonicalize().unwrap(), &files).unwrap();
        user_index.vouched_blobs(&files).len()
    };
    assert_eq!(vouched_with(b"*.png binary\n*.rs linguist-generated\n"), 1);
    assert_eq!(
        vouched_with(b"*.txt eol=crlf\n"),
        0,
        "attributes may convert"
    );
}

#[test]
fn a_file_rewritten_right_after_a_snapshot_with_the_same_length_is_seen() {
    let fx = Fixture::plain(&[("a.txt", "aaaa")]);
    let store = fx.store();
    let first = store.snapshot("first").unwrap();
    fx.write("a.txt", b"bbbb");
    let second = store.snapshot("second").unwrap();
    assert_eq!(snapshot_files(&store, &second)["a.txt"], b"bbbb");
    assert!(!first.same_files_as(&second));
    let third = store.snapshot("third").unwrap();
    assert!(second.same_files_as(&third));
}

/// A turn that changes every kind of thing: returns (before, after).
fn busy_turn(fx: &Fixture, store: &CheckpointStore) -> (Checkpoint, Checkpoint) {
    let before = store.snapshot("before").unwrap();
    fx.write("a.txt", b"changed\n");
    fs::remove_file(fx.root().join("gone.txt")).unwrap();
    fx.write("new/deep/file.txt", b"created\n");
    fx.write("data.bin", &[0, 1, 2, 0xff]);
    #[cfg(unix)]
    set_mode(&fx.root().join("run.sh"), 0o644);
    let after = store.snapshot("after").unwrap();
    (before, after)
}

fn busy_fixture() -> Fixture {
    let fx = Fixture::git(&[
        ("a.txt", "one\r\ntwo\r\n"),
        ("gone.txt", "keep me\n"),
        ("run.sh", "#!/bin/sh\necho hi\n"),
    ]);
    fx.write("data.bin", &[0, 0, 0, 7]);
    #[cfg(unix)]
    set_mode(&fx.root().join("run.sh"), 0o755);
    fx
}

#[test]
fn undo_restores_exact_bytes_deleted_files_and_the_executable_bit() {
    let fx = busy_fixture();
    let store = fx.store();
    let turn = busy_turn(&fx, &store);
    let report = store.undo(&[turn]).unwrap();
    assert_eq!(report.not_restored, []);
    let restored: Vec<_> = report
        .restored
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(
        restored,
        ["a.txt", "data.bin", "gone.txt", "new/deep/file.txt"]
            .into_iter()
            .chain(cfg!(unix).then_some("run.sh"))
            .collect::<Vec<_>>()
    );
    assert_eq!(fx.bytes("a.txt"), b"one\r\ntwo\r\n");
    assert_eq!(fx.bytes("gone.txt"), b"keep me\n");
    assert_eq!(fx.bytes("data.bin"), [0, 0, 0, 7]);
    assert!(
        !fx.exists("new"),
        "directories the turn created are removed"
    );
    #[cfg(unix)]
    assert_eq!(mode(&fx.root().join("run.sh")), 0o755);
    let leftovers: Vec<_> = fs::read_dir(fx.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".duet"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn undo_refuses_and_changes_nothing_when_the_user_changed_a_file_since() {
    let fx = busy_fixture();
    let store = fx.store();
    let turn = busy_turn(&fx, &store);
    fx.write("a.txt", b"the user's edit\n");
    let error = store.undo(&[turn]).unwrap_err();
    let CheckpointError::ChangedSince { paths } = error else {
        panic!("expected a refusal, got {error:?}");
    };
    assert_eq!(paths, [PathBuf::from("a.txt")]);
    assert_eq!(fx.bytes("a.txt"), b"the user's edit\n");
    assert!(fx.exists("new/deep/file.txt"), "nothing is half-undone");
    assert!(!fx.exists("gone.txt"));
}

#[test]
fn paths_the_user_changed_outside_the_turn_are_kept() {
    let fx = busy_fixture();
    let store = fx.store();
    let turn = busy_turn(&fx, &store);
    fx.write("users.txt", b"mine\n");
    store.undo(&[turn]).unwrap();
    assert_eq!(fx.bytes("users.txt"), b"mine\n");
}

#[test]
fn undoing_several_turns_at_once_goes_back_to_before_the_oldest() {
    let fx = Fixture::plain(&[("a.txt", "v1\n"), ("b.txt", "b1\n")]);
    let store = fx.store();
    let first_before = store.snapshot("1 before").unwrap();
    fx.write("a.txt", b"v2\n");
    let first_after = store.snapshot("1 after").unwrap();
    let second_before = store.snapshot("2 before").unwrap();
    fx.write("a.txt", b"v3\n");
    fx.write("b.txt", b"b2\n");
    let second_after = store.snapshot("2 after").unwrap();
    let turns = [(second_before, second_after), (first_before, first_after)];
    let report = store.undo(&turns).unwrap();
    assert_eq!(
        report.restored,
        [PathBuf::from("a.txt"), PathBuf::from("b.txt")]
    );
    assert_eq!(fx.bytes("a.txt"), b"v1\n");
    assert_eq!(fx.bytes("b.txt"), b"b1\n");
}

#[test]
fn undoing_several_turns_refuses_when_the_user_edited_between_them() {
    let fx = Fixture::plain(&[("a.txt", "v1\n")]);
    let store = fx.store();
    let first_before = store.snapshot("1 before").unwrap();
    fx.write("a.txt", b"v2\n");
    let first_after = store.snapshot("1 after").unwrap();
    fx.write("a.txt", b"user\n");
    let second_before = store.snapshot("2 before").unwrap();
    fx.write("a.txt", b"v3\n");
    let second_after = store.snapshot("2 after").unwrap();
    let turns = [(second_before, second_after), (first_before, first_after)];
    assert!(matches!(
        store.undo(&turns),
        Err(CheckpointError::ChangedSince { .. })
    ));
    assert_eq!(fx.bytes("a.txt"), b"v3\n");
    // The newest turn alone can still be undone, back to the user's version.
    store.undo(&turns[..1]).unwrap();
    assert_eq!(fx.bytes("a.txt"), b"user\n");
}

#[cfg(unix)]
#[test]
fn symlinks_are_recorded_as_links_and_restored() {
    let fx = Fixture::plain(&[("target.txt", "t\n")]);
    std::os::unix::fs::symlink("target.txt", fx.root().join("link")).unwrap();
    let store = fx.store();
    let before = store.snapshot("before").unwrap();
    fs::remove_file(fx.root().join("link")).unwrap();
    fx.write("link", b"now a file\n");
    let after = store.snapshot("after").unwrap();
    store.undo(&[(before, after)]).unwrap();
    assert_eq!(
        fs::read_link(fx.root().join("link")).unwrap(),
        Path::new("target.txt")
    );
}

#[test]
fn a_recorded_snapshot_is_found_again_by_a_new_store_and_undoes_the_same() {
    let fx = Fixture::git(&[("a.txt", "one\n")]);
    let (before, after) = {
        let store = fx.store();
        let before = store.snapshot("before").unwrap();
        fx.write("a.txt", b"two\n");
        (
            before.commit_id(),
            store.snapshot("after").unwrap().commit_id(),
        )
    };
    // A resumed session opens a new store and knows only the ids.
    let store = fx.store();
    let pair = (store.find(&before).unwrap(), store.find(&after).unwrap());
    assert_eq!(pair.1.commit_id(), after);
    store.undo(&[pair]).unwrap();
    assert_eq!(fx.bytes("a.txt"), b"one\n");
    assert!(store.find("not-an-id").is_err());
    assert!(store.find(&"0".repeat(40)).is_err());
}

/// A directory beside the workspace for decoys: what a link planted in the workspace
/// points at. Undo and snapshots must never read, write or delete it.
struct Decoys {
    dir: tempfile::TempDir,
}

impl Decoys {
    fn new(files: &[(&str, &[u8])]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            fs::write(dir.path().join(name), content).unwrap();
        }
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn files(&self) -> BTreeMap<String, Vec<u8>> {
        fs::read_dir(self.path())
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                (
                    entry.file_name().to_string_lossy().into_owned(),
                    fs::read(entry.path()).unwrap(),
                )
            })
            .collect()
    }
}

#[cfg(unix)]
#[test]
fn undo_puts_a_file_back_where_the_turn_left_a_link_without_writing_through_it() {
    let fx = Fixture::git(&[("src/a.rs", "old\n"), ("lib/b.rs", "b\n")]);
    let decoys = Decoys::new(&[("bashrc", b"the user's shell setup\n"), ("b.rs", b"b\n")]);
    let store = fx.store();
    let before = store.snapshot("before").unwrap();
    // The turn replaces a file by a link to the decoy, and a directory by a link
    // to the decoys' directory.
    fs::remove_file(fx.root().join("src/a.rs")).unwrap();
    std::os::unix::fs::symlink(decoys.path().join("bashrc"), fx.root().join("src/a.rs")).unwrap();
    fs::remove_dir_all(fx.root().join("lib")).unwrap();
    std::os::unix::fs::symlink(decoys.path(), fx.root().join("lib")).unwrap();
    let after = store.snapshot("after").unwrap();
    let expected = decoys.files();

    let report = store.undo(&[(before, after)]).unwrap();
    assert_eq!(report.not_restored, []);
    assert_eq!(decoys.files(), expected);
    assert!(
        fs::symlink_metadata(fx.root().join("src/a.rs"))
            .unwrap()
            .is_file()
    );
    assert_eq!(fx.bytes("src/a.rs"), b"old\n");
    assert!(
        fs::symlink_metadata(fx.root().join("lib"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(fx.bytes("lib/b.rs"), b"b\n");
}

#[cfg(unix)]
#[test]
fn undo_refuses_when_a_directory_became_a_link_after_the_turn_and_touches_nothing() {
    let fx = Fixture::git(&[("src/a.rs", "old\n")]);
    let store = fx.store();
    let before = store.snapshot("before").unwrap();
    fx.write("src/a.rs", b"new\n");
    fx.write("src/created.rs", b"made by the turn\n");
    let after = store.snapshot("after").unwrap();
    // After the turn, `src` is swapped for a link to a directory holding what the
    // turn left: undo would otherwise see its files unchanged, overwrite `a.rs` and
    // delete `created.rs` there.
    let decoys = Decoys::new(&[("a.rs", b"new\n"), ("created.rs", b"made by the turn\n")]);
    fs::rename(fx.root().join("src"), fx.root().join("src.moved")).unwrap();
    std::os::unix::fs::symlink(decoys.path(), fx.root().join("src")).unwrap();
    let expected = decoys.files();

    let error = store.undo(&[(before, after)]).unwrap_err();
    let CheckpointError::ThroughLink { paths } = &error else {
        panic!("expected a refusal, got {error:?}");
    };
    assert_eq!(
        paths,
        &[
            (PathBuf::from("src/a.rs"), PathBuf::from("src")),
            (PathBuf::from("src/created.rs"), PathBuf::from("src")),
        ]
    );
    assert_eq!(decoys.files(), expected);
    assert!(
        fs::symlink_metadata(fx.root().join("src"))
            .unwrap()
            .is_symlink()
    );
}

#[cfg(unix)]
#[test]
fn a_link_that_appears_while_undo_applies_leaves_that_path_and_says_so() {
    let fx = Fixture::git(&[("src/a.rs", "old\n"), ("top.txt", "old\n")]);
    let store = fx.store();
    let before = store.snapshot("before").unwrap();
    fx.write("src/a.rs", b"new\n");
    fx.write("src/created.rs", b"made by the turn\n");
    fx.write("top.txt", b"new\n");
    let after = store.snapshot("after").unwrap();
    let inner = store.lock();
    let plan = undo::plan(&inner.repo, &store.handle, &[(before, after)]).unwrap();
    // Between the plan and its application, `src` becomes a link.
    let decoys = Decoys::new(&[("a.rs", b"new\n"), ("created.rs", b"made by the turn\n")]);
    fs::rename(fx.root().join("src"), fx.root().join("src.moved")).unwrap();
    std::os::unix::fs::symlink(decoys.path(), fx.root().join("src")).unwrap();
    let expected = decoys.files();

    let report = undo::apply(&inner.repo, &store.handle, &plan).unwrap();
    assert_eq!(report.restored, [PathBuf::from("top.txt")]);
    let left: Vec<&Path> = report
        .not_restored
        .iter()
        .map(|(p, _)| p.as_path())
        .collect();
    assert_eq!(left, [Path::new("src/a.rs"), Path::new("src/created.rs")]);
    assert!(
        report.not_restored[0].1.contains("symbolic link `src`"),
        "{:?}",
        report.not_restored
    );
    assert_eq!(decoys.files(), expected);
    assert_eq!(fx.bytes("top.txt"), b"old\n");
}

#[test]
fn undo_never_restores_git_metadata_from_a_snapshot() {
    // A bare repository planted in the tree: its config and hooks would run
    // programs for whoever runs git there.
    let fx = Fixture::plain(&[
        ("a.txt", "old\n"),
        ("vendor/x/HEAD", "ref: refs/heads/main\n"),
        (
            "vendor/x/refs/heads/main",
            "0000000000000000000000000000000000000000\n",
        ),
        ("vendor/x/config", "[core]\n\tfsmonitor = touch pwn\n"),
        ("vendor/x/hooks/post-checkout", "#!/bin/sh\ntouch pwn\n"),
    ]);
    let store = fx.store();
    let before = store.snapshot("before").unwrap();
    fx.write("a.txt", b"new\n");
    fs::remove_file(fx.root().join("vendor/x/config")).unwrap();
    fs::remove_dir_all(fx.root().join("vendor/x/hooks")).unwrap();
    let after = store.snapshot("after").unwrap();

    let report = store.undo(&[(before, after)]).unwrap();
    assert_eq!(report.restored, [PathBuf::from("a.txt")]);
    let left: Vec<&Path> = report
        .not_restored
        .iter()
        .map(|(p, _)| p.as_path())
        .collect();
    assert_eq!(
        left,
        [
            Path::new("vendor/x/config"),
            Path::new("vendor/x/hooks/post-checkout")
        ]
    );
    assert!(report.not_restored[0].1.contains("git metadata"));
    assert!(!fx.exists("vendor/x/config"));
    assert!(!fx.exists("vendor/x/hooks"));
    assert_eq!(fx.bytes("a.txt"), b"old\n");
}

#[cfg(unix)]
#[test]
fn a_snapshot_never_reads_through_a_link_where_a_tracked_directory_was() {
    // `secret/` is tracked but ignored, so the snapshot takes it from the index, by
    // path: after `secret` became a link, that path leads outside.
    let fx = Fixture::git(&[(".gitignore", "secret/\n"), ("a.txt", "a\n")]);
    fx.write("secret/key", b"workspace copy\n");
    let repo = Repository::open(fx.root()).unwrap();
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("secret/key")).unwrap();
    index.write().unwrap();
    let decoys = Decoys::new(&[("key", b"the user's real key\n")]);
    fs::remove_dir_all(fx.root().join("secret")).unwrap();
    std::os::unix::fs::symlink(decoys.path(), fx.root().join("secret")).unwrap();

    let store = fx.store();
    let checkpoint = store.snapshot("test").unwrap();
    let files = snapshot_files(&store, &checkpoint);
    assert!(
        files
            .values()
            .all(|bytes| bytes != b"the user's real key\n"),
        "{files:?}"
    );
}

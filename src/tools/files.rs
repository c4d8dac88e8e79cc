//! File access shared by the tools: the binary-file rule, loading a text file whole,
//! the approved atomic write used by `write` and `edit`, and running blocking file work
//! off the async runtime.
//!
//! Owns: what counts as binary, how a change reaches disk (approval, then temp file +
//! rename), and the wording of the refusals these produce.
//! Does not own: path resolution (callers pass resolved paths) or tool arguments.
//! Invariant: [`apply_change`] touches the disk only after the approver said yes, and
//! a file is either fully replaced or left as it was.

use std::fs::{self, Permissions};
use std::io::{self, Read as _, Write as _};
use std::path::Path;

use crate::diff::{self, HunkId};
use crate::policy::{Action, Decision};

use super::{ReadLedger, ToolCtx, ToolError, ToolOutput};

/// How many leading bytes are checked for a NUL byte, the mark of a binary file.
pub(crate) const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Whether the first bytes of a file mark it as binary.
pub(crate) fn has_binary_marker(prefix: &[u8]) -> bool {
    prefix
        .iter()
        .take(BINARY_SNIFF_BYTES)
        .any(|&byte| byte == 0)
}

/// The refusal for a file that is not text; `why` says what gave it away.
pub(crate) fn binary_refusal(display: &str, why: &str) -> ToolError {
    ToolError::Refused(format!(
        "`{display}` is a binary file ({why}) and is not readable as text. Only UTF-8 text \
         files can be read or edited; leave this file alone or inspect it with other means."
    ))
}

/// The refusal for a directory where a file was expected.
fn directory_refusal(display: &str) -> ToolError {
    let listing = if display == "." {
        "*".to_string()
    } else {
        format!("{display}/*")
    };
    ToolError::Refused(format!(
        "`{display}` is a directory, not a file. Use glob (e.g. pattern `{listing}`) to list \
         what it contains, then call again with a file path."
    ))
}

/// The error for a file that does not exist; `hint` says what to do instead.
pub(crate) fn not_found(display: &str, hint: &str) -> ToolError {
    ToolError::InvalidArguments(format!("`{display}` does not exist. {hint}"))
}

/// An I/O failure while working on `display`.
pub(crate) fn io_failure(doing: &str, display: &str, error: &io::Error) -> ToolError {
    ToolError::Failed(format!("could not {doing} `{display}`: {error}"))
}

/// The error for a call the user interrupted.
pub(crate) fn interrupted(tool: &str) -> ToolError {
    ToolError::Failed(format!(
        "`{tool}` was interrupted by the user before it finished; nothing more was done."
    ))
}

/// Metadata of `abs`, or `None` if nothing exists there.
pub(crate) fn metadata_if_exists(
    abs: &Path,
    display: &str,
) -> Result<Option<fs::Metadata>, ToolError> {
    match fs::metadata(abs) {
        Ok(meta) => Ok(Some(meta)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_failure("inspect", display, &error)),
    }
}

/// Metadata of the regular file at `abs`, or `None` if nothing exists there. A
/// directory, pipe, socket or device is refused: opening a pipe or a device can block
/// forever or never end, and none of them is a text file to read or edit.
pub(crate) fn existing_file(abs: &Path, display: &str) -> Result<Option<fs::Metadata>, ToolError> {
    match metadata_if_exists(abs, display)? {
        Some(meta) if meta.is_dir() => Err(directory_refusal(display)),
        Some(meta) if !meta.is_file() => Err(ToolError::Refused(format!(
            "`{display}` is not a regular file (it is a pipe, socket or device), so it cannot \
             be read or written as text."
        ))),
        found => Ok(found),
    }
}

/// Loads a whole text file, refusing binary content the way `read` does.
pub(crate) fn load_text(abs: &Path, display: &str) -> Result<String, ToolError> {
    let mut bytes = Vec::new();
    fs::File::open(abs)
        .and_then(|mut file| file.read_to_end(&mut bytes))
        .map_err(|error| io_failure("read", display, &error))?;
    if has_binary_marker(&bytes) {
        return Err(binary_refusal(display, "it contains a NUL byte"));
    }
    String::from_utf8(bytes).map_err(|_| binary_refusal(display, "it is not valid UTF-8"))
}

/// Refuses to change a file that changed on disk since the model last read or wrote
/// it: the change was made against content that is no longer there, and would undo
/// whatever changed without the model having seen it.
pub(crate) fn refuse_if_stale(
    ledger: &ReadLedger,
    abs: &Path,
    display: &str,
) -> Result<(), ToolError> {
    if !ledger.changed_since_seen(abs) {
        return Ok(());
    }
    Err(ToolError::Refused(format!(
        "`{display}` changed on disk since you read it (the user or a command changed it), \
         so nothing was written: your change is based on content that is no longer there. \
         Read `{display}` again, then redo the change on its current content."
    )))
}

/// A file change waiting for approval.
pub(crate) struct Change {
    /// The tool making the change, for messages.
    pub tool: &'static str,
    pub abs: std::path::PathBuf,
    pub display: String,
    /// Current content, `None` when the file is created.
    pub before: Option<String>,
    pub after: String,
    /// The existing file's permissions, kept on the replacement.
    pub permissions: Option<Permissions>,
}

/// What reached the disk, for the tool's result.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Landed {
    /// Set when what landed differs from the proposal (the user accepted only some hunks,
    /// or rewrote it): tells the model exactly what landed instead.
    pub deviation: Option<String>,
    /// The post-write checks' report; empty when they have nothing to say.
    pub lint: String,
}

impl Landed {
    /// The tool's result: `full` describes the whole change, used when all of it landed.
    pub(crate) fn into_output(self, full: ToolOutput) -> ToolOutput {
        let (mut content, summary) = match self.deviation {
            Some(report) => (report, format!("{} (changed by the user)", full.summary)),
            None => (full.content, full.summary),
        };
        if !self.lint.is_empty() {
            content.push_str("\n\n");
            content.push_str(&self.lint);
        }
        ToolOutput { content, summary }
    }
}

/// Asks the approver, then writes atomically, records the file as known and runs the
/// post-write checks. A rejection leaves the disk untouched and comes back as a refusal
/// quoting the reason; so does a file that changed on disk while the decision was
/// pending, since the approved diff no longer describes what would be replaced.
pub(crate) async fn apply_change(ctx: &ToolCtx, change: Change) -> Result<Landed, ToolError> {
    let action = Action::WriteFile {
        path: change.abs.clone(),
        display: change.display.clone(),
        before: change.before.clone(),
        after: change.after.clone(),
    };
    // Approval may wait on a person; an interrupt meanwhile means "stop", not "apply".
    let Some(decision) = ctx.approve(action).await else {
        return Err(interrupted(change.tool));
    };
    let (text, deviation) = match decision {
        Decision::Approve => (change.after.clone(), None),
        Decision::Reject { reason } => {
            return Err(ToolError::Refused(format!(
                "the change to `{}` was not made: {}",
                change.display,
                reason.as_deref().unwrap_or("the user rejected it")
            )));
        }
        Decision::ApproveHunks { hunks, reason } => {
            partial_change(&change, &hunks, reason.as_deref())?
        }
        Decision::Edited { content } => {
            let report = user_edit_report(&change, &content);
            (content, Some(report))
        }
    };
    let ledger = ctx.ledger.clone();
    let written = text.clone();
    let (abs, display, before) = (
        change.abs.clone(),
        change.display.clone(),
        change.before.clone(),
    );
    blocking(move || {
        refuse_if_changed(&abs, &display, before.as_deref())?;
        write_atomically(&abs, written.as_bytes(), change.permissions)
            .map_err(|error| io_failure("write", &display, &error))?;
        ledger.record_write(&abs);
        Ok(())
    })
    .await?;
    let lint = ctx
        .linter
        .check_write(
            &change.abs,
            &change.display,
            change.before.as_deref(),
            &text,
        )
        .await;
    Ok(Landed { deviation, lint })
}

/// The text to write when the user accepted only `accepted` hunks, and the report that
/// tells the model exactly what landed (`None` when every hunk was accepted). Accepting
/// none is a rejection: nothing is written.
fn partial_change(
    change: &Change,
    accepted: &[HunkId],
    reason: Option<&str>,
) -> Result<(String, Option<String>), ToolError> {
    let applied =
        diff::apply(change.before.as_deref(), &change.after, accepted).map_err(|error| {
            ToolError::Failed(format!(
                "the change to `{}` was not made: the approval named hunks that could not be \
                 applied ({error})",
                change.display
            ))
        })?;
    let report = applied.describe_partial(&change.display, reason);
    let none_applied = applied.applied_ids().is_empty();
    let all_applied = applied.rejected_ids().is_empty();
    match applied.text {
        Some(text) if !none_applied => Ok((text, (!all_applied).then_some(report))),
        _ => Err(ToolError::Refused(report)),
    }
}

/// Tells the model the user rewrote its proposal, and shows what really landed.
fn user_edit_report(change: &Change, content: &str) -> String {
    if content == change.after {
        return format!(
            "The user opened your proposal for `{}` in an editor and applied it unchanged.",
            change.display
        );
    }
    format!(
        "The user edited your proposal for `{}` before applying it, so the file is not \
         what you proposed. This is the final change against the file as it was before:\n{}",
        change.display,
        diff::unified(&change.display, change.before.as_deref(), content)
    )
}

/// Refuses when the file on disk is no longer what the proposal was computed from
/// (the user edited it while the decision was pending).
fn refuse_if_changed(abs: &Path, display: &str, before: Option<&str>) -> Result<(), ToolError> {
    let now = match fs::read(abs) {
        Ok(bytes) => Some(bytes),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(io_failure("re-check", display, &error)),
    };
    let unchanged = match (before, &now) {
        (None, None) => true,
        // `before` may be a lossy view of a non-UTF-8 file; compare the same way.
        (Some(before), Some(bytes)) => String::from_utf8_lossy(bytes) == before,
        _ => false,
    };
    if unchanged {
        return Ok(());
    }
    Err(ToolError::Refused(format!(
        "`{display}` changed on disk while the change waited for approval (someone else \
         edited it), so nothing was written: the approved diff no longer matches the file. \
         Read `{display}` again and redo the change on its current content."
    )))
}

/// Writes `content` to a temp file beside `path` and renames it over `path`, so
/// readers see the old or the new file, never half of one. Creates missing parents.
fn write_atomically(
    path: &Path,
    content: &[u8],
    permissions: Option<Permissions>,
) -> io::Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| io::Error::other("the path has no parent directory"))?;
    fs::create_dir_all(parent)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".duet-write-");
    // New files get the usual 0666-minus-umask mode instead of tempfile's private 0600.
    #[cfg(unix)]
    if permissions.is_none() {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(Permissions::from_mode(0o666));
    }
    let mut temp = builder.tempfile_in(parent)?;
    temp.write_all(content)?;
    temp.as_file().sync_all()?;
    if let Some(permissions) = permissions {
        temp.as_file().set_permissions(permissions)?;
    }
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// Walks `base` the way every search tool does: .gitignore and .ignore respected even
/// outside a git repository, hidden files included but never `.git/`, symlinks not
/// followed (they could lead out of the workspace), entries in name order so results
/// are stable. A file as `base` yields just that file.
pub(crate) fn walk(base: &Path) -> ignore::Walk {
    walker(base).sort_by_file_name(|a, b| a.cmp(b)).build()
}

/// The same walk spread over one thread per core. Entries come in no particular
/// order: the caller sorts what it keeps (by path, which gives [`walk`]'s order).
pub(crate) fn walk_parallel(base: &Path) -> ignore::WalkParallel {
    walker(base).build_parallel()
}

/// The walk settings [`walk`] and [`walk_parallel`] share.
fn walker(base: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(base);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

/// Runs file work on the blocking pool so a slow disk or a huge walk does not stall
/// the async runtime.
pub(crate) async fn blocking<T, F>(job: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|error| ToolError::Failed(format!("the tool stopped unexpectedly: {error}")))?
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::policy::{ApprovalRequest, Approver};
    use crate::tools::test_support::Fixture;

    /// Approves, but only after "the user" rewrote the file in their editor.
    struct EditsWhileDeciding {
        path: std::path::PathBuf,
        content: Option<&'static str>,
    }

    #[async_trait::async_trait]
    impl Approver for EditsWhileDeciding {
        async fn decide(&self, _request: ApprovalRequest) -> Decision {
            match self.content {
                Some(content) => fs::write(&self.path, content).unwrap(),
                None => fs::remove_file(&self.path).unwrap(),
            }
            Decision::Approve
        }
    }

    fn change(fixture: &Fixture, before: Option<&str>) -> Change {
        Change {
            tool: "edit",
            abs: fixture.path("a.txt"),
            display: "a.txt".into(),
            before: before.map(str::to_string),
            after: "model's version\n".into(),
            permissions: None,
        }
    }

    #[tokio::test]
    async fn a_file_edited_during_approval_is_not_overwritten() {
        let mut fixture = Fixture::new();
        fixture.file("a.txt", "original\n");
        fixture.ctx.approver = Arc::new(EditsWhileDeciding {
            path: fixture.path("a.txt"),
            content: Some("the user's version\n"),
        });
        let error = apply_change(&fixture.ctx, change(&fixture, Some("original\n")))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("changed on disk while the change waited"),
            "{error}"
        );
        assert_eq!(fixture.text("a.txt"), "the user's version\n");
    }

    #[tokio::test]
    async fn a_file_created_during_approval_of_a_new_file_is_kept() {
        let mut fixture = Fixture::new();
        fixture.ctx.approver = Arc::new(EditsWhileDeciding {
            path: fixture.path("a.txt"),
            content: Some("someone else's\n"),
        });
        let result = apply_change(&fixture.ctx, change(&fixture, None)).await;
        assert!(matches!(result, Err(ToolError::Refused(_))), "{result:?}");
        assert_eq!(fixture.text("a.txt"), "someone else's\n");
    }

    #[tokio::test]
    async fn a_file_deleted_during_approval_is_not_recreated() {
        let mut fixture = Fixture::new();
        fixture.file("a.txt", "original\n");
        fixture.ctx.approver = Arc::new(EditsWhileDeciding {
            path: fixture.path("a.txt"),
            content: None,
        });
        let result = apply_change(&fixture.ctx, change(&fixture, Some("original\n"))).await;
        assert!(matches!(result, Err(ToolError::Refused(_))), "{result:?}");
        assert!(!fixture.path("a.txt").exists());
    }

    struct EditsTheProposal;

    #[async_trait::async_trait]
    impl Approver for EditsTheProposal {
        async fn decide(&self, _request: ApprovalRequest) -> Decision {
            Decision::Edited {
                content: "the user's rewrite\n".into(),
            }
        }
    }

    #[tokio::test]
    async fn the_users_rewrite_lands_and_the_model_sees_the_final_diff() {
        let mut fixture = Fixture::new();
        fixture.file("a.txt", "original\n");
        fixture.ctx.approver = Arc::new(EditsTheProposal);
        let landed = apply_change(&fixture.ctx, change(&fixture, Some("original\n")))
            .await
            .unwrap();
        assert_eq!(fixture.text("a.txt"), "the user's rewrite\n");
        let report = landed.deviation.unwrap_or_default();
        assert!(report.contains("The user edited your proposal"), "{report}");
        assert!(
            report.contains("-original\n+the user's rewrite\n"),
            "{report}"
        );
    }

    #[tokio::test]
    async fn an_unchanged_file_is_written() {
        let fixture = Fixture::new();
        fixture.file("a.txt", "original\n");
        let landed = apply_change(&fixture.ctx, change(&fixture, Some("original\n")))
            .await
            .unwrap();
        assert_eq!(landed.deviation, None);
        assert_eq!(fixture.text("a.txt"), "model's version\n");
    }

    #[test]
    fn nul_in_the_first_8_kib_marks_binary() {
        assert!(has_binary_marker(b"abc\0def"));
        assert!(!has_binary_marker(b"plain text\n"));
        let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
        late.push(0);
        assert!(!has_binary_marker(&late));
    }

    #[test]
    fn atomic_write_creates_parents_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.txt");
        write_atomically(&path, b"one", None).unwrap();
        write_atomically(&path, b"two", None).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "temp files left behind: {leftovers:?}");
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_keeps_permissions_and_gives_new_files_normal_ones() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        fs::write(&script, "old").unwrap();
        fs::set_permissions(&script, Permissions::from_mode(0o750)).unwrap();
        let kept = fs::metadata(&script).unwrap().permissions();
        write_atomically(&script, b"new", Some(kept)).unwrap();
        assert_eq!(
            fs::metadata(&script).unwrap().permissions().mode() & 0o777,
            0o750
        );

        // A new file gets the same mode as one made by `fs::write` (0666 minus umask),
        // not tempfile's private 0600.
        let fresh = dir.path().join("fresh.txt");
        write_atomically(&fresh, b"x", None).unwrap();
        let reference = dir.path().join("reference.txt");
        fs::write(&reference, "x").unwrap();
        assert_eq!(
            fs::metadata(&fresh).unwrap().permissions().mode(),
            fs::metadata(&reference).unwrap().permissions().mode()
        );
    }

    #[cfg(unix)]
    #[test]
    fn pipes_are_refused_without_being_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let error = existing_file(&fifo, "pipe").unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
        assert!(matches!(
            existing_file(dir.path(), "."),
            Err(ToolError::Refused(_))
        ));
        assert!(
            existing_file(&dir.path().join("none"), "none")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn load_text_refuses_binary_and_invalid_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let nul = dir.path().join("nul.bin");
        fs::write(&nul, b"ab\0cd").unwrap();
        let latin1 = dir.path().join("latin1.txt");
        fs::write(&latin1, b"caf\xe9\n").unwrap();
        for (path, why) in [(nul, "NUL byte"), (latin1, "not valid UTF-8")] {
            let error = load_text(&path, "f").unwrap_err();
            assert!(
                matches!(&error, ToolError::Refused(m) if m.contains(why) && m.contains("binary")),
                "{error:?}"
            );
        }
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]

            /// Whatever bytes a file holds, the text tools get exactly them as text or a
            /// refusal that says why, never a lossy conversion or a panic.
            #[test]
            fn any_bytes_load_exactly_or_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("f");
                fs::write(&path, &bytes).unwrap();
                match load_text(&path, "f") {
                    Ok(text) => prop_assert_eq!(text.as_bytes(), bytes.as_slice()),
                    Err(ToolError::Refused(message)) => {
                        prop_assert!(!bytes.contains(&0) || message.contains("NUL byte"));
                        prop_assert!(message.contains("binary"), "{message}");
                    }
                    Err(other) => prop_assert!(false, "unexpected {other:?}"),
                }
            }
        }
    }
}

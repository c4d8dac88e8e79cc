//! File access shared by the tools: the binary-file rule, loading a text file whole,
//! the approved atomic write used by `write` and `edit`, and running blocking file work
//! off the async runtime.
//!
//! Owns: what counts as binary, how a change reaches disk (approval, then a new file
//! renamed into place through the workspace's root handle), and the wording of the
//! refusals these produce.
//! Does not own: path resolution (callers pass resolved paths) or tool arguments; the
//! file operations themselves ([`crate::beneath`]).
//! Invariant: [`apply_change`] touches the disk only after the approver said yes; a
//! file is either fully replaced or left as it was; and every file is used relative to
//! the root handle with no symbolic link followed, so what was checked is what is used.

use std::io::{self, Read as _};
use std::path::Path;

use crate::beneath::{self, Meta};
use crate::diff::{self, HunkId};
use crate::policy::{Action, Decision};

use super::{ReadLedger, ToolCtx, ToolError, ToolOutput, Workspace};

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

/// Why a file operation on `display` did not happen, for the model. `doing` names the
/// operation ("read", "write") for I/O failures.
pub(crate) fn beneath_failure(doing: &str, display: &str, error: beneath::Error) -> ToolError {
    match error {
        beneath::Error::NotFound { .. } => not_found(display, "Check the path."),
        beneath::Error::Link { link, .. } => ToolError::Refused(format!(
            "`{display}` now leads through the symbolic link `{}`, which was not there when \
             the path was checked (a command changed the files meanwhile), so nothing was \
             done. duet does not follow links that appear after a path is checked. Look at \
             what changed, then call again with the path you mean.",
            link.display()
        )),
        beneath::Error::IsDir { .. } => directory_refusal(display),
        beneath::Error::NotFile { .. } => not_regular_refusal(display),
        beneath::Error::NotBeneath { .. } => {
            ToolError::Refused(format!("`{display}` is not a path inside the workspace."))
        }
        beneath::Error::Io { source, .. } => io_failure(doing, display, &source),
    }
}

fn not_regular_refusal(display: &str) -> ToolError {
    ToolError::Refused(format!(
        "`{display}` is not a regular file (it is a pipe, socket or device), so it cannot \
         be read or written as text."
    ))
}

/// Metadata of the entry at `abs` (a resolved path; a link is not followed), or `None`
/// if nothing exists there.
pub(crate) fn metadata_if_exists(
    workspace: &Workspace,
    abs: &Path,
    display: &str,
) -> Result<Option<Meta>, ToolError> {
    let (root, relative) = workspace.place(abs);
    root.metadata(relative)
        .map_err(|error| beneath_failure("inspect", display, error))
}

/// Metadata of the regular file at `abs`, or `None` if nothing exists there. A
/// directory, pipe, socket or device is refused: opening a pipe or a device can block
/// forever or never end, and none of them is a text file to read or edit. So is a link:
/// `abs` is canonical, so a link there appeared after the path was checked.
pub(crate) fn existing_file(
    workspace: &Workspace,
    abs: &Path,
    display: &str,
) -> Result<Option<Meta>, ToolError> {
    match metadata_if_exists(workspace, abs, display)? {
        Some(meta) => match meta.kind() {
            beneath::Kind::File => Ok(Some(meta)),
            beneath::Kind::Dir => Err(directory_refusal(display)),
            beneath::Kind::Symlink => Err(beneath_failure(
                "inspect",
                display,
                beneath::Error::Link {
                    path: abs.to_path_buf(),
                    link: abs.to_path_buf(),
                },
            )),
            beneath::Kind::Other => Err(not_regular_refusal(display)),
        },
        None => Ok(None),
    }
}

/// The bytes of the regular file at `abs`, read through the root handle.
pub(crate) fn read_bytes(
    workspace: &Workspace,
    abs: &Path,
    display: &str,
) -> Result<Vec<u8>, ToolError> {
    let (root, relative) = workspace.place(abs);
    let (mut file, _) = root
        .open_file(relative)
        .map_err(|error| beneath_failure("read", display, error))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|error| io_failure("read", display, &error))?;
    Ok(bytes)
}

/// Loads a whole text file, refusing binary content the way `read` does.
pub(crate) fn load_text(
    workspace: &Workspace,
    abs: &Path,
    display: &str,
) -> Result<String, ToolError> {
    let bytes = read_bytes(workspace, abs, display)?;
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
    /// The path as the model gave it, when a symbolic link makes it differ from
    /// `display` (the file really changed).
    pub requested: Option<String>,
    /// Current content, `None` when the file is created.
    pub before: Option<String>,
    pub after: String,
    /// The existing file's permission bits, kept on the replacement.
    pub mode: Option<u32>,
}

/// What reached the disk, for the tool's result.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Landed {
    /// Set when what landed differs from the proposal (the user accepted only some hunks,
    /// or rewrote it): tells the model exactly what landed instead.
    pub deviation: Option<String>,
    /// The post-write checks' report; empty when they have nothing to say.
    pub lint: String,
    /// Set when the file had other hard links: says they kept the old content.
    pub hard_links: Option<String>,
}

impl Landed {
    /// The tool's result: `full` describes the whole change, used when all of it landed.
    pub(crate) fn into_output(self, full: ToolOutput) -> ToolOutput {
        let (mut content, summary) = match self.deviation {
            Some(report) => (report, format!("{} (changed by the user)", full.summary)),
            None => (full.content, full.summary),
        };
        if let Some(note) = self.hard_links {
            content.push_str("\n\n");
            content.push_str(&note);
        }
        if !self.lint.is_empty() {
            content.push_str("\n\n");
            content.push_str(&self.lint);
        }
        ToolOutput {
            content,
            summary,
            checks: Some(self.lint).filter(|lint| !lint.is_empty()),
        }
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
        requested: change.requested.clone(),
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
    let workspace = ctx.workspace.clone();
    let written = text.clone();
    let (abs, display, before) = (
        change.abs.clone(),
        change.display.clone(),
        change.before.clone(),
    );
    let hard_links = blocking(move || {
        refuse_if_changed(&workspace, &abs, &display, before.as_deref())?;
        let (root, relative) = workspace.place(&abs);
        let replaced = root
            .replace(relative, written.as_bytes(), change.mode)
            .map_err(|error| beneath_failure("write", &display, error))?;
        ledger.record_write(&abs);
        Ok(replaced
            .other_hard_links()
            .map(|others| hard_link_note(&display, others)))
    })
    .await?;
    if let Ok(relative) = change.abs.strip_prefix(ctx.workspace.root()) {
        ctx.shell.note_own_write(relative);
    }
    let lint = ctx
        .linter
        .check_write(
            &change.abs,
            &change.display,
            change.before.as_deref(),
            &text,
        )
        .await;
    Ok(Landed {
        deviation,
        lint,
        hard_links,
    })
}

/// Tells the model a hard-linked file was replaced by a new file, so its other names
/// still hold the old content.
fn hard_link_note(display: &str, others: u64) -> String {
    let names = if others == 1 {
        "1 other name (hard link)".to_string()
    } else {
        format!("{others} other names (hard links)")
    };
    format!(
        "Note: `{display}` had {names}. The change was written as a new file, not into the \
         shared one, so the other names still have the old content."
    )
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
fn refuse_if_changed(
    workspace: &Workspace,
    abs: &Path,
    display: &str,
    before: Option<&str>,
) -> Result<(), ToolError> {
    let (root, relative) = workspace.place(abs);
    let now = match root.read(relative) {
        Ok(bytes) => Some(bytes),
        Err(error) if error.is_not_found() => None,
        Err(error) => return Err(beneath_failure("re-check", display, error)),
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
    use std::fs;
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
            requested: None,
            before: before.map(str::to_string),
            after: "model's version\n".into(),
            mode: None,
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

    /// Approves, but only after a background job swapped the directory `d` for a
    /// link to `outside`.
    struct SwapsDirectoryWhileDeciding {
        workspace: std::path::PathBuf,
        outside: std::path::PathBuf,
    }

    #[async_trait::async_trait]
    impl Approver for SwapsDirectoryWhileDeciding {
        async fn decide(&self, _request: ApprovalRequest) -> Decision {
            fs::rename(self.workspace.join("d"), self.workspace.join("d.real")).unwrap();
            std::os::unix::fs::symlink(&self.outside, self.workspace.join("d")).unwrap();
            Decision::Approve
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_directory_swapped_for_a_link_during_approval_is_not_written_through() {
        let mut fixture = Fixture::new();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("a.txt"), "original\n").unwrap();
        fixture.file("d/a.txt", "original\n");
        fixture.ctx.approver = Arc::new(SwapsDirectoryWhileDeciding {
            workspace: fixture.root().to_path_buf(),
            outside: outside.path().to_path_buf(),
        });
        for (name, before) in [("a.txt", Some("original\n")), ("new.txt", None)] {
            let mut change = change(&fixture, before);
            change.abs = fixture.path(&format!("d/{name}"));
            change.display = format!("d/{name}");
            let error = apply_change(&fixture.ctx, change).await.unwrap_err();
            let ToolError::Refused(message) = &error else {
                panic!("expected a refusal, got {error:?}");
            };
            assert!(
                message.contains("now leads through the symbolic link `d`"),
                "{message}"
            );
            // Put the directory back for the next round.
            fs::remove_file(fixture.path("d")).unwrap();
            fs::rename(fixture.path("d.real"), fixture.path("d")).unwrap();
        }
        assert_eq!(
            fs::read_to_string(outside.path().join("a.txt")).unwrap(),
            "original\n"
        );
        assert!(!outside.path().join("new.txt").exists());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_hard_linked_file_is_replaced_by_a_new_one_and_the_model_is_told() {
        let fixture = Fixture::new();
        let elsewhere = tempfile::tempdir().unwrap();
        let other = elsewhere.path().join("other-name");
        fs::write(&other, "original\n").unwrap();
        fs::hard_link(&other, fixture.path("a.txt")).unwrap();
        let landed = apply_change(&fixture.ctx, change(&fixture, Some("original\n")))
            .await
            .unwrap();
        assert_eq!(fixture.text("a.txt"), "model's version\n");
        assert_eq!(fs::read_to_string(&other).unwrap(), "original\n");
        let note = landed.hard_links.unwrap_or_default();
        assert!(note.contains("1 other name (hard link)"), "{note}");
        assert!(note.contains("still have the old content"), "{note}");
    }

    #[cfg(unix)]
    #[test]
    fn pipes_are_refused_without_being_opened() {
        let fixture = Fixture::new();
        let workspace = &fixture.ctx.workspace;
        let fifo = fixture.path("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let error = existing_file(workspace, &fifo, "pipe")
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a regular file"), "{error}");
        assert!(matches!(
            existing_file(workspace, fixture.root(), "."),
            Err(ToolError::Refused(_))
        ));
        assert!(
            existing_file(workspace, &fixture.path("none"), "none")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn load_text_refuses_binary_and_invalid_utf8() {
        let fixture = Fixture::new();
        let nul = fixture.file("nul.bin", b"ab\0cd");
        let latin1 = fixture.file("latin1.txt", b"caf\xe9\n");
        for (path, why) in [(nul, "NUL byte"), (latin1, "not valid UTF-8")] {
            let error = load_text(&fixture.ctx.workspace, &path, "f").unwrap_err();
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
                let fixture = Fixture::new();
                let path = fixture.file("f", &bytes);
                match load_text(&fixture.ctx.workspace, &path, "f") {
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

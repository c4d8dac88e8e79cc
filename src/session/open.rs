//! Opening the session a run records to: a new one, or the recorded one `--resume`
//! names, ready to be continued.
//!
//! Owns: which session is continued ([`Resume`]), a new session's ID and [`Header`],
//! the [`Record::Resumed`] a continued one gets, and the messages that say why a
//! session cannot be continued. Does not own: where the sessions live (the caller
//! passes the directory), the `--resume` flag's parsing (the binary's), nor replaying
//! the recorded conversation (the agent does that with the [`SessionPlan`]).
//! Invariant: a session is only continued in the workspace it was recorded in, and
//! opening one writes nothing: the file is created or appended to when the agent
//! records its first line.

use std::path::{Path, PathBuf};

use super::{
    FORMAT_VERSION, Header, Record, Session, SessionError, SessionWriter, find, list, load,
};
use crate::provider::Endpoint;

/// Which session `--resume` continues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resume {
    /// The newest session of the workspace.
    Latest,
    Id(String),
}

impl Resume {
    /// What `--resume [ID]` asks for: nothing when the flag is absent, the workspace's
    /// latest session when it has no ID.
    pub fn from_flag(flag: Option<Option<String>>) -> Option<Self> {
        flag.map(|id| id.map_or(Resume::Latest, Resume::Id))
    }
}

/// The session an agent records to, and the recorded conversation it continues.
pub struct SessionPlan {
    pub id: String,
    pub transcript: SessionWriter,
    pub resume: Option<Session>,
}

/// Starts a new session in `dir`, or finds the one `resume` names there and prepares
/// to continue it. `endpoint` is the model the session talks to from now on;
/// `workspace` is canonical, as sessions record it.
pub fn open(
    dir: &Path,
    workspace: &Path,
    endpoint: &Endpoint,
    resume: Option<Resume>,
) -> Result<SessionPlan, SessionError> {
    let now = unix_now();
    let Some(resume) = resume else {
        let id = session_id(now);
        let header = Header {
            format: FORMAT_VERSION,
            id: id.clone(),
            workspace: workspace.display().to_string(),
            model: endpoint.model.clone(),
            provider: endpoint.wire,
            started_at: now,
            duet_version: env!("CARGO_PKG_VERSION").to_string(),
        };
        return Ok(SessionPlan {
            id,
            transcript: SessionWriter::create(dir, header),
            resume: None,
        });
    };
    let (path, session) = find_session(dir, workspace, &resume)?;
    if Path::new(&session.header.workspace) != workspace {
        return Err(SessionError::OtherWorkspace {
            id: session.header.id,
            workspace: session.header.workspace,
        });
    }
    let resumed = Record::Resumed {
        at: now,
        model: endpoint.model.clone(),
        provider: endpoint.wire,
        duet_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    Ok(SessionPlan {
        id: session.header.id.clone(),
        transcript: SessionWriter::resume(&path, resumed),
        resume: Some(session),
    })
}

/// The file and contents of the session `resume` names.
fn find_session(
    dir: &Path,
    workspace: &Path,
    resume: &Resume,
) -> Result<(PathBuf, Session), SessionError> {
    match resume {
        Resume::Id(id) => {
            let path =
                find(dir, id).ok_or_else(|| SessionError::NoSuchSession { id: id.clone() })?;
            let loaded = load(&path)?;
            Ok((path, loaded))
        }
        Resume::Latest => {
            let listing = list(dir)?.in_workspace(workspace);
            match listing.sessions.into_iter().next() {
                Some(info) => Ok((info.path, info.session)),
                None => Err(SessionError::NothingToResume {
                    workspace: workspace.to_path_buf(),
                }),
            }
        }
    }
}

/// Unique enough to keep concurrent runs' files apart, and sortable by start time.
fn session_id(started_at: u64) -> String {
    format!("{started_at}-{}", std::process::id())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::provider::Wire;

    fn endpoint() -> Endpoint {
        Endpoint {
            wire: Wire::Anthropic,
            base_url: "http://127.0.0.1:9".into(),
            api_key: None,
            model: "model-y".into(),
        }
    }

    /// Records a one-message session `id` of `workspace` in `dir`.
    fn record(dir: &Path, id: &str, workspace: &str) {
        let header = Header {
            format: FORMAT_VERSION,
            id: id.into(),
            workspace: workspace.into(),
            model: "model-x".into(),
            provider: Wire::OpenAiChat,
            started_at: 100,
            duet_version: "0.1.0".into(),
        };
        let mut writer = SessionWriter::create(dir, header);
        writer.append(&Record::User { text: "t".into() }).unwrap();
    }

    #[test]
    fn the_resume_flag_asks_for_nothing_the_latest_or_an_id() {
        assert_eq!(Resume::from_flag(None), None);
        assert_eq!(Resume::from_flag(Some(None)), Some(Resume::Latest));
        assert_eq!(
            Resume::from_flag(Some(Some("100-1".into()))),
            Some(Resume::Id("100-1".into()))
        );
    }

    #[test]
    fn a_new_session_is_named_by_its_start_and_process_and_writes_nothing_yet() {
        let dir = tempfile::tempdir().unwrap();
        let plan = open(dir.path(), Path::new("/work"), &endpoint(), None).unwrap();
        assert!(plan.resume.is_none());
        assert!(
            plan.id.ends_with(&format!("-{}", std::process::id())),
            "{}",
            plan.id
        );
        assert_eq!(
            plan.transcript.path(),
            crate::session::path_for(dir.path(), &plan.id)
        );
        assert!(!plan.transcript.path().exists());
    }

    #[test]
    fn a_session_is_continued_by_id_or_as_the_workspace_latest() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), "100-1", "/work");
        for resume in [Resume::Id("100-1".into()), Resume::Latest] {
            let plan = open(dir.path(), Path::new("/work"), &endpoint(), Some(resume)).unwrap();
            assert_eq!(plan.id, "100-1");
            assert_eq!(
                plan.resume.map(|session| session.header.id).as_deref(),
                Some("100-1")
            );
        }
    }

    #[test]
    fn a_session_that_cannot_be_continued_here_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), "100-1", "/elsewhere");
        let error = |resume| {
            open(dir.path(), Path::new("/work"), &endpoint(), Some(resume))
                .err()
                .map(|error| error.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            error(Resume::Id("100-1".into())),
            "session 100-1 belongs to /elsewhere; continue it there: \
             duet -C /elsewhere --resume 100-1"
        );
        assert_eq!(
            error(Resume::Id("100-2".into())),
            "no session `100-2`; `duet sessions` lists this workspace's sessions \
             (`duet sessions --all` every workspace's)"
        );
        assert_eq!(
            error(Resume::Latest),
            "no session to resume in /work; `duet sessions --all` lists every \
             workspace's sessions"
        );
    }
}

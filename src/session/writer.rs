//! Appending records to a session file.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::SessionError;
use super::record::{Header, Record};

/// Appends one JSON line per record, each written and flushed before `append` returns,
/// so a killed process loses at most the line being written.
///
/// The file is opened on the first record: a session in which nothing happened leaves
/// no file. The first failure (unwritable directory, full disk) is returned once; after
/// it the writer writes nothing more, because a transcript with a gap would rebuild a
/// conversation the model never saw.
#[derive(Debug)]
pub struct SessionWriter {
    path: PathBuf,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Not opened yet; `first_line` is written before the first record.
    Closed {
        first_line: FirstLine,
    },
    Open(File),
    /// A write failed; nothing more is written.
    Stopped,
}

#[derive(Debug)]
enum FirstLine {
    /// A new session: the file is created with this header.
    Header(Header),
    /// A resumed session: the file exists and this record marks the resumption.
    Resumed(Record),
}

impl SessionWriter {
    /// A writer for a new session, recording to `<dir>/<header.id>.jsonl`.
    pub fn create(dir: &Path, header: Header) -> Self {
        Self {
            path: super::path_for(dir, &header.id),
            state: State::Closed {
                first_line: FirstLine::Header(header),
            },
        }
    }

    /// A writer continuing the session file at `path`; `resumed` (normally a
    /// [`Record::Resumed`]) is appended before the first new record.
    pub fn resume(path: &Path, resumed: Record) -> Self {
        Self {
            path: path.to_path_buf(),
            state: State::Closed {
                first_line: FirstLine::Resumed(resumed),
            },
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `record` as one line and flushes it. See the type's doc for failures.
    pub fn append(&mut self, record: &Record) -> Result<(), SessionError> {
        let result = self.try_append(record);
        if result.is_err() {
            self.state = State::Stopped;
        }
        result
    }

    fn try_append(&mut self, record: &Record) -> Result<(), SessionError> {
        if let State::Closed { first_line } = &self.state {
            let (first, opened) = match first_line {
                FirstLine::Header(header) => (encode(header)?, create_file(&self.path)),
                FirstLine::Resumed(resumed) => (encode(resumed)?, reopen_file(&self.path)),
            };
            let mut file = opened.map_err(|source| self.write_error(source))?;
            write_line(&mut file, &first).map_err(|source| self.write_error(source))?;
            self.state = State::Open(file);
        }
        let State::Open(file) = &mut self.state else {
            return Ok(());
        };
        let line = encode(record)?;
        write_line(file, &line).map_err(|source| SessionError::Write {
            path: self.path.clone(),
            source,
        })
    }

    fn write_error(&self, source: std::io::Error) -> SessionError {
        SessionError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

fn encode(value: &impl serde::Serialize) -> Result<String, SessionError> {
    serde_json::to_string(value).map_err(SessionError::Encode)
}

/// One `write` per line, so a reader never sees two records interleaved.
fn write_line(file: &mut File, line: &str) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    file.write_all(&bytes)?;
    file.flush()
}

/// Creates the file (and its directory) for a new session. Transcripts hold file
/// contents and command output, so only the user may read them.
fn create_file(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = OpenOptions::new();
    options.append(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Opens an existing session for appending. A line torn by a killed process (the file
/// does not end in a newline) is cut off first: the reader skipped it already, and a
/// record appended to it would be lost with it.
fn reopen_file(path: &Path) -> std::io::Result<File> {
    let mut file = OpenOptions::new().read(true).append(true).open(path)?;
    let complete = complete_length(&mut file)?;
    if complete < file.metadata()?.len() {
        tracing::warn!(path = %path.display(), "cutting off a torn last line");
        file.set_len(complete)?;
    }
    Ok(file)
}

/// The length of the file up to and including its last newline.
fn complete_length(file: &mut File) -> std::io::Result<u64> {
    const WINDOW: u64 = 64 * 1024;
    let mut end = file.seek(SeekFrom::End(0))?;
    let mut buffer = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(WINDOW);
        file.seek(SeekFrom::Start(start))?;
        buffer.clear();
        Read::by_ref(file)
            .take(end - start)
            .read_to_end(&mut buffer)?;
        if let Some(newline) = buffer.iter().rposition(|&byte| byte == b'\n') {
            return Ok(start + newline as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

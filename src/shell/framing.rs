//! The framing protocol between duet and a shell on a PTY: the setup script that
//! turns an interactive bash or zsh into a framed command runner, the line typed for
//! each command, and the [`Scanner`] that splits the PTY's byte stream into frames.
//!
//! Owns: the marker format, the per-session nonce, the shell-side functions that print
//! markers, and the environment-independent setup of the shell (no prompt, no
//! history; the terminal echoes as a terminal does, so what a person or the model
//! types into a waiting command shows in its output, but control keys echo as
//! nothing, not `^C`; the echo of the line that starts a command falls between
//! commands and is dropped).
//! Does not own: the PTY or the processes (`session`), rendering output (`screen`).
//! Invariant: a marker is only recognised when it carries this session's nonce, which
//! commands never see in their output, and the [`Scanner`] never passes on a byte of a
//! marker or of what the shell prints between commands.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Closes every marker.
const MARKER_END: &[u8] = b">>";
/// The scratch files the setup script reads the command from and writes the shell's
/// directory to.
pub(super) const COMMAND_FILE: &str = "command";
pub(super) const CWD_FILE: &str = "cwd";
/// The longest marker body (`end:<id>:<status>`) accepted before the text counts as
/// ordinary output.
const MAX_BODY: usize = 64;

/// Which shell language the setup script and the command line are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Bash,
    Zsh,
}

impl Flavor {
    /// Arguments that start the shell interactive (job control, `^C` handling, a
    /// foreground process group per command) without reading any rc file or using a
    /// line editor.
    pub(super) fn args(self) -> &'static [&'static str] {
        match self {
            Flavor::Bash => &["--noprofile", "--norc", "--noediting", "-i"],
            Flavor::Zsh => &["-f", "-i"],
        }
    }

    /// The setup script: defines the framing functions and prints the ready marker.
    pub(super) fn init_script(self, nonce: &str, scratch: &Path) -> String {
        let template = match self {
            Flavor::Bash => BASH_INIT,
            Flavor::Zsh => ZSH_INIT,
        };
        let (pause, resume) = match self {
            Flavor::Bash => (BASH_PAUSE_TRACE, BASH_RESUME_TRACE),
            // zsh restores `set -x` when a function returns, so there is nothing to do.
            Flavor::Zsh => ("", ""),
        };
        let common = COMMON_FUNCTIONS
            .replace("@PAUSE_TRACE@", pause)
            .replace("@RESUME_TRACE@", resume)
            .replace("@COMMAND_FILE@", COMMAND_FILE)
            .replace("@CWD_FILE@", CWD_FILE);
        template
            .replace("@COMMON@", &common)
            .replace("@NONCE@", nonce)
            .replace("@DIR@", &quote(&scratch.to_string_lossy()))
    }

    /// The line typed to run the command saved in the scratch `command` file. The
    /// command runs at top level (not inside a function) so `declare`, `local` and
    /// `return` behave as they do at a prompt; the trailing `__duet_end` prints the end
    /// marker, and the prompt hook prints it when `^C` aborted the line.
    pub(super) fn run_line(self, id: u64) -> String {
        let eval = match self {
            Flavor::Bash => "eval --",
            Flavor::Zsh => "eval",
        };
        format!("__duet_begin {id}; {eval} \"$__duet_cmd\"; {{ __duet_end; }} 2>/dev/null\n")
    }

    /// The first line typed into a new shell.
    pub(super) fn source_line(self, script: &Path) -> String {
        format!(" . {}\n", quote(&script.to_string_lossy()))
    }
}

/// Functions shared by both shells. Markers go to `/dev/tty` so a command that
/// redirects the shell's stdout (`exec >log`) cannot swallow them.
///
/// The scratch files are overwritten in place, never truncated, and end in a NUL
/// (`read -d ''` stops there; what follows is left from a longer, earlier one): on
/// ext4, truncating and rewriting a file forces its data out on close, which cost
/// more than the rest of a command's round trip together. The directory is written
/// only when it changed.
const COMMON_FUNCTIONS: &str = r#"
__duet_nonce=@NONCE@
__duet_dir=@DIR@
__duet_id=
__duet_x=
__duet_pwd=
__duet_begin() {
    __duet_id=$1
    IFS= builtin read -r -d '' __duet_cmd <"$__duet_dir/@COMMAND_FILE@" || builtin true
    builtin printf '<<duet-%s:begin:%s>>' "$__duet_nonce" "$__duet_id" >/dev/tty
@RESUME_TRACE@}
__duet_end() {
    builtin local code=$?
    [ -n "$__duet_id" ] || builtin return 0
@PAUSE_TRACE@    if [ "$PWD" != "$__duet_pwd" ]; then
        __duet_pwd=$PWD
        builtin printf '%s\0' "$PWD" 1<>"$__duet_dir/@CWD_FILE@"
    fi
    builtin printf '<<duet-%s:end:%s:%s>>' "$__duet_nonce" "$__duet_id" "$code" >/dev/tty
    __duet_id=
    builtin return 0
}
"#;

/// In bash, `set -x` outlives the command that set it and would trace the framing
/// functions after the begin marker: `__duet_end` switches tracing off (remembering
/// it) and `__duet_begin` switches it back on as its last act before the command.
const BASH_PAUSE_TRACE: &str =
    "    case $- in *x*) __duet_x=x; builtin set +x ;; *) __duet_x= ;; esac\n";
const BASH_RESUME_TRACE: &str = "    case $__duet_x in *x*) builtin set -x ;; esac\n";

const BASH_INIT: &str = r#"builtin set +o history
builtin unset HISTFILE
PS0='' PS1='' PS2='' PS3=''
stty echo -echoctl 2>/dev/null
builtin unset -f command_not_found_handle 2>/dev/null
@COMMON@
PROMPT_COMMAND='{ __duet_end; } 2>/dev/null'
builtin printf '<<duet-%s:ready>>' "$__duet_nonce" >/dev/tty
"#;

const ZSH_INIT: &str = r#"builtin unsetopt zle prompt_sp prompt_cr prompt_subst 2>/dev/null
builtin setopt interactive_comments
builtin unset HISTFILE
SAVEHIST=0
PS1='' PROMPT='' RPROMPT='' RPS1='' PS2='' PS3=''
stty echo -echoctl 2>/dev/null
builtin unset -f command_not_found_handler 2>/dev/null
@COMMON@
__duet_precmd() { { __duet_end; } 2>/dev/null; }
precmd_functions=(__duet_precmd $precmd_functions)
builtin printf '<<duet-%s:ready>>' "$__duet_nonce" >/dev/tty
"#;

/// `text` as one single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// 128 bits of per-session randomness as hex. Not for cryptography: it only has to
/// be unguessable by a command's output, which never sees it.
pub(super) fn new_nonce() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default();
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    (0..2u8)
        .map(|half| {
            // Each RandomState carries fresh random keys.
            let mut hasher = RandomState::new().build_hasher();
            hasher.write_u8(half);
            hasher.write_u128(time);
            hasher.write_u64(count);
            hasher.write_u32(std::process::id());
            format!("{:016x}", hasher.finish())
        })
        .collect()
}

/// One piece of the PTY stream, as the [`Scanner`] understands it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// The setup script finished.
    Ready,
    /// The command with this id started; output follows.
    Begin(u64),
    /// Raw output of the running command.
    Output(Vec<u8>),
    /// The command with this id ended with `status`.
    End { id: u64, status: i32 },
}

/// Splits the PTY stream into [`Frame`]s. Output outside a begin/end pair (prompts,
/// echo, job notices between commands) is dropped here.
#[derive(Debug)]
pub(super) struct Scanner {
    /// `<<duet-<nonce>:`, the start of every marker.
    prefix: Vec<u8>,
    /// Bytes not yet classified: at most a possible marker start and its body.
    pending: Vec<u8>,
    in_command: bool,
}

impl Scanner {
    pub(super) fn new(nonce: &str) -> Self {
        Self {
            prefix: format!("<<duet-{nonce}:").into_bytes(),
            pending: Vec::new(),
            in_command: false,
        }
    }

    /// Classifies `bytes`, appending complete frames to `frames`. Bytes that might be
    /// the start of a marker are held back until the next call decides.
    pub(super) fn push(&mut self, bytes: &[u8], frames: &mut Vec<Frame>) {
        self.pending.extend_from_slice(bytes);
        let mut start = 0;
        loop {
            let rest = &self.pending[start..];
            let Some(found) = find(rest, &self.prefix) else {
                let keep = partial_prefix_len(rest, &self.prefix);
                let cut = start + rest.len() - keep;
                self.emit(start, cut, frames);
                start = cut;
                break;
            };
            let marker_start = start + found;
            self.emit(start, marker_start, frames);
            let body_start = marker_start + self.prefix.len();
            match self.parse_marker(body_start) {
                Parsed::Marker { frame, end } => {
                    self.apply(frame, frames);
                    start = end;
                }
                Parsed::Incomplete => {
                    start = marker_start;
                    break;
                }
                Parsed::NotAMarker => {
                    // Only the first byte is settled; a real marker may start inside.
                    self.emit(marker_start, marker_start + 1, frames);
                    start = marker_start + 1;
                }
            }
        }
        self.pending.drain(..start);
    }

    fn emit(&self, from: usize, to: usize, frames: &mut Vec<Frame>) {
        if !self.in_command || from >= to {
            return;
        }
        let bytes = &self.pending[from..to];
        if let Some(Frame::Output(last)) = frames.last_mut() {
            last.extend_from_slice(bytes);
        } else {
            frames.push(Frame::Output(bytes.to_vec()));
        }
    }

    fn apply(&mut self, frame: Frame, frames: &mut Vec<Frame>) {
        match frame {
            Frame::Begin(_) => self.in_command = true,
            Frame::End { .. } | Frame::Ready => self.in_command = false,
            Frame::Output(_) => {}
        }
        frames.push(frame);
    }

    fn parse_marker(&self, body_start: usize) -> Parsed {
        let available = &self.pending[body_start..];
        let window = &available[..available.len().min(MAX_BODY + MARKER_END.len())];
        let Some(body_len) = find(window, MARKER_END) else {
            return if available.len() < MAX_BODY + MARKER_END.len() {
                Parsed::Incomplete
            } else {
                Parsed::NotAMarker
            };
        };
        let end = body_start + body_len + MARKER_END.len();
        match std::str::from_utf8(&window[..body_len])
            .ok()
            .and_then(parse_body)
        {
            Some(frame) => Parsed::Marker { frame, end },
            None => Parsed::NotAMarker,
        }
    }
}

enum Parsed {
    Marker { frame: Frame, end: usize },
    Incomplete,
    NotAMarker,
}

/// `ready`, `begin:<id>` or `end:<id>:<status>`.
fn parse_body(body: &str) -> Option<Frame> {
    let mut parts = body.split(':');
    let frame = match (parts.next()?, parts.next(), parts.next()) {
        ("ready", None, None) => Frame::Ready,
        ("begin", Some(id), None) => Frame::Begin(id.parse().ok()?),
        ("end", Some(id), Some(status)) => Frame::End {
            id: id.parse().ok()?,
            status: status.parse().ok()?,
        },
        _ => return None,
    };
    parts.next().is_none().then_some(frame)
}

/// Offset of the first occurrence of `needle` in `haystack`. Candidates are found by
/// their first byte, so ordinary output is scanned in linear time.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, _) = needle.split_first()?;
    let mut from = 0;
    while let Some(offset) = haystack[from..].iter().position(|&byte| byte == first) {
        let at = from + offset;
        let candidate = &haystack[at..];
        if candidate.len() < needle.len() {
            return None;
        }
        if candidate.starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Length of the longest tail of `bytes` that is a proper start of `prefix`.
fn partial_prefix_len(bytes: &[u8], prefix: &[u8]) -> usize {
    let longest = bytes.len().min(prefix.len().saturating_sub(1));
    (1..=longest)
        .rev()
        .find(|&len| prefix.starts_with(&bytes[bytes.len() - len..]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const NONCE: &str = "0123abcd";

    fn marker(body: &str) -> String {
        format!("<<duet-{NONCE}:{body}>>")
    }

    fn scan_chunks(chunks: &[&[u8]]) -> Vec<Frame> {
        let mut scanner = Scanner::new(NONCE);
        let mut frames = Vec::new();
        for chunk in chunks {
            scanner.push(chunk, &mut frames);
        }
        merge_output(frames)
    }

    /// Adjacent output frames joined, so results do not depend on chunking.
    fn merge_output(frames: Vec<Frame>) -> Vec<Frame> {
        let mut merged: Vec<Frame> = Vec::new();
        for frame in frames {
            match (merged.last_mut(), frame) {
                (Some(Frame::Output(last)), Frame::Output(more)) => last.extend(more),
                (_, frame) => merged.push(frame),
            }
        }
        merged
    }

    fn stream() -> String {
        format!(
            "prompt noise{}echo{}hello\r\nworld{}between{}x{}",
            marker("ready"),
            marker("begin:1"),
            marker("end:1:0"),
            marker("begin:2"),
            marker("end:2:130"),
        )
    }

    fn expected() -> Vec<Frame> {
        vec![
            Frame::Ready,
            Frame::Begin(1),
            Frame::Output(b"hello\r\nworld".to_vec()),
            Frame::End { id: 1, status: 0 },
            Frame::Begin(2),
            Frame::Output(b"x".to_vec()),
            Frame::End { id: 2, status: 130 },
        ]
    }

    #[test]
    fn output_between_markers_is_kept_and_everything_else_dropped() {
        assert_eq!(scan_chunks(&[stream().as_bytes()]), expected());
    }

    #[test]
    fn markers_split_across_every_possible_chunk_boundary_are_found() {
        let bytes = stream().into_bytes();
        for cut in 0..bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(scan_chunks(&[a, b]), expected(), "cut at {cut}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(scan_chunks(&singles), expected());
    }

    #[test]
    fn look_alikes_without_the_nonce_or_with_a_bad_body_are_output() {
        let fake = format!(
            "<<duet-ffff:end:1:0>> <<duet-{NONCE}:end:x:0>> <<duet-{NONCE}:bogus>> \
             <<duet-{NONCE}:end:1:0:9>> <<duet-{NONCE}"
        );
        let text = format!("{}{fake}{}", marker("begin:1"), marker("end:1:3"));
        assert_eq!(
            scan_chunks(&[text.as_bytes()]),
            vec![
                Frame::Begin(1),
                Frame::Output(fake.clone().into_bytes()),
                Frame::End { id: 1, status: 3 },
            ]
        );
    }

    #[test]
    fn an_unterminated_prefix_is_released_once_it_cannot_be_a_marker() {
        let long = format!("<<duet-{NONCE}:{}", "z".repeat(200));
        let text = format!("{}{long}", marker("begin:7"));
        assert_eq!(
            scan_chunks(&[text.as_bytes()]),
            vec![Frame::Begin(7), Frame::Output(long.into_bytes())]
        );
    }

    #[test]
    fn large_output_passes_through_except_a_possible_marker_start() {
        let mut scanner = Scanner::new(NONCE);
        let mut frames = Vec::new();
        scanner.push(marker("begin:1").as_bytes(), &mut frames);
        let chunk = "<".repeat(64 * 1024);
        let mut total = 0;
        for _ in 0..160 {
            scanner.push(chunk.as_bytes(), &mut frames);
            for frame in frames.drain(..) {
                if let Frame::Output(bytes) = frame {
                    total += bytes.len();
                }
            }
        }
        // Only a possible marker start is held back.
        assert!(total + NONCE.len() + 10 >= 160 * chunk.len(), "{total}");
    }

    #[test]
    fn nonces_differ_and_are_hex() {
        let (a, b) = (new_nonce(), new_nonce());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
    }

    #[test]
    fn the_setup_script_quotes_the_scratch_path() {
        let script = Flavor::Bash.init_script("abc", Path::new("/tmp/it's here"));
        assert!(
            script.contains(r"__duet_dir='/tmp/it'\''s here'"),
            "{script}"
        );
        assert!(script.contains("__duet_nonce=abc"), "{script}");
        assert!(!script.contains('@'), "unreplaced placeholder: {script}");
    }
}

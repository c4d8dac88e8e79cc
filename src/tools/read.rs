//! The `read` tool: a window of a text file with numbered lines.
//!
//! Owns: windowing (offset/limit), the numbered-line output, long-line cuts, the
//! binary/directory/empty/past-the-end answers, and recording reads in the ledger.
//! Does not own: clipping the whole result (the agent does) or path rules.
//! Invariant: the file is streamed; memory use is bounded by the window (at most
//! [`MAX_LINE_CHARS`] characters kept per line), not by the file size.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read as _, Seek as _, SeekFrom};
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::describe::{self, CallInfo};
use super::files::{
    BINARY_SNIFF_BYTES, beneath_failure, binary_refusal, blocking, has_binary_marker, io_failure,
    not_found,
};
use super::text::{MAX_LINE_CHARS, count, cut_long_line, push_numbered, thousands};
use super::{Concurrency, Tool, ToolCtx, ToolError, ToolOutput, Workspace, parse_args, schema_for};

const DEFAULT_LIMIT: usize = 2000;
/// The most lines one call returns, whatever `limit` says, so memory stays bounded on
/// huge files; the footer tells the model where to continue.
const MAX_LIMIT: usize = 10_000;
/// Bytes kept per line: enough for [`MAX_LINE_CHARS`] characters of any width.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// The file to read, relative to the workspace root (an absolute path inside the
    /// workspace also works).
    path: String,
    /// 1-based number of the first line to show. Defaults to 1.
    #[schemars(range(min = 1))]
    offset: Option<usize>,
    /// How many lines to show. Defaults to 2000, at most 10000.
    #[schemars(range(min = 1, max = 10_000))]
    limit: Option<usize>,
}

pub struct Read;

#[async_trait::async_trait]
impl Tool for Read {
    fn name(&self) -> &'static str {
        "read"
    }

    fn description(&self) -> &'static str {
        "Read a UTF-8 text file in the workspace. Lines come back numbered as \
         `<number><tab><text>` (the number and tab are not part of the file). Shows up to \
         2000 lines from `offset` (1-based); the last line says how many lines the file has \
         and which offset continues. Lines over 2000 characters are cut. Binary files and \
         directories are refused (use glob to list directories). Read a file before \
         overwriting it with write."
    }

    fn schema(&self) -> Value {
        schema_for::<ReadArgs>()
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }

    fn describe(&self, args: &serde_json::Map<String, Value>) -> Option<CallInfo> {
        let path = describe::text(args, "path")?;
        let number = |key: &str| args.get(key).and_then(Value::as_u64);
        let range = line_range(number("offset"), number("limit"));
        Some(CallInfo::new(
            format!("read {path}{range}"),
            vec![path.to_string()],
        ))
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        let args: ReadArgs = parse_args(self.name(), args)?;
        if args.limit == Some(0) {
            return Err(ToolError::InvalidArguments(
                "limit must be at least 1 (it is the number of lines to show). Omit it to \
                 read up to 2000 lines."
                    .into(),
            ));
        }
        let window = Window {
            // Models sometimes count from 0; line 0 can only mean the first line.
            first: args.offset.unwrap_or(1).max(1),
            limit: args.limit.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT),
        };
        let workspace = ctx.workspace.clone();
        let ledger = ctx.ledger.clone();
        let (output, abs) = blocking(move || {
            let abs = workspace.resolve_for_read(&args.path)?;
            let display = workspace.display(&abs);
            let output = read_file(&workspace, &abs, &display, window)?;
            ledger.record_read(&abs);
            Ok((output, abs))
        })
        .await?;
        // A file read is often a file about to be edited: its check will then be quick.
        ctx.linter.prime(&abs);
        Ok(output)
    }
}

#[derive(Clone, Copy, Debug)]
struct Window {
    /// 1-based.
    first: usize,
    limit: usize,
}

fn read_file(
    workspace: &Workspace,
    abs: &Path,
    display: &str,
    window: Window,
) -> Result<ToolOutput, ToolError> {
    let (root, relative) = workspace.place(abs);
    let mut file = match root.open_file(relative) {
        Ok((file, _)) => file,
        Err(error) if error.is_not_found() => {
            return Err(not_found(
                display,
                "Check the path; glob can find files by name (e.g. pattern `**/name.rs`).",
            ));
        }
        Err(error) => return Err(beneath_failure("read", display, error)),
    };
    let failed = |error: io::Error| io_failure("read", display, &error);
    if starts_binary(&mut file).map_err(failed)? {
        return Err(binary_refusal(display, "it contains a NUL byte"));
    }
    let mut lines = LineReader::new(BufReader::with_capacity(64 * 1024, file));

    let skipped = lines.skip_lines(window.first - 1).map_err(failed)?;
    let shown = collect_window(&mut lines, display, window)?;
    let total = skipped + shown.len() + lines.count_rest().map_err(failed)?;

    if total == 0 {
        return Ok(ToolOutput {
            content: format!("`{display}` is empty (0 lines)."),
            summary: format!("read {display} (empty)"),
            checks: None,
        });
    }
    if shown.is_empty() {
        return Err(ToolError::InvalidArguments(format!(
            "offset {} is past the end of `{display}`, which has {}. Call read with an offset \
             from 1 to {total}.",
            window.first,
            count(total as u64, "line")
        )));
    }
    Ok(render(display, window.first, &shown, total))
}

/// Whether the first bytes contain a NUL; leaves the file at its start.
fn starts_binary(file: &mut File) -> io::Result<bool> {
    let mut prefix = Vec::with_capacity(BINARY_SNIFF_BYTES);
    file.by_ref()
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut prefix)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(has_binary_marker(&prefix))
}

/// Reads up to `window.limit` lines, each already cut for display.
fn collect_window<R: BufRead>(
    lines: &mut LineReader<R>,
    display: &str,
    window: Window,
) -> Result<Vec<String>, ToolError> {
    let mut shown = Vec::new();
    let mut kept = Vec::new();
    while shown.len() < window.limit {
        let Some(line) = lines
            .next_line(&mut kept)
            .map_err(|error| io_failure("read", display, &error))?
        else {
            break;
        };
        let text = decode_line(&kept, &line).ok_or_else(|| {
            binary_refusal(
                display,
                &format!(
                    "line {} is not valid UTF-8",
                    thousands((window.first + shown.len()) as u64)
                ),
            )
        })?;
        shown.push(cut_long_line(text, line.chars));
    }
    Ok(shown)
}

/// The kept prefix of a line as text, without its `\r`; `None` if it is not UTF-8.
fn decode_line<'a>(kept: &'a [u8], line: &ScannedLine) -> Option<&'a str> {
    let text = match std::str::from_utf8(kept) {
        Ok(text) => text,
        // A long line's kept prefix may end in the middle of a character.
        Err(error) if line.truncated && error.error_len().is_none() => {
            std::str::from_utf8(&kept[..error.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    Some(text.strip_suffix('\r').unwrap_or(text))
}

fn render(display: &str, first: usize, shown: &[String], total: usize) -> ToolOutput {
    let last = first + shown.len() - 1;
    let mut content = String::new();
    push_numbered(&mut content, first, shown.iter().map(String::as_str));
    let range = format!(
        "lines {}–{} of {}",
        thousands(first as u64),
        thousands(last as u64),
        thousands(total as u64)
    );
    let (footer, summary) = if first == 1 && last == total {
        (
            format!("[whole file: {}]", count(total as u64, "line")),
            format!("read {} of {display}", count(total as u64, "line")),
        )
    } else {
        let next = if last < total {
            format!("call read with offset={} to continue", last + 1)
        } else {
            "this is the end of the file".to_string()
        };
        (
            format!("[{range}; {next}]"),
            format!("read {range} of {display}"),
        )
    };
    content.push_str(&footer);
    ToolOutput {
        content,
        summary,
        checks: None,
    }
}

/// What [`LineReader::next_line`] learned about one line.
#[derive(Debug)]
struct ScannedLine {
    /// Characters in the line, without its `\n` and `\r`.
    chars: usize,
    /// Whether more bytes were in the line than were kept.
    truncated: bool,
}

/// Splits a byte stream into `\n`-terminated lines without ever holding more than
/// [`MAX_LINE_BYTES`] of one line.
struct LineReader<R> {
    reader: R,
}

impl<R: BufRead> LineReader<R> {
    fn new(reader: R) -> Self {
        Self { reader }
    }

    /// Reads the next line into `kept` (cleared first, at most [`MAX_LINE_BYTES`],
    /// without the `\n`); `None` at the end of the stream.
    fn next_line(&mut self, kept: &mut Vec<u8>) -> io::Result<Option<ScannedLine>> {
        kept.clear();
        let mut chars = 0;
        let mut seen_any = false;
        let mut last_byte = None;
        let mut truncated = false;
        loop {
            let buffer = self.reader.fill_buf()?;
            if buffer.is_empty() {
                break;
            }
            seen_any = true;
            let newline = buffer.iter().position(|&byte| byte == b'\n');
            let chunk = &buffer[..newline.unwrap_or(buffer.len())];
            let room = MAX_LINE_BYTES.saturating_sub(kept.len());
            kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
            truncated |= chunk.len() > room;
            // Counting non-continuation bytes counts the characters of valid UTF-8.
            chars += chunk.iter().filter(|&&byte| byte & 0xC0 != 0x80).count();
            last_byte = chunk.last().copied().or(last_byte);
            let consumed = chunk.len() + usize::from(newline.is_some());
            self.reader.consume(consumed);
            if newline.is_some() {
                break;
            }
        }
        if !seen_any {
            return Ok(None);
        }
        if last_byte == Some(b'\r') {
            chars -= 1;
        }
        Ok(Some(ScannedLine { chars, truncated }))
    }

    /// Skips up to `n` lines; returns how many there were.
    fn skip_lines(&mut self, n: usize) -> io::Result<usize> {
        let mut skipped = 0;
        while skipped < n && self.skip_line()? {
            skipped += 1;
        }
        Ok(skipped)
    }

    /// Counts the lines left in the stream.
    fn count_rest(&mut self) -> io::Result<usize> {
        let mut lines = 0;
        while self.skip_line()? {
            lines += 1;
        }
        Ok(lines)
    }

    /// Moves past one line without looking at its content; `false` at the end.
    fn skip_line(&mut self) -> io::Result<bool> {
        let mut seen_any = false;
        loop {
            let buffer = self.reader.fill_buf()?;
            if buffer.is_empty() {
                return Ok(seen_any);
            }
            seen_any = true;
            match buffer.iter().position(|&byte| byte == b'\n') {
                Some(newline) => {
                    self.reader.consume(newline + 1);
                    return Ok(true);
                }
                None => {
                    let len = buffer.len();
                    self.reader.consume(len);
                }
            }
        }
    }
}

/// `:120-200` for offset 120 and limit 81; nothing when the whole file is read.
fn line_range(offset: Option<u64>, limit: Option<u64>) -> String {
    match (offset, limit) {
        (None, None) => String::new(),
        (Some(start), None) => format!(":{start}-"),
        (start, Some(limit)) => {
            let start = start.unwrap_or(1).max(1);
            format!(":{start}-{}", start + limit.saturating_sub(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::{Fixture, invalid, refused};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn lines(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn whole_small_file_is_numbered() {
        let fx = Fixture::new();
        fx.file("src/a.txt", "alpha\nbeta\n");
        let output = fx.call(&Read, json!({"path": "src/a.txt"})).await.unwrap();
        assert_eq!(
            output,
            ToolOutput {
                content: "     1\talpha\n     2\tbeta\n[whole file: 2 lines]".into(),
                summary: "read 2 lines of src/a.txt".into(),
                checks: None,
            }
        );
    }

    #[tokio::test]
    async fn last_line_without_newline_counts() {
        let fx = Fixture::new();
        fx.file("a.txt", "one\ntwo");
        let content = fx.ok(&Read, json!({"path": "a.txt"})).await;
        assert_eq!(content, "     1\tone\n     2\ttwo\n[whole file: 2 lines]");
    }

    #[tokio::test]
    async fn window_says_how_to_continue() {
        let fx = Fixture::new();
        fx.file("big.txt", lines(5312));
        let output = fx.call(&Read, json!({"path": "big.txt"})).await.unwrap();
        let content = output.content;
        assert!(content.starts_with("     1\tline 1\n"));
        assert!(content.contains("  2000\tline 2000\n"));
        assert!(!content.contains("line 2001"));
        assert!(
            content.ends_with("[lines 1–2,000 of 5,312; call read with offset=2001 to continue]"),
            "{content}"
        );
        assert_eq!(output.summary, "read lines 1–2,000 of 5,312 of big.txt");
    }

    #[tokio::test]
    async fn offset_and_limit_select_lines() {
        let fx = Fixture::new();
        fx.file("a.txt", lines(10));
        let content = fx
            .ok(&Read, json!({"path": "a.txt", "offset": 4, "limit": 2}))
            .await;
        assert_eq!(
            content,
            "     4\tline 4\n     5\tline 5\n[lines 4–5 of 10; call read with offset=6 to continue]"
        );
        let tail = fx.ok(&Read, json!({"path": "a.txt", "offset": 9})).await;
        assert_eq!(
            tail,
            "     9\tline 9\n    10\tline 10\n[lines 9–10 of 10; this is the end of the file]"
        );
    }

    #[tokio::test]
    async fn huge_limits_are_capped() {
        let fx = Fixture::new();
        fx.file("big.txt", lines(MAX_LIMIT + 5));
        let content = fx
            .ok(&Read, json!({"path": "big.txt", "limit": 1_000_000}))
            .await;
        assert!(
            content
                .ends_with("[lines 1–10,000 of 10,005; call read with offset=10001 to continue]"),
            "{}",
            &content[content.len() - 200..]
        );
    }

    #[tokio::test]
    async fn offset_zero_means_the_first_line() {
        let fx = Fixture::new();
        fx.file("a.txt", lines(3));
        let content = fx.ok(&Read, json!({"path": "a.txt", "offset": 0})).await;
        assert!(content.starts_with("     1\tline 1\n"), "{content}");
    }

    #[tokio::test]
    async fn offset_past_the_end_says_how_many_lines() {
        let fx = Fixture::new();
        fx.file("a.txt", lines(120));
        let message = invalid(
            fx.call(&Read, json!({"path": "a.txt", "offset": 500}))
                .await,
        );
        assert!(message.contains("offset 500"), "{message}");
        assert!(message.contains("120 lines"), "{message}");
        assert!(!fx.ctx.ledger.was_read(&fx.path("a.txt")));
    }

    #[tokio::test]
    async fn zero_limit_is_invalid() {
        let fx = Fixture::new();
        fx.file("a.txt", "x\n");
        let message = invalid(fx.call(&Read, json!({"path": "a.txt", "limit": 0})).await);
        assert!(message.contains("limit"), "{message}");
    }

    #[tokio::test]
    async fn empty_file_says_so() {
        let fx = Fixture::new();
        fx.file("empty.txt", "");
        let content = fx.ok(&Read, json!({"path": "empty.txt"})).await;
        assert_eq!(content, "`empty.txt` is empty (0 lines).");
        assert!(fx.ctx.ledger.was_read(&fx.path("empty.txt")));
    }

    #[tokio::test]
    async fn long_lines_are_cut_with_a_marker() {
        let fx = Fixture::new();
        let long = "ab".repeat(3000);
        fx.file("long.txt", format!("short\n{long}\nend\n"));
        let content = fx.ok(&Read, json!({"path": "long.txt"})).await;
        let expected = format!(
            "     1\tshort\n     2\t{}… [4,000 chars cut from this line]\n     3\tend\n[whole file: 3 lines]",
            &long[..2000]
        );
        assert_eq!(content, expected);
    }

    #[tokio::test]
    async fn a_huge_multibyte_line_is_cut_without_loading_it_whole() {
        let fx = Fixture::new();
        let chars = MAX_LINE_BYTES * 3;
        fx.file("wide.txt", format!("{}\n", "€".repeat(chars)));
        let content = fx.ok(&Read, json!({"path": "wide.txt"})).await;
        let cut = thousands((chars - MAX_LINE_CHARS) as u64);
        assert!(
            content.contains(&format!("… [{cut} chars cut from this line]")),
            "{content}"
        );
        assert!(content.len() < MAX_LINE_BYTES + 200);
    }

    #[tokio::test]
    async fn crlf_lines_are_shown_without_carriage_returns() {
        let fx = Fixture::new();
        fx.file("dos.txt", "one\r\ntwo\r\n");
        let content = fx.ok(&Read, json!({"path": "dos.txt"})).await;
        assert_eq!(content, "     1\tone\n     2\ttwo\n[whole file: 2 lines]");
    }

    #[tokio::test]
    async fn binary_files_are_refused() {
        let fx = Fixture::new();
        fx.file("image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
        fx.file("latin1.txt", b"caf\xe9\n");
        for path in ["image.png", "latin1.txt"] {
            let message = refused(fx.call(&Read, json!({ "path": path })).await);
            assert!(
                message.contains("binary") && message.contains("not readable as text"),
                "{message}"
            );
            assert!(message.contains(path), "{message}");
            assert!(!fx.ctx.ledger.was_read(&fx.path(path)));
        }
    }

    #[tokio::test]
    async fn directories_are_refused_with_a_glob_hint() {
        let fx = Fixture::new();
        fx.file("src/a.rs", "");
        let message = refused(fx.call(&Read, json!({"path": "src"})).await);
        assert!(
            message.contains("directory") && message.contains("glob"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn missing_files_are_reported() {
        let fx = Fixture::new();
        let message = invalid(fx.call(&Read, json!({"path": "nope.rs"})).await);
        assert!(message.contains("`nope.rs` does not exist"), "{message}");
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_refused() {
        let fx = Fixture::new();
        let message = refused(fx.call(&Read, json!({"path": "../secret"})).await);
        assert!(message.contains("outside the workspace"), "{message}");
        let message = refused(fx.call(&Read, json!({"path": "/etc/hostname"})).await);
        assert!(message.contains("outside the workspace"), "{message}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlink_leaving_the_workspace_is_refused() {
        let fx = Fixture::new();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cr3t").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), fx.path("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), fx.path("dir")).unwrap();
        for path in ["link", "dir/secret"] {
            let message = refused(fx.call(&Read, json!({ "path": path })).await);
            assert!(message.contains("symbolic link"), "{message}");
            assert!(!message.contains("s3cr3t"));
        }
    }

    #[tokio::test]
    async fn successful_reads_are_recorded() {
        let fx = Fixture::new();
        fx.file("a.txt", "x\n");
        fx.ok(&Read, json!({"path": "./a.txt"})).await;
        assert!(fx.ctx.ledger.was_read(&fx.path("a.txt")));
    }

    #[tokio::test]
    async fn a_read_source_file_is_parsed_ahead_for_its_next_check() {
        let fx = Fixture::new();
        fx.file("src/lib.rs", "fn a() {}\n");
        fx.ok(&Read, json!({"path": "src/lib.rs"})).await;
        let abs = fx.path("src/lib.rs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !fx.ctx.linter.keeps_parse_of(&abs) {
            assert!(std::time::Instant::now() < deadline, "never parsed ahead");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_saved_output_is_read_by_its_exact_path_and_never_through_a_link() {
        let mut fx = Fixture::new();
        let outputs = tempfile::tempdir().unwrap();
        let outputs_dir = outputs.path().canonicalize().unwrap();
        std::fs::write(outputs_dir.join("call_1.txt"), "full output\n").unwrap();
        let workspace = crate::tools::Workspace::new(fx.root())
            .unwrap()
            .with_saved_outputs(&outputs_dir);
        fx.ctx.workspace = std::sync::Arc::new(workspace);
        let saved = outputs_dir.join("call_1.txt");
        let content = fx.ok(&Read, json!({"path": saved.to_str().unwrap()})).await;
        assert!(content.contains("full output"), "{content}");
        // A link in the outputs directory is not followed out of it.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("secret"), "secret\n").unwrap();
        std::os::unix::fs::symlink(
            elsewhere.path().join("secret"),
            outputs_dir.join("call_2.txt"),
        )
        .unwrap();
        let linked = outputs_dir.join("call_2.txt");
        let result = fx
            .call(&Read, json!({"path": linked.to_str().unwrap()}))
            .await;
        assert!(result.is_err(), "{result:?}");
    }

    #[tokio::test]
    async fn unknown_arguments_are_rejected() {
        let fx = Fixture::new();
        let message = invalid(fx.call(&Read, json!({"path": "a", "lines": 3})).await);
        assert!(message.contains("lines"), "{message}");
    }

    #[test]
    fn line_reader_counts_lines_and_chars() {
        let data = "a\r\nbé\n\nlast";
        let mut reader = LineReader::new(data.as_bytes());
        let mut kept = Vec::new();
        let mut seen = Vec::new();
        while let Some(line) = reader.next_line(&mut kept).unwrap() {
            seen.push((
                String::from_utf8(kept.clone()).unwrap(),
                line.chars,
                line.truncated,
            ));
        }
        assert_eq!(
            seen,
            vec![
                ("a\r".to_string(), 1, false),
                ("bé".to_string(), 2, false),
                (String::new(), 0, false),
                ("last".to_string(), 4, false),
            ]
        );
        let mut reader = LineReader::new(data.as_bytes());
        assert_eq!(reader.skip_lines(2).unwrap(), 2);
        assert_eq!(reader.count_rest().unwrap(), 2);
    }
}

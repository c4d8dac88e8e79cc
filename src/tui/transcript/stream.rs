//! Streamed assistant text: deltas → complete lines → paced reveal → markdown.
//!
//! Owns: [`TextStream`] (splits deltas into lines and queues them for the chunking
//! policy) and [`MarkdownDoc`] (renders revealed lines incrementally). Does not own:
//! pacing decisions (`chunking.rs`), parsing markdown (`markdown.rs`) or wrapping.
//! Invariant: a revealed line is rendered as markdown only once it is complete; the
//! incomplete last line is never parsed, only previewed raw. Deltas are cleaned of
//! terminal control as they arrive (a sequence split between two deltas included), so
//! nothing downstream ever holds an escape sequence from the model.
//!
//! Partial lines: once every complete line before it is revealed, the line still being
//! received is shown raw (plain text, or plain code inside a code block), so a long
//! paragraph visibly types out; when its line break arrives it is rendered as markdown
//! in the same place.
//!
//! Incremental rendering: the document is split into segments at blank lines (outside
//! fenced code) followed by an unindented line, and at top-level code fences. Settled
//! segments are rendered once and only appended to; only the last prose segment is
//! re-rendered as lines arrive, and code lines are highlighted one by one as they are
//! revealed, so a 5,000-line code block costs 5,000 line highlights, not 5,000 parses.

use std::collections::VecDeque;
use std::time::Instant;

use ratatui::text::Span;

use super::chunking::ChunkPolicy;
use super::highlight::CodeHighlighter;
use super::markdown::{self, code_line};
use super::wrap::LogicalLine;
use crate::terminal_text::Sanitizer;
use crate::tui::theme::Theme;

/// Text received but not yet shown, and the pace at which it is shown.
#[derive(Default)]
pub struct TextStream {
    partial: String,
    queue: VecDeque<String>,
    policy: ChunkPolicy,
    sanitizer: Sanitizer,
}

impl TextStream {
    /// Takes a delta; complete lines join the queue.
    pub fn push(&mut self, text: &str) {
        let text = self.sanitizer.push(text);
        let queue = &mut self.queue;
        split_lines(&mut self.partial, &text, |line| queue.push_back(line));
    }

    /// The lines the chunking policy lets through at `now`.
    pub fn reveal(&mut self, now: Instant) -> Vec<String> {
        let count = self.policy.decide(self.queue.len(), now);
        self.queue.drain(..count).collect()
    }

    /// Everything left, the partial line included (the stream is over).
    pub fn drain(&mut self) -> Vec<String> {
        let rest = self.sanitizer.finish();
        self.partial.push_str(&rest);
        self.policy.drain(self.queue.len());
        let mut lines: Vec<String> = self.queue.drain(..).collect();
        if !self.partial.is_empty() {
            lines.push(std::mem::take(&mut self.partial));
        }
        lines
    }

    /// The incomplete line, once nothing queued comes before it.
    pub fn visible_partial(&self) -> &str {
        if self.queue.is_empty() {
            &self.partial
        } else {
            ""
        }
    }

    #[cfg(test)]
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        self.policy.next_deadline(self.queue.len(), now)
    }
}

/// Appends `text` to the incomplete line `partial`, handing every line it completes
/// (without its `\n` or `\r\n`) to `complete`. Linear in `text`, however many lines
/// one delta holds.
pub fn split_lines(partial: &mut String, text: &str, mut complete: impl FnMut(String)) {
    for piece in text.split_inclusive('\n') {
        match piece.strip_suffix('\n') {
            Some(end) => {
                partial.push_str(end);
                let mut line = std::mem::take(partial);
                if line.ends_with('\r') {
                    line.pop();
                }
                complete(line);
            }
            None => partial.push_str(piece),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Fence {
    marker: char,
    len: usize,
}

/// A fence line: its indentation, the fence, and the info string.
fn parse_fence(line: &str) -> Option<(usize, Fence, &str)> {
    let body = line.trim_start_matches(' ');
    let indent = line.len() - body.len();
    let marker = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = body.chars().take_while(|c| *c == marker).count();
    let info = body[len..].trim();
    if len < 3 || (marker == '`' && info.contains('`')) {
        return None;
    }
    Some((indent, Fence { marker, len }, info))
}

fn closes(open: Fence, line: &str) -> bool {
    parse_fence(line).is_some_and(|(indent, fence, info)| {
        indent < 4 && fence.marker == open.marker && fence.len >= open.len && info.is_empty()
    })
}

#[derive(Default)]
struct Prose {
    source: String,
    /// An indented fence inside this prose (in a list item), still open.
    open_fence: Option<Fence>,
    last_blank: bool,
}

enum Tail {
    Prose(Prose),
    /// A top-level fenced block; its lines go straight to the settled part.
    Code {
        fence: Fence,
        highlighter: CodeHighlighter,
    },
}

/// A markdown document that grows line by line.
pub struct MarkdownDoc {
    theme: Theme,
    settled: Vec<LogicalLine>,
    tail: Tail,
    /// The rendering of the prose tail, when it is up to date.
    tail_lines: Option<Vec<LogicalLine>>,
    /// The next settled line starts a new segment (needs a blank line before it).
    new_segment: bool,
}

impl MarkdownDoc {
    pub fn new(theme: &Theme) -> Self {
        Self {
            theme: theme.clone(),
            settled: Vec::new(),
            tail: Tail::Prose(Prose::default()),
            tail_lines: None,
            new_segment: false,
        }
    }

    /// Adds one complete line (without its line break). Returns false when the line
    /// changes nothing shown by itself — a code fence, or a blank line between
    /// paragraphs — since its effect only shows with the lines after it.
    pub fn push_line(&mut self, line: &str) -> bool {
        match &mut self.tail {
            Tail::Code { fence, highlighter } => {
                if closes(*fence, line) {
                    self.tail = Tail::Prose(Prose::default());
                    self.new_segment = true;
                    return false;
                }
                let spans = highlighter.line(line);
                let line = code_line(spans, &self.theme);
                self.append(line);
                true
            }
            Tail::Prose(prose) => {
                let in_fence = prose.open_fence.is_some();
                if !in_fence {
                    if let Some((0, fence, info)) = parse_fence(line) {
                        self.settle_prose();
                        let highlighter = CodeHighlighter::new(info, &self.theme);
                        self.tail = Tail::Code { fence, highlighter };
                        return false;
                    }
                    let starts_block = !line.trim().is_empty() && !line.starts_with([' ', '\t']);
                    if prose.last_blank && starts_block {
                        self.settle_prose();
                    }
                }
                self.add_prose(line);
                in_fence || !line.trim().is_empty()
            }
        }
    }

    /// The stream is over: whatever is pending becomes settled.
    pub fn finish(&mut self) {
        self.settle_prose();
        self.tail = Tail::Prose(Prose::default());
    }

    /// The lines that will not change any more, and those of the last prose segment,
    /// which may still change as lines arrive (rendered again only after a change).
    pub fn parts(&mut self) -> (&[LogicalLine], &[LogicalLine]) {
        if self.tail_lines.is_none() {
            let lines = match &self.tail {
                Tail::Prose(prose) => {
                    let mut lines = markdown::render(&prose.source, &self.theme);
                    if !lines.is_empty() && !self.settled.is_empty() {
                        lines.insert(0, LogicalLine::blank());
                    }
                    lines
                }
                Tail::Code { .. } => Vec::new(),
            };
            self.tail_lines = Some(lines);
        }
        (
            &self.settled,
            self.tail_lines.as_deref().unwrap_or_default(),
        )
    }

    /// How the incomplete line `partial` is shown until it completes.
    pub fn preview(&self, partial: &str) -> Vec<LogicalLine> {
        if partial.is_empty() {
            return Vec::new();
        }
        let mut lines = Vec::new();
        let line = match &self.tail {
            Tail::Code { .. } => {
                if self.new_segment && !self.settled.is_empty() {
                    lines.push(LogicalLine::blank());
                }
                code_line(
                    vec![Span::styled(partial.to_string(), self.theme.code)],
                    &self.theme,
                )
            }
            Tail::Prose(prose) => {
                let empty = prose.source.trim().is_empty();
                if (empty && !self.settled.is_empty()) || (!empty && prose.last_blank) {
                    lines.push(LogicalLine::blank());
                }
                LogicalLine::styled(partial, self.theme.text)
            }
        };
        lines.push(line);
        lines
    }

    fn add_prose(&mut self, line: &str) {
        let Tail::Prose(prose) = &mut self.tail else {
            return;
        };
        prose.source.push_str(line);
        prose.source.push('\n');
        prose.last_blank = line.trim().is_empty();
        prose.open_fence = match prose.open_fence {
            Some(open) if closes(open, line) => None,
            Some(open) => Some(open),
            None => parse_fence(line).map(|(_, fence, _)| fence),
        };
        self.tail_lines = None;
    }

    fn settle_prose(&mut self) {
        let Tail::Prose(prose) = &mut self.tail else {
            return;
        };
        let source = std::mem::take(&mut prose.source);
        *prose = Prose::default();
        self.tail_lines = None;
        if source.trim().is_empty() {
            return;
        }
        self.new_segment = true;
        for line in markdown::render(&source, &self.theme) {
            self.append(line);
        }
        self.new_segment = true;
    }

    fn append(&mut self, line: LogicalLine) {
        if std::mem::take(&mut self.new_segment) && !self.settled.is_empty() {
            self.settled.push(LogicalLine::blank());
        }
        self.settled.push(line);
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn texts(lines: &[LogicalLine]) -> Vec<String> {
        lines.iter().map(LogicalLine::text).collect()
    }

    fn doc_of(source: &str) -> MarkdownDoc {
        let mut doc = MarkdownDoc::new(&Theme::new(false));
        for line in source.lines() {
            doc.push_line(line);
        }
        doc
    }

    #[test]
    fn deltas_become_lines_at_line_breaks_only() {
        let mut stream = TextStream::default();
        let start = Instant::now();
        stream.push("# Ti");
        assert_eq!(stream.queued(), 0);
        assert_eq!(stream.visible_partial(), "# Ti");
        stream.push("tle\r\nbody ");
        assert_eq!(stream.reveal(start), ["# Title"]);
        assert_eq!(stream.visible_partial(), "body ");
        stream.push("one\ntwo\nthr");
        assert_eq!(stream.visible_partial(), "", "queued lines come first");
        assert_eq!(stream.drain(), ["body one", "two", "thr"]);
        assert_eq!(stream.next_deadline(start), None);
    }

    #[test]
    fn settled_segments_are_not_rendered_again() {
        let mut doc = doc_of("# Plan\n\n- one\n- two\n\nAfter the list");
        let (settled, unsettled) = doc.parts();
        assert_eq!(texts(settled), ["# Plan", "", "one", "two"]);
        assert_eq!(texts(unsettled), ["", "After the list"]);
        doc.finish();
        let (settled, unsettled) = doc.parts();
        assert_eq!(
            texts(settled),
            ["# Plan", "", "one", "two", "", "After the list"]
        );
        assert!(unsettled.is_empty());
    }

    #[test]
    fn blank_lines_inside_code_do_not_split_it() {
        let mut doc = doc_of("```rust\nfn a() {}\n\nfn b() {}\n```\ntext");
        doc.finish();
        assert_eq!(
            texts(doc.parts().0),
            ["fn a() {}", "", "fn b() {}", "", "text"]
        );
        let mut indented = doc_of("1. step\n\n   ```\n   x\n\n   y\n   ```\n");
        let (settled, unsettled) = indented.parts();
        assert!(
            settled.is_empty(),
            "one segment: the fence is inside the item"
        );
        assert_eq!(texts(unsettled), ["step", "", "x", "", "y"]);
    }

    #[test]
    fn an_open_fence_streams_line_by_line() {
        let mut doc = doc_of("Code:\n```rust\nfn main() {");
        let (settled, unsettled) = doc.parts();
        assert_eq!(texts(settled), ["Code:", "", "fn main() {"]);
        assert!(unsettled.is_empty());
        assert_eq!(texts(&doc.preview("    println!(")), ["    println!("]);
        doc.finish();
        assert_eq!(doc.parts().0.len(), 3, "an unclosed block keeps its lines");
    }

    #[test]
    fn a_line_said_to_show_nothing_leaves_the_rendering_as_it_was() {
        let source = "Intro text.\n\n- one\n- two\n\n  ```sh\n  ls\n\n  ```\n\nNext *para*.\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\nEnd.";
        let mut doc = MarkdownDoc::new(&Theme::new(false));
        let mut silent = Vec::new();
        for line in source.lines() {
            let before: Vec<String> = {
                let (settled, tail) = doc.parts();
                texts(settled).into_iter().chain(texts(tail)).collect()
            };
            if !doc.push_line(line) {
                let (settled, tail) = doc.parts();
                let after: Vec<String> = texts(settled).into_iter().chain(texts(tail)).collect();
                assert_eq!(after, before, "after {line:?}");
                silent.push(line);
            }
        }
        // Fences at the top level and blank lines between paragraphs; not the fence
        // or the blank line inside the list item's code, nor the blank code line.
        assert_eq!(silent, ["", "", "", "", "```rust", "```", ""]);
    }

    #[test]
    fn the_partial_line_is_previewed_raw_where_it_will_land() {
        let doc = doc_of("para");
        assert_eq!(texts(&doc.preview("**bold")), ["**bold"]);
        let after_blank = doc_of("para\n\n");
        assert_eq!(texts(&after_blank.preview("next")), ["", "next"]);
        assert!(doc.preview("").is_empty());
    }

    #[test]
    fn fences_are_recognised_strictly() {
        assert_eq!(
            parse_fence("```rust"),
            Some((
                0,
                Fence {
                    marker: '`',
                    len: 3
                },
                "rust"
            ))
        );
        assert_eq!(parse_fence("``not"), None);
        assert_eq!(parse_fence("``` a`b"), None);
        let open = Fence {
            marker: '~',
            len: 4,
        };
        assert!(closes(open, "~~~~~"));
        assert!(!closes(open, "~~~"));
        assert!(!closes(open, "~~~~ x"));
    }
}

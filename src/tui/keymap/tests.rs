use crossterm::event::{KeyCode, KeyModifiers};
use pretty_assertions::assert_eq;

use super::*;

fn event(text: &str) -> KeyEvent {
    // Events as a terminal reports them, written in the file's syntax for brevity.
    let (code, modifiers) = match text {
        "enter" => (KeyCode::Enter, KeyModifiers::NONE),
        "shift-enter" => (KeyCode::Enter, KeyModifiers::SHIFT),
        "alt-enter" => (KeyCode::Enter, KeyModifiers::ALT),
        "esc" => (KeyCode::Esc, KeyModifiers::NONE),
        "tab" => (KeyCode::Tab, KeyModifiers::NONE),
        "shift-tab" => (KeyCode::BackTab, KeyModifiers::SHIFT),
        "up" => (KeyCode::Up, KeyModifiers::NONE),
        "down" => (KeyCode::Down, KeyModifiers::NONE),
        "left" => (KeyCode::Left, KeyModifiers::NONE),
        "right" => (KeyCode::Right, KeyModifiers::NONE),
        "alt-left" => (KeyCode::Left, KeyModifiers::ALT),
        "alt-right" => (KeyCode::Right, KeyModifiers::ALT),
        "home" => (KeyCode::Home, KeyModifiers::NONE),
        "end" => (KeyCode::End, KeyModifiers::NONE),
        "backspace" => (KeyCode::Backspace, KeyModifiers::NONE),
        "delete" => (KeyCode::Delete, KeyModifiers::NONE),
        "pgup" => (KeyCode::PageUp, KeyModifiers::NONE),
        "pgdn" => (KeyCode::PageDown, KeyModifiers::NONE),
        "shift-up" => (KeyCode::Up, KeyModifiers::SHIFT),
        "shift-down" => (KeyCode::Down, KeyModifiers::SHIFT),
        "f1" => (KeyCode::F(1), KeyModifiers::NONE),
        "space" => (KeyCode::Char(' '), KeyModifiers::NONE),
        "?" => (KeyCode::Char('?'), KeyModifiers::SHIFT),
        other => match other.strip_prefix("ctrl-") {
            Some(rest) => (char_code(rest), KeyModifiers::CONTROL),
            None => (char_code(other), KeyModifiers::NONE),
        },
    };
    KeyEvent::new(code, modifiers)
}

fn char_code(text: &str) -> KeyCode {
    let mut chars = text.chars();
    let c = chars.next().unwrap();
    assert_eq!(chars.next(), None, "test helper does not know `{text}`");
    KeyCode::Char(c)
}

fn resolve(keymap: &Keymap, context: Context, key: &str) -> Option<Action> {
    keymap.action(&[context], &event(key))
}

fn overrides(text: &str) -> (Keymap, Vec<String>) {
    let (keymap, errors) = Keymap::with_overrides(Path::new("/c/keymap.toml"), text);
    (keymap, errors.iter().map(ToString::to_string).collect())
}

#[test]
fn the_shipped_file_parses_cleanly_and_binds_every_action() {
    let (entries, errors) = parse(Path::new(DEFAULTS_NAME), DEFAULTS);
    assert_eq!(errors, Vec::<KeymapError>::new());
    let keymap = Keymap::defaults();
    for action in Action::ALL {
        let bound = Context::ALL
            .into_iter()
            .any(|context| keymap.bindings(context).iter().any(|(_, a)| a == action));
        assert!(bound, "{} is bound nowhere", action.name());
    }
    let bound_count: usize = Context::ALL
        .into_iter()
        .map(|context| keymap.bindings(context).len())
        .sum();
    assert_eq!(bound_count, entries.len(), "no shipped key is bound twice");
}

#[test]
fn every_documented_default_resolves() {
    use Action::*;
    use Context::*;
    let cases = [
        (Composer, "enter", Submit),
        (Composer, "shift-enter", Newline),
        (Composer, "alt-enter", Newline),
        (Composer, "ctrl-j", Newline),
        (Composer, "up", HistoryPrev),
        (Composer, "down", HistoryNext),
        (Composer, "tab", Queue),
        (Composer, "esc", Interrupt),
        (Composer, "ctrl-c", Quit),
        (Composer, "shift-tab", CycleMode),
        (Composer, "pgup", PageUp),
        (Composer, "pgdn", PageDown),
        (Composer, "shift-up", ScrollUp),
        (Composer, "shift-down", ScrollDown),
        (Composer, "f1", ToggleHelp),
        (Composer, "left", CursorLeft),
        (Composer, "right", CursorRight),
        (Composer, "alt-left", WordLeft),
        (Composer, "alt-right", WordRight),
        (Composer, "home", LineStart),
        (Composer, "ctrl-a", LineStart),
        (Composer, "end", LineEnd),
        (Composer, "ctrl-e", LineEnd),
        (Composer, "backspace", DeleteBack),
        (Composer, "delete", DeleteForward),
        (Composer, "ctrl-w", DeleteWordBack),
        (Composer, "ctrl-u", ClearInput),
        (Composer, "ctrl-g", EditMessage),
        (Completion, "up", CompletionPrev),
        (Completion, "ctrl-p", CompletionPrev),
        (Completion, "down", CompletionNext),
        (Completion, "ctrl-n", CompletionNext),
        (Completion, "tab", CompletionAccept),
        (Completion, "enter", CompletionAccept),
        (Completion, "esc", CompletionClose),
        (Completion, "ctrl-c", Quit),
        (Transcript, "?", ToggleHelp),
        (Transcript, "k", ScrollUp),
        (Transcript, "j", ScrollDown),
        (DiffReview, "j", NextHunk),
        (DiffReview, "down", NextHunk),
        (DiffReview, "k", PrevHunk),
        (DiffReview, "up", PrevHunk),
        (DiffReview, "space", ToggleHunk),
        (DiffReview, "y", Apply),
        (DiffReview, "enter", Apply),
        (DiffReview, "n", RejectAll),
        (DiffReview, "r", RejectWithReason),
        (DiffReview, "f", WholeFile),
        (DiffReview, "s", SideBySide),
        (DiffReview, "e", OpenEditor),
        (DiffReview, "?", ToggleHelp),
        (DiffReview, "esc", Interrupt),
        (Approval, "a", AllowForSession),
        (Approval, "y", Apply),
        (Approval, "n", RejectAll),
        (Approval, "r", RejectWithReason),
    ];
    let keymap = Keymap::defaults();
    for (context, key, expected) in cases {
        assert_eq!(
            resolve(&keymap, context, key),
            Some(expected),
            "{}.{key}",
            context.name()
        );
    }
}

#[test]
fn printable_characters_stay_free_for_typing_in_the_composer() {
    let keymap = Keymap::defaults();
    for key in ["?", "j", "k", "y", "n", "a", "G", "space", "@", "/"] {
        for context in [Context::Composer, Context::Completion] {
            assert_eq!(resolve(&keymap, context, key), None, "{key}");
        }
    }
}

#[test]
fn the_focused_context_shadows_global() {
    let keymap = Keymap::defaults();
    // `up` scrolls nothing globally, but ctrl-f is page-down in the transcript and
    // cursor-right in the composer: the focus decides.
    assert_eq!(
        resolve(&keymap, Context::Composer, "ctrl-f"),
        Some(Action::CursorRight)
    );
    assert_eq!(
        resolve(&keymap, Context::Transcript, "ctrl-f"),
        Some(Action::PageDown)
    );
    let (keymap, errors) =
        overrides("[composer]\nkeys = [{ on = \"esc\", run = \"clear_input\" }]\n");
    assert_eq!(errors, Vec::<String>::new());
    assert_eq!(
        resolve(&keymap, Context::Composer, "esc"),
        Some(Action::ClearInput)
    );
    assert_eq!(
        resolve(&keymap, Context::Transcript, "esc"),
        Some(Action::Interrupt)
    );
    // The focus stack is searched innermost first, global last.
    let stack = [Context::DiffReview, Context::Composer];
    assert_eq!(keymap.action(&stack, &event("up")), Some(Action::PrevHunk));
    assert_eq!(
        keymap.action(&stack, &event("esc")),
        Some(Action::ClearInput)
    );
    assert_eq!(keymap.action(&stack, &event("ctrl-c")), Some(Action::Quit));
}

#[test]
fn user_entries_replace_unbind_and_add_per_context() {
    let text = r#"
[composer]
keys = [
  { on = "ctrl-u", run = "none" },
  { on = "ctrl-k", run = "clear_input", desc = "Wipe it" },
  { on = "enter", run = "newline" },
  { on = "ctrl-s", run = "submit" },
]
[global]
keys = [{ on = "ctrl-q", run = "quit" }]
"#;
    let (keymap, errors) = overrides(text);
    assert_eq!(errors, Vec::<String>::new());
    assert_eq!(resolve(&keymap, Context::Composer, "ctrl-u"), None);
    assert_eq!(
        resolve(&keymap, Context::Composer, "ctrl-k"),
        Some(Action::ClearInput)
    );
    assert_eq!(
        resolve(&keymap, Context::Composer, "enter"),
        Some(Action::Newline)
    );
    assert_eq!(
        resolve(&keymap, Context::Composer, "ctrl-s"),
        Some(Action::Submit)
    );
    assert_eq!(
        resolve(&keymap, Context::Transcript, "ctrl-q"),
        Some(Action::Quit)
    );
    // Untouched defaults remain, in other contexts and in the same one.
    assert_eq!(
        resolve(&keymap, Context::Composer, "ctrl-c"),
        Some(Action::Quit)
    );
    assert_eq!(
        resolve(&keymap, Context::Composer, "tab"),
        Some(Action::Queue)
    );
    assert_eq!(
        resolve(&keymap, Context::DiffReview, "enter"),
        Some(Action::Apply)
    );
    assert_eq!(
        keymap.description(Context::Composer, Action::ClearInput),
        "Wipe it"
    );
    // A replaced key keeps its place in the help.
    let labels: Vec<String> = keymap
        .bindings(Context::Composer)
        .into_iter()
        .map(|(label, _)| label)
        .collect();
    assert_eq!(labels.first().map(String::as_str), Some("Enter"));
    assert!(!labels.contains(&"Ctrl-U".to_string()));
}

#[test]
fn each_error_names_file_line_key_and_what_is_valid() {
    let text = r#"[composer]
keys = [
  { on = "ctrl-k", run = "clear_inptu" },
  { on = "hyper-x", run = "submit" },
  { on = "ctrl-s", run = "submit" },
  { on = "ctrl-s", run = "queue" },
  { on = "ctrl-y", run = "submit", colour = "red" },
  { run = "submit" },
]
[sidebar]
keys = []
"#;
    let (keymap, errors) = overrides(text);
    assert_eq!(errors.len(), 6, "{errors:#?}");
    let expected_starts = [
        "/c/keymap.toml:3: composer.ctrl-k: unknown action `clear_inptu` (did you mean `clear_input`?",
        "/c/keymap.toml:4: composer.hyper-x: unknown key `hyper-x`",
        "/c/keymap.toml:6: composer.ctrl-s: already bound on line 5",
        "/c/keymap.toml:7: composer: unknown field `colour` (valid: on, run, desc)",
        "/c/keymap.toml:8: composer: `on` must be a key or a list of keys",
        "/c/keymap.toml:10: [sidebar]: unknown context (valid: global, composer, completion, transcript, diff_review, approval, command_input)",
    ];
    for (error, start) in errors.iter().zip(expected_starts) {
        assert!(
            error.starts_with(start),
            "{error}\n  should start with\n{start}"
        );
    }
    // The good entries still apply; the bad ones cost nothing.
    assert_eq!(
        resolve(&keymap, Context::Composer, "ctrl-s"),
        Some(Action::Submit)
    );
    assert_eq!(resolve(&keymap, Context::Composer, "ctrl-k"), None);
    assert_eq!(
        resolve(&keymap, Context::Composer, "ctrl-u"),
        Some(Action::ClearInput)
    );
}

#[test]
fn a_key_in_a_multiline_list_is_reported_on_its_own_line() {
    let text = "[transcript]\nkeys = [\n  { on = [\n    \"x\",\n    \"ctrl-\",\n  ], run = \"scroll_up\" },\n]\n";
    let (keymap, errors) = overrides(text);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with("/c/keymap.toml:5: transcript.ctrl-: `ctrl-` names no key"),
        "{}",
        errors[0]
    );
    assert_eq!(
        resolve(&keymap, Context::Transcript, "x"),
        Some(Action::ScrollUp)
    );
}

#[test]
fn broken_toml_keeps_every_default() {
    let (keymap, errors) =
        overrides("[composer]\nkeys = [ { on = \"enter\" run = \"newline\" } ]\n");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with("/c/keymap.toml:2: not valid TOML"),
        "{}",
        errors[0]
    );
    assert_eq!(keymap, Keymap::defaults());
}

#[test]
fn wrong_shapes_are_explained() {
    let text =
        "global = 3\n[composer]\nbindings = []\n[approval]\nkeys = [{ on = \"x\", run = 5 }]\n";
    let (_, errors) = overrides(text);
    let expected = [
        "/c/keymap.toml:1: global: expected a `[global]` table",
        "/c/keymap.toml:3: composer.bindings: unknown field; expected a `[composer]` table",
        "/c/keymap.toml:5: approval.x: `run` must be an action name in quotes",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (error, start) in errors.iter().zip(expected) {
        assert!(
            error.starts_with(start),
            "{error}\n  should start with\n{start}"
        );
    }
}

#[test]
fn a_missing_user_file_is_no_error_and_an_unreadable_one_is() {
    let dir = tempfile::tempdir().unwrap();
    let (keymap, errors) = Keymap::load(&dir.path().join("keymap.toml"));
    assert_eq!(errors, Vec::new());
    assert_eq!(keymap, Keymap::defaults());

    // A directory cannot be read as a file.
    let (keymap, errors) = Keymap::load(dir.path());
    assert_eq!(errors.len(), 1);
    assert!(matches!(
        errors[0].problem,
        KeymapProblem::Unreadable { .. }
    ));
    assert_eq!(keymap, Keymap::defaults());

    let file = dir.path().join("mine.toml");
    std::fs::write(
        &file,
        "[approval]\nkeys = [{ on = \"A\", run = \"allow_for_session\" }]\n",
    )
    .unwrap();
    let (keymap, errors) = Keymap::load(&file);
    assert_eq!(errors, Vec::new());
    let shifted = KeyEvent::new(KeyCode::Char('A'), KeyModifiers::SHIFT);
    assert_eq!(
        keymap.action(&[Context::Approval], &shifted),
        Some(Action::AllowForSession)
    );
}

#[test]
fn bindings_list_labels_in_file_order() {
    let keymap = Keymap::defaults();
    let global = keymap.bindings(Context::Global);
    assert_eq!(
        global.first().cloned(),
        Some(("Ctrl-C".to_string(), Action::Quit))
    );
    assert!(global.contains(&("Shift-Tab".to_string(), Action::CycleMode)));
    assert!(
        keymap
            .bindings(Context::Composer)
            .contains(&("↑".to_string(), Action::HistoryPrev))
    );
    assert_eq!(
        keymap.description(Context::Approval, Action::Apply),
        "Run the command once"
    );
    assert_eq!(
        keymap.description(Context::DiffReview, Action::Apply),
        Action::Apply.describe()
    );
}

#[test]
fn the_user_file_sits_beside_the_config_file() {
    let paths = Paths {
        config_file: PathBuf::from("/home/u/.config/duet/config.toml"),
        state_dir: PathBuf::from("/home/u/.local/state/duet"),
    };
    assert_eq!(
        Keymap::user_file(&paths),
        PathBuf::from("/home/u/.config/duet/keymap.toml")
    );
}

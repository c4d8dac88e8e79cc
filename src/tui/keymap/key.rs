//! One key as `keymap.toml` writes it: parsing the text, matching a terminal key
//! event, and the label the help shows.
//!
//! Invariant: a parsed key and an event of the same key normalize to equal [`Key`]s
//! (Shift is folded into the character it produces, Shift+Tab is always `BackTab`,
//! Ctrl+letter is always lowercase), so lookups are plain equality.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// The modifiers a binding can name; the others (Super, Hyper, Meta) are ignored.
const BINDABLE: KeyModifiers = KeyModifiers::CONTROL
    .union(KeyModifiers::ALT)
    .union(KeyModifiers::SHIFT);

const MODIFIER_PREFIXES: [(&str, KeyModifiers); 3] = [
    ("ctrl-", KeyModifiers::CONTROL),
    ("alt-", KeyModifiers::ALT),
    ("shift-", KeyModifiers::SHIFT),
];

const NAMED_KEYS: &[(&str, KeyCode)] = &[
    ("enter", KeyCode::Enter),
    ("return", KeyCode::Enter),
    ("esc", KeyCode::Esc),
    ("escape", KeyCode::Esc),
    ("tab", KeyCode::Tab),
    ("backtab", KeyCode::BackTab),
    ("space", KeyCode::Char(' ')),
    ("backspace", KeyCode::Backspace),
    ("delete", KeyCode::Delete),
    ("del", KeyCode::Delete),
    ("insert", KeyCode::Insert),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("pgup", KeyCode::PageUp),
    ("pageup", KeyCode::PageUp),
    ("pgdn", KeyCode::PageDown),
    ("pagedown", KeyCode::PageDown),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
];

const KEY_SYNTAX_HINT: &str = "use a named key (enter, esc, tab, backtab, space, backspace, \
     delete, insert, home, end, pgup, pgdn, up, down, left, right, f1…f12) or a single \
     character, with optional ctrl-, alt-, shift- prefixes";

/// A key with its modifiers, normalized so that equal keys compare equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Key {
    code: KeyCode,
    modifiers: KeyModifiers,
}

impl Key {
    /// Parses `ctrl-c`, `shift-tab`, `f1`, `?`, … (see the header of `keymap.toml`).
    pub(super) fn parse(text: &str) -> Result<Key, String> {
        let mut rest = text;
        let mut modifiers = KeyModifiers::NONE;
        while let Some((stripped, modifier)) = strip_modifier(rest) {
            modifiers |= modifier;
            rest = stripped;
        }
        let code = parse_code(rest).ok_or_else(|| {
            let dangling = MODIFIER_PREFIXES
                .iter()
                .any(|(prefix, _)| rest.eq_ignore_ascii_case(prefix));
            if rest.is_empty() || dangling {
                format!("`{text}` names no key; {KEY_SYNTAX_HINT}")
            } else {
                format!("unknown key `{rest}`; {KEY_SYNTAX_HINT}")
            }
        })?;
        Ok(Key::normalized(code, modifiers))
    }

    /// The key of a press (or auto-repeat); releases bind nothing.
    pub(super) fn from_event(event: &KeyEvent) -> Option<Key> {
        if event.kind == KeyEventKind::Release {
            return None;
        }
        Some(Key::normalized(event.code, event.modifiers))
    }

    fn normalized(code: KeyCode, modifiers: KeyModifiers) -> Key {
        let mut modifiers = modifiers & BINDABLE;
        let code = match code {
            KeyCode::Tab if modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
            KeyCode::Char(c) if modifiers.contains(KeyModifiers::SHIFT) => {
                KeyCode::Char(c.to_ascii_uppercase())
            }
            other => other,
        };
        let code = match code {
            // Terminals cannot report Ctrl+Shift+letter apart from Ctrl+letter.
            KeyCode::Char(c) if modifiers.contains(KeyModifiers::CONTROL) => {
                KeyCode::Char(c.to_ascii_lowercase())
            }
            other => other,
        };
        if matches!(code, KeyCode::Char(_) | KeyCode::BackTab) {
            // The character (or BackTab) already says Shift was held.
            modifiers.remove(KeyModifiers::SHIFT);
        }
        Key { code, modifiers }
    }

    /// What the help shows: `Ctrl-C`, `Shift-Tab`, `↑`, `?`.
    pub(super) fn label(&self) -> String {
        let mut label = String::new();
        for (name, modifier) in [
            ("Ctrl-", KeyModifiers::CONTROL),
            ("Alt-", KeyModifiers::ALT),
            ("Shift-", KeyModifiers::SHIFT),
        ] {
            if self.modifiers.contains(modifier) {
                label.push_str(name);
            }
        }
        match self.code {
            KeyCode::Char(' ') => label.push_str("Space"),
            KeyCode::Char(c) if self.modifiers.contains(KeyModifiers::CONTROL) => {
                label.push(c.to_ascii_uppercase());
            }
            KeyCode::Char(c) => label.push(c),
            KeyCode::F(n) => label.push_str(&format!("F{n}")),
            code => label.push_str(code_label(code)),
        }
        label
    }
}

fn strip_modifier(text: &str) -> Option<(&str, KeyModifiers)> {
    MODIFIER_PREFIXES.iter().find_map(|(prefix, modifier)| {
        let head = text.get(..prefix.len())?;
        let rest = &text[prefix.len()..];
        // `ctrl--` is Ctrl with the `-` key; a bare `ctrl-` is no key at all.
        (head.eq_ignore_ascii_case(prefix) && !rest.is_empty()).then_some((rest, *modifier))
    })
}

fn parse_code(name: &str) -> Option<KeyCode> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Some(KeyCode::Char(c));
    }
    let lower = name.to_ascii_lowercase();
    if let Some((_, code)) = NAMED_KEYS.iter().find(|(known, _)| *known == lower) {
        return Some(*code);
    }
    let number: u8 = lower.strip_prefix('f')?.parse().ok()?;
    (1..=24).contains(&number).then_some(KeyCode::F(number))
}

fn code_label(code: KeyCode) -> &'static str {
    match code {
        KeyCode::Enter => "Enter",
        KeyCode::Esc => "Esc",
        KeyCode::Tab => "Tab",
        KeyCode::BackTab => "Shift-Tab",
        KeyCode::Backspace => "Backspace",
        KeyCode::Delete => "Del",
        KeyCode::Insert => "Ins",
        KeyCode::Home => "Home",
        KeyCode::End => "End",
        KeyCode::PageUp => "PgUp",
        KeyCode::PageDown => "PgDn",
        KeyCode::Up => "↑",
        KeyCode::Down => "↓",
        KeyCode::Left => "←",
        KeyCode::Right => "→",
        // Only codes `parse_code` produces reach here; the rest have no binding syntax.
        _ => "?",
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn parsed_keys_match_the_events_terminals_send() {
        let cases = [
            ("ctrl-c", press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            ("CTRL-C", press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            ("shift-tab", press(KeyCode::BackTab, KeyModifiers::SHIFT)),
            ("backtab", press(KeyCode::Tab, KeyModifiers::SHIFT)),
            ("?", press(KeyCode::Char('?'), KeyModifiers::SHIFT)),
            ("A", press(KeyCode::Char('A'), KeyModifiers::SHIFT)),
            ("shift-a", press(KeyCode::Char('A'), KeyModifiers::SHIFT)),
            ("G", press(KeyCode::Char('G'), KeyModifiers::NONE)),
            ("space", press(KeyCode::Char(' '), KeyModifiers::NONE)),
            ("shift-enter", press(KeyCode::Enter, KeyModifiers::SHIFT)),
            ("alt-enter", press(KeyCode::Enter, KeyModifiers::ALT)),
            ("alt-left", press(KeyCode::Left, KeyModifiers::ALT)),
            (
                "ctrl-alt-left",
                press(KeyCode::Left, KeyModifiers::CONTROL | KeyModifiers::ALT),
            ),
            ("f1", press(KeyCode::F(1), KeyModifiers::NONE)),
            ("pgdn", press(KeyCode::PageDown, KeyModifiers::NONE)),
            ("ctrl--", press(KeyCode::Char('-'), KeyModifiers::CONTROL)),
            ("-", press(KeyCode::Char('-'), KeyModifiers::NONE)),
            ("ctrl-home", press(KeyCode::Home, KeyModifiers::CONTROL)),
        ];
        for (text, event) in cases {
            assert_eq!(
                Key::parse(text),
                Ok(Key::from_event(&event).unwrap()),
                "{text}"
            );
        }
    }

    #[test]
    fn shift_matters_for_keys_without_a_shifted_character() {
        assert_ne!(Key::parse("enter"), Key::parse("shift-enter"));
        assert_ne!(Key::parse("g"), Key::parse("G"));
        assert_ne!(Key::parse("up"), Key::parse("shift-up"));
    }

    #[test]
    fn releases_bind_nothing() {
        let mut event = press(KeyCode::Enter, KeyModifiers::NONE);
        event.kind = KeyEventKind::Release;
        assert_eq!(Key::from_event(&event), None);
    }

    #[test]
    fn bad_keys_explain_the_syntax() {
        for text in ["", "ctrl-", "hyper-x", "f0", "f25", "enterr"] {
            let error = Key::parse(text).unwrap_err();
            assert!(error.contains("single character"), "{text}: {error}");
        }
    }

    #[test]
    fn labels_are_short_and_familiar() {
        let labels: Vec<String> = [
            "ctrl-c",
            "shift-tab",
            "up",
            "alt-left",
            "?",
            "G",
            "space",
            "f1",
            "shift-enter",
            "pgup",
            "alt-b",
        ]
        .into_iter()
        .map(|text| Key::parse(text).unwrap().label())
        .collect();
        assert_eq!(
            labels,
            [
                "Ctrl-C",
                "Shift-Tab",
                "↑",
                "Alt-←",
                "?",
                "G",
                "Space",
                "F1",
                "Shift-Enter",
                "PgUp",
                "Alt-b"
            ]
        );
    }
}

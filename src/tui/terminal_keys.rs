//! Keys pressed while the user types into a running command, as the bytes a terminal
//! (xterm, in its default modes) sends for them.
//!
//! Owns: the encoding. Does not own: which keys go to a command rather than to duet
//! (the app and the keymap's `command_input` context).
//! Invariant: a key with no terminal encoding yields nothing, never a guess.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The bytes a terminal sends for `key`; `None` for keys it sends nothing for.
pub fn key_bytes(key: &KeyEvent) -> Option<Vec<u8>> {
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let mut bytes = match key.code {
        KeyCode::Char(c) if ctrl => vec![control_byte(c)?],
        KeyCode::Char(c) => c.to_string().into_bytes(),
        KeyCode::Enter => b"\r".to_vec(),
        KeyCode::Tab => b"\t".to_vec(),
        KeyCode::BackTab => b"\x1b[Z".to_vec(),
        KeyCode::Backspace => b"\x7f".to_vec(),
        KeyCode::Esc => b"\x1b".to_vec(),
        KeyCode::Up => b"\x1b[A".to_vec(),
        KeyCode::Down => b"\x1b[B".to_vec(),
        KeyCode::Right => b"\x1b[C".to_vec(),
        KeyCode::Left => b"\x1b[D".to_vec(),
        KeyCode::Home => b"\x1b[H".to_vec(),
        KeyCode::End => b"\x1b[F".to_vec(),
        KeyCode::Insert => b"\x1b[2~".to_vec(),
        KeyCode::Delete => b"\x1b[3~".to_vec(),
        KeyCode::PageUp => b"\x1b[5~".to_vec(),
        KeyCode::PageDown => b"\x1b[6~".to_vec(),
        KeyCode::F(n) => function_key(n)?.to_vec(),
        _ => return None,
    };
    if alt {
        // Meta sends ESC first, as xterm does by default.
        bytes.insert(0, 0x1b);
    }
    Some(bytes)
}

/// Ctrl with a character: the character's low five bits for `@`…`_` and letters
/// (Ctrl-C is 3), the conventional bytes for space, `?` and digits that have one.
fn control_byte(c: char) -> Option<u8> {
    match c {
        ' ' | '@' | '2' => Some(0),
        '?' | '8' => Some(0x7f),
        '3' => Some(0x1b),
        '4' => Some(0x1c),
        '5' => Some(0x1d),
        '6' => Some(0x1e),
        '7' | '/' => Some(0x1f),
        'a'..='z' => Some(c as u8 & 0x1f),
        'A'..='Z' | '[' | '\\' | ']' | '^' | '_' => Some(c as u8 & 0x1f),
        _ => None,
    }
}

fn function_key(n: u8) -> Option<&'static [u8]> {
    Some(match n {
        1 => b"\x1bOP",
        2 => b"\x1bOQ",
        3 => b"\x1bOR",
        4 => b"\x1bOS",
        5 => b"\x1b[15~",
        6 => b"\x1b[17~",
        7 => b"\x1b[18~",
        8 => b"\x1b[19~",
        9 => b"\x1b[20~",
        10 => b"\x1b[21~",
        11 => b"\x1b[23~",
        12 => b"\x1b[24~",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn keys_encode_as_a_terminal_sends_them() {
        let plain = KeyModifiers::NONE;
        let cases: &[(KeyEvent, &[u8])] = &[
            (key(KeyCode::Char('y'), plain), b"y"),
            (key(KeyCode::Char('Y'), KeyModifiers::SHIFT), b"Y"),
            (key(KeyCode::Char('é'), plain), "é".as_bytes()),
            (key(KeyCode::Enter, plain), b"\r"),
            (key(KeyCode::Backspace, plain), b"\x7f"),
            (key(KeyCode::Char('c'), KeyModifiers::CONTROL), b"\x03"),
            (key(KeyCode::Char('d'), KeyModifiers::CONTROL), b"\x04"),
            (key(KeyCode::Char(' '), KeyModifiers::CONTROL), b"\x00"),
            (key(KeyCode::Up, plain), b"\x1b[A"),
            (key(KeyCode::Char('b'), KeyModifiers::ALT), b"\x1bb"),
            (key(KeyCode::F(5), plain), b"\x1b[15~"),
        ];
        for (event, bytes) in cases {
            assert_eq!(key_bytes(event).as_deref(), Some(*bytes), "{event:?}");
        }
    }

    #[test]
    fn keys_without_an_encoding_send_nothing() {
        assert_eq!(key_bytes(&key(KeyCode::F(20), KeyModifiers::NONE)), None);
        assert_eq!(
            key_bytes(&key(KeyCode::Char('é'), KeyModifiers::CONTROL)),
            None
        );
        assert_eq!(key_bytes(&key(KeyCode::CapsLock, KeyModifiers::NONE)), None);
    }
}

//! Calling the user back: a turn ended, or an approval waits, while they were in another
//! window.
//!
//! Owns: how this terminal is rung (a desktop notification by the escape code its
//! emulator understands, else the bell) and the bytes written. Does not own: deciding
//! when to ring (the app, from focus events and `[ui] notify`).
//! Invariant: the message is one short line with every control character removed, so
//! nothing it holds (a model's text) can end the escape code early or act on the
//! terminal; a terminal that is not known to show notifications only gets BEL.

/// How the terminal duet runs in shows a notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bell {
    /// `OSC 9 ; text`: iTerm2, WezTerm, Windows Terminal.
    Osc9,
    /// `OSC 99 ;; text`: kitty.
    Osc99,
    /// `OSC 777 ; notify ; title ; text`: Ghostty, foot, urxvt, VTE terminals.
    Osc777,
    /// BEL: everywhere else, and inside tmux or screen (which keep escape codes to
    /// themselves but pass the bell on and mark the window).
    Bel,
}

/// The longest message shown, in characters.
const MAX_CHARS: usize = 120;

impl Bell {
    /// The kind for the terminal the environment describes.
    pub fn for_terminal(env: &dyn Fn(&str) -> Option<String>) -> Bell {
        let var = |name: &str| env(name).unwrap_or_default();
        let term = var("TERM");
        if env("TMUX").is_some() || term.starts_with("screen") || term.starts_with("tmux") {
            return Bell::Bel;
        }
        if env("KITTY_WINDOW_ID").is_some() || term == "xterm-kitty" {
            return Bell::Osc99;
        }
        match var("TERM_PROGRAM").as_str() {
            "iTerm.app" | "WezTerm" => return Bell::Osc9,
            "ghostty" => return Bell::Osc777,
            _ => {}
        }
        if env("WT_SESSION").is_some() {
            return Bell::Osc9;
        }
        if term.starts_with("foot") || term.starts_with("rxvt") || env("VTE_VERSION").is_some() {
            return Bell::Osc777;
        }
        Bell::Bel
    }

    /// The bytes that show `message`.
    pub fn sequence(self, message: &str) -> String {
        let text = clean(message);
        match self {
            Bell::Osc9 => format!("\x1b]9;{text}\x07"),
            Bell::Osc99 => format!("\x1b]99;;{text}\x1b\\"),
            Bell::Osc777 => format!("\x1b]777;notify;duet;{text}\x07"),
            Bell::Bel => "\x07".to_string(),
        }
    }
}

/// One line without control characters (or `;`, which separates OSC fields), cut to
/// [`MAX_CHARS`].
fn clean(message: &str) -> String {
    let text: String = message
        .chars()
        .map(|c| if c.is_control() || c == ';' { ' ' } else { c })
        .take(MAX_CHARS)
        .collect();
    // Windows Terminal reads `9;<digit>;` as a progress report: never start with one.
    format!("duet: {}", text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        }
    }

    #[test]
    fn each_terminal_gets_the_code_it_shows() {
        let cases: [(&[(&str, &str)], Bell); 8] = [
            (&[("TERM_PROGRAM", "iTerm.app")], Bell::Osc9),
            (&[("TERM_PROGRAM", "WezTerm")], Bell::Osc9),
            (&[("WT_SESSION", "1")], Bell::Osc9),
            (&[("TERM", "xterm-kitty")], Bell::Osc99),
            (&[("TERM_PROGRAM", "ghostty")], Bell::Osc777),
            (&[("TERM", "foot")], Bell::Osc777),
            (
                &[
                    ("TERM", "xterm-256color"),
                    ("TMUX", "/tmp/t,1,0"),
                    ("TERM_PROGRAM", "iTerm.app"),
                ],
                Bell::Bel,
            ),
            (&[("TERM", "xterm-256color")], Bell::Bel),
        ];
        for (vars, want) in cases {
            assert_eq!(Bell::for_terminal(&env(vars)), want, "{vars:?}");
        }
    }

    #[test]
    fn the_message_cannot_end_the_code_or_act_on_the_terminal() {
        let hostile = "done\x07\x1b]0;owned\x1b\\; 9;1;more\nlines";
        for bell in [Bell::Osc9, Bell::Osc99, Bell::Osc777] {
            let bytes = bell.sequence(hostile);
            let inner = &bytes[2..bytes.len() - 2];
            assert!(!inner.contains(['\x07', '\x1b', '\n']), "{bytes:?}");
        }
        assert_eq!(
            Bell::Osc9.sequence("turn finished"),
            "\x1b]9;duet: turn finished\x07"
        );
        assert_eq!(Bell::Bel.sequence("anything"), "\x07");
    }
}

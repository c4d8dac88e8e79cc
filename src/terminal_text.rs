//! Text from untrusted sources (the model, tools, the repository) made safe to put on
//! a terminal, and made honest to approve.
//!
//! Owns: recognising terminal control in text — C0 controls, DEL, C1 controls and
//! whole escape sequences (CSI, OSC, DCS, SOS, PM, APC and two-character escapes, in
//! their 7-bit and 8-bit forms) — and replacing it ([`sanitize`], [`Sanitizer`] for
//! text that arrives in pieces); and, for approval views, recognising characters a
//! reader cannot see (bidi controls, zero-width and other format characters, tag
//! characters, unusual spaces) and non-ASCII look-alikes of ASCII ([`hidden`],
//! [`lookalike`], [`Findings`]).
//! Does not own: emulating a terminal (`shell::screen` renders command output, cursor
//! movement included), styling, or wrapping.
//! Invariant: what [`sanitize`] and [`Sanitizer`] return holds no C0 control but `\n`
//! and `\t`, no DEL and no C1 control, whatever the input — so no escape sequence from
//! it can reach a terminal — and cutting the input into pieces anywhere never changes
//! the result.
//!
//! What replaces what: a whole escape sequence becomes one [`ESCAPE_PLACEHOLDER`] (`␛`)
//! and its payload is dropped (an OSC 52 clipboard write, an OSC 8 link, a title, a
//! cursor movement), except colour (SGR), which is plainly noise and vanishes; a lone
//! control character becomes its Unicode control picture (`␇`, `␈`, `␍`), a C1 control
//! its code point (`⟨U+0085⟩`); `\r\n` is a line break. A string sequence (OSC, DCS,
//! ...) left open ends at the next line break, so an unterminated one costs at most the
//! rest of its line.

use std::borrow::Cow;
use std::collections::BTreeSet;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// What a removed escape sequence is shown as.
pub const ESCAPE_PLACEHOLDER: char = '␛';

/// Where the escape-sequence parser is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and intermediate bytes (`ESC ( B`): a final byte ends it.
    EscapeIntermediate,
    /// Inside a CSI; `colour_only` while it can still be an SGR (digits and `;`).
    Csi { colour_only: bool },
    /// Inside OSC, DCS, SOS, PM or APC, a string ended by BEL or ST (`ESC \`).
    Text { after_escape: bool },
}

/// What a character of terminal text turned out to be, once its context is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    /// A character to show.
    Char(char),
    /// A control character outside any sequence (`\n`, `\t`, `\r`, BEL, NEL, ...).
    Control(char),
    /// A whole escape sequence, or the start of one that was cut off; `colour` when it
    /// only sets colours or text attributes (SGR).
    Sequence { colour: bool },
}

/// Splits terminal text into [`Token`]s a character at a time, so a sequence cut
/// between two pieces of text is still recognised whole.
#[derive(Clone, Debug, Default)]
pub struct Parser {
    state: State,
}

const SEQUENCE: Token = Token::Sequence { colour: false };

impl Parser {
    /// Takes one character; hands `emit` whatever it completes (nothing while a
    /// sequence is still open, two tokens when a character ends one and is also its
    /// own token).
    pub fn feed(&mut self, c: char, emit: &mut impl FnMut(Token)) {
        match self.state {
            State::Ground => self.ground(c, emit),
            State::Escape => match c {
                '[' => self.state = State::Csi { colour_only: true },
                ']' | 'P' | 'X' | '^' | '_' => {
                    self.state = State::Text {
                        after_escape: false,
                    }
                }
                ' '..='/' => self.state = State::EscapeIntermediate,
                '0'..='~' => self.end(emit),
                // ESC ESC: the first one was alone; the second starts again.
                '\x1b' => emit(SEQUENCE),
                _ => {
                    self.end(emit);
                    self.ground(c, emit);
                }
            },
            State::EscapeIntermediate => match c {
                ' '..='/' => {}
                '0'..='~' => self.end(emit),
                _ => {
                    self.end(emit);
                    self.ground(c, emit);
                }
            },
            State::Csi { colour_only } => match c {
                '0'..='9' | ';' | ':' => {}
                '<'..='?' | ' '..='/' => self.state = State::Csi { colour_only: false },
                '@'..='~' => {
                    self.state = State::Ground;
                    emit(Token::Sequence {
                        colour: colour_only && c == 'm',
                    });
                }
                // CAN and SUB cancel a sequence and are consumed with it.
                '\x18' | '\x1a' => self.end(emit),
                _ => {
                    self.end(emit);
                    self.ground(c, emit);
                }
            },
            State::Text { after_escape } => match c {
                '\x07' | '\u{9c}' | '\x18' | '\x1a' => self.end(emit),
                '\\' if after_escape => self.end(emit),
                '\x1b' => self.state = State::Text { after_escape: true },
                // Not a terminal: an open string does not swallow later lines.
                '\n' => {
                    self.end(emit);
                    emit(Token::Control('\n'));
                }
                // ESC and anything but `\` ends the string and starts a new sequence.
                _ if after_escape => {
                    self.end(emit);
                    self.state = State::Escape;
                    self.feed(c, emit);
                }
                _ => {
                    self.state = State::Text {
                        after_escape: false,
                    }
                }
            },
        }
    }

    /// The text is over: a sequence still open is reported as cut off.
    pub fn finish(&mut self, emit: &mut impl FnMut(Token)) {
        if self.state != State::Ground {
            self.end(emit);
        }
    }

    /// Outside any sequence.
    pub fn is_idle(&self) -> bool {
        self.state == State::Ground
    }

    fn end(&mut self, emit: &mut impl FnMut(Token)) {
        self.state = State::Ground;
        emit(SEQUENCE);
    }

    fn ground(&mut self, c: char, emit: &mut impl FnMut(Token)) {
        match c {
            '\x1b' => self.state = State::Escape,
            // CSI, OSC, DCS, SOS, PM and APC as single C1 characters.
            '\u{9b}' => self.state = State::Csi { colour_only: true },
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => {
                self.state = State::Text {
                    after_escape: false,
                }
            }
            c if c.is_control() => emit(Token::Control(c)),
            c => emit(Token::Char(c)),
        }
    }
}

/// Cleans text that arrives in pieces (a model's deltas, a tool's output): state
/// carries over from one piece to the next, so an ESC at the end of one and `]52;…` at
/// the start of the next are still one sequence.
#[derive(Clone, Debug, Default)]
pub struct Sanitizer {
    parser: Parser,
    /// A `\r` was the last thing seen: a line break if `\n` follows, else shown.
    carriage_return: bool,
}

impl Sanitizer {
    /// The next piece, cleaned; borrowed unchanged when it has nothing to clean.
    pub fn push<'a>(&mut self, text: &'a str) -> Cow<'a, str> {
        if self.parser.is_idle() && !self.carriage_return && !needs_cleaning(text) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len() + 8);
        let Self {
            parser,
            carriage_return,
        } = self;
        let mut emit = |token| apply(token, &mut out, carriage_return);
        for c in text.chars() {
            parser.feed(c, &mut emit);
        }
        Cow::Owned(out)
    }

    /// The text is over: what is still held back (a cut-off sequence, a last `\r`).
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        let Self {
            parser,
            carriage_return,
        } = self;
        parser.finish(&mut |token| apply(token, &mut out, carriage_return));
        if std::mem::take(carriage_return) {
            out.push(control_picture('\r'));
        }
        out
    }
}

/// `text`, whole, cleaned for a terminal (see the module's doc); borrowed unchanged
/// when it has nothing to clean, which is a scan of its bytes.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    let mut sanitizer = Sanitizer::default();
    let cleaned = sanitizer.push(text);
    let rest = sanitizer.finish();
    if rest.is_empty() {
        cleaned
    } else {
        Cow::Owned(cleaned.into_owned() + &rest)
    }
}

/// Whether `text` holds a control character other than `\n` and `\t`.
fn needs_cleaning(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(at, byte)| match byte {
        b'\n' | b'\t' => false,
        0x00..=0x1f | 0x7f => true,
        // C1 controls are U+0080..U+009F: 0xC2 0x80..0x9F in UTF-8.
        0xc2 => matches!(bytes.get(at + 1), Some(0x80..=0x9f)),
        _ => false,
    })
}

/// Appends what `token` is shown as; `carriage_return` holds a `\r` until the next
/// token says whether it was half of a line break.
fn apply(token: Token, out: &mut String, carriage_return: &mut bool) {
    if std::mem::take(carriage_return) && token != Token::Control('\n') {
        out.push(control_picture('\r'));
    }
    match token {
        Token::Char(c) | Token::Control(c @ ('\n' | '\t')) => out.push(c),
        Token::Control('\r') => *carriage_return = true,
        Token::Control(c) if u32::from(c) < 0x80 => out.push(control_picture(c)),
        Token::Control(c) => out.push_str(&code_point(c)),
        Token::Sequence { colour: true } => {}
        Token::Sequence { colour: false } => out.push(ESCAPE_PLACEHOLDER),
    }
}

/// The Unicode control picture of a C0 control or DEL (`␛` for ESC, `␡` for DEL).
fn control_picture(c: char) -> char {
    match u32::from(c) {
        code @ 0..=0x1f => char::from_u32(0x2400 + code).unwrap_or(char::REPLACEMENT_CHARACTER),
        _ => '␡',
    }
}

/// `⟨U+202E⟩`: how a character that cannot be seen is written out.
pub fn code_point(c: char) -> String {
    format!("⟨U+{:04X}⟩", u32::from(c))
}

/// Why an approval view writes a character out as its code point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Hidden {
    /// Changes the direction text is laid out in: what is shown is not the order it
    /// runs in (bidi embeddings, overrides, isolates and marks).
    Bidi,
    /// Takes no room on screen: zero-width and other format characters, tag
    /// characters, variation selectors, fillers.
    Invisible,
    /// A control character (C0 other than line break and tab, DEL, C1).
    Control,
    /// A space that is not the ASCII space (no-break, ideographic, line separator...).
    Space,
}

/// Why `c` cannot be read as what it is on a terminal, if it cannot. `\n` and `\t`
/// are not hidden: views show them as line breaks and indentation.
pub fn hidden(c: char) -> Option<Hidden> {
    if c.is_ascii() {
        return match c {
            '\n' | '\t' => None,
            c if c.is_ascii_control() => Some(Hidden::Control),
            _ => None,
        };
    }
    match c {
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
            return Some(Hidden::Bidi);
        }
        // Default-ignorable characters that are not format characters: shown as
        // nothing by most terminals.
        '\u{34f}'
        | '\u{115f}'
        | '\u{1160}'
        | '\u{17b4}'
        | '\u{17b5}'
        | '\u{180b}'..='\u{180f}'
        | '\u{3164}'
        | '\u{fe00}'..='\u{fe0f}'
        | '\u{ffa0}'
        | '\u{e0000}'..='\u{e0fff}' => return Some(Hidden::Invisible),
        '\u{2800}' => return Some(Hidden::Space),
        _ => {}
    }
    match get_general_category(c) {
        GeneralCategory::Control => Some(Hidden::Control),
        GeneralCategory::Format => Some(Hidden::Invisible),
        GeneralCategory::SpaceSeparator
        | GeneralCategory::LineSeparator
        | GeneralCategory::ParagraphSeparator => Some(Hidden::Space),
        _ => None,
    }
}

/// Letters and signs of other scripts that are drawn like an ASCII character, with
/// the character they pass for. Compatibility forms (fullwidth, mathematical
/// letters, ligatures) are found by normalization instead.
const LOOKALIKES: &[(char, &str)] = &[
    // Cyrillic.
    ('а', "a"),
    ('е', "e"),
    ('о', "o"),
    ('р', "p"),
    ('с', "c"),
    ('у', "y"),
    ('х', "x"),
    ('ѕ', "s"),
    ('і', "i"),
    ('ј', "j"),
    ('ԁ', "d"),
    ('ԛ', "q"),
    ('ԝ', "w"),
    ('һ', "h"),
    ('ӏ', "l"),
    ('ү', "y"),
    ('А', "A"),
    ('В', "B"),
    ('Е', "E"),
    ('К', "K"),
    ('М', "M"),
    ('Н', "H"),
    ('О', "O"),
    ('Р', "P"),
    ('С', "C"),
    ('Т', "T"),
    ('У', "Y"),
    ('Х', "X"),
    ('Ѕ', "S"),
    ('І', "I"),
    ('Ј', "J"),
    ('Ԛ', "Q"),
    ('Ԝ', "W"),
    ('Ү', "Y"),
    ('Ӏ', "I"),
    // Greek.
    ('α', "a"),
    ('ι', "i"),
    ('κ', "k"),
    ('ν', "v"),
    ('ο', "o"),
    ('ρ', "p"),
    ('υ', "u"),
    ('χ', "x"),
    ('ϲ', "c"),
    ('ϳ', "j"),
    ('Α', "A"),
    ('Β', "B"),
    ('Ε', "E"),
    ('Ζ', "Z"),
    ('Η', "H"),
    ('Ι', "I"),
    ('Κ', "K"),
    ('Μ', "M"),
    ('Ν', "N"),
    ('Ο', "O"),
    ('Ρ', "P"),
    ('Τ', "T"),
    ('Υ', "Y"),
    ('Χ', "X"),
    // Armenian.
    ('օ', "o"),
    ('ս', "u"),
    ('հ', "h"),
    ('ո', "n"),
    ('զ', "q"),
    ('Օ', "O"),
    ('Տ', "S"),
    // Latin letters that drop a dot or a stroke.
    ('ı', "i"),
    ('ȷ', "j"),
    ('ɑ', "a"),
    ('ɡ', "g"),
    ('ɩ', "i"),
    ('ǀ', "l"),
    ('ǃ', "!"),
    // Dashes, slashes, quotes and colons that are not ASCII.
    ('‐', "-"),
    ('‑', "-"),
    ('‒', "-"),
    ('–', "-"),
    ('—', "-"),
    ('―', "-"),
    ('−', "-"),
    ('⁃', "-"),
    ('∕', "/"),
    ('⁄', "/"),
    ('⧸', "/"),
    ('∖', "\\"),
    ('⧵', "\\"),
    ('‘', "'"),
    ('’', "'"),
    ('‚', ","),
    ('ʼ', "'"),
    ('ˈ', "'"),
    ('“', "\""),
    ('”', "\""),
    ('ˋ', "`"),
    ('‹', "<"),
    ('›', ">"),
    ('∶', ":"),
    ('։', ":"),
    ('׃', ":"),
    ('꞉', ":"),
    ('ꓸ', "."),
    ('∗', "*"),
    ('∣', "|"),
];

/// The ASCII text `c` can pass for, when it is not ASCII itself: a letter of another
/// script drawn the same (Cyrillic `а`), or a compatibility form (fullwidth `ｓ`,
/// mathematical `𝐚`, the ligature `ﬁ`).
pub fn lookalike(c: char) -> Option<String> {
    if c.is_ascii() || hidden(c).is_some() {
        return None;
    }
    if let Some((_, ascii)) = LOOKALIKES.iter().find(|(other, _)| *other == c) {
        return Some((*ascii).to_string());
    }
    let normalized: String = std::iter::once(c).nfkc().collect();
    (normalized.chars().all(|n| n.is_ascii_graphic()) && !normalized.is_empty())
        .then_some(normalized)
}

/// What an approval view must warn about in one text (a command, a path, added lines).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// The kinds of hidden characters present.
    pub hidden: BTreeSet<Hidden>,
    /// Each look-alike character once, in order of appearance, with what it passes for.
    pub lookalikes: Vec<(char, String)>,
}

/// Look-alikes named in a warning; more are counted.
const NAMED_LOOKALIKES: usize = 4;

impl Findings {
    pub fn of(text: &str) -> Self {
        let mut findings = Self::default();
        for c in text.chars() {
            if c.is_ascii_graphic() || c == ' ' {
                continue;
            }
            if let Some(kind) = hidden(c) {
                findings.hidden.insert(kind);
            } else if let Some(ascii) = lookalike(c)
                && !findings.lookalikes.iter().any(|(seen, _)| *seen == c)
            {
                findings.lookalikes.push((c, ascii));
            }
        }
        findings
    }

    pub fn is_empty(&self) -> bool {
        self.hidden.is_empty() && self.lookalikes.is_empty()
    }

    /// One line per kind of trouble, naming `what` (`the command`, `the path`).
    pub fn warnings(&self, what: &str) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.hidden.is_empty() {
            let kinds: Vec<&str> = self
                .hidden
                .iter()
                .map(|kind| match kind {
                    Hidden::Bidi => "direction-changing",
                    Hidden::Invisible => "invisible",
                    Hidden::Control => "control",
                    Hidden::Space => "unusual space",
                })
                .collect();
            lines.push(format!(
                "{what} hides characters: {} (shown as ⟨U+…⟩)",
                kinds.join(", ")
            ));
        }
        if !self.lookalikes.is_empty() {
            let named: Vec<String> = self
                .lookalikes
                .iter()
                .take(NAMED_LOOKALIKES)
                .map(|(c, ascii)| format!("{c} {} (not {ascii})", code_point(*c)))
                .collect();
            let more = self.lookalikes.len().saturating_sub(NAMED_LOOKALIKES);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            lines.push(format!(
                "{what} has look-alike characters: {}{more}",
                named.join(", ")
            ));
        }
        lines
    }
}

/// A piece of text as an approval view shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Revealed<'a> {
    Text(&'a str),
    /// A hidden character, written out as its code point.
    Hidden(char),
}

/// `text` split into plain runs and the hidden characters between them, each of which
/// a view writes out with [`code_point`] (styled apart from the text around it).
pub fn reveal(text: &str) -> Vec<Revealed<'_>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (at, c) in text.char_indices() {
        if hidden(c).is_some() {
            if start < at {
                pieces.push(Revealed::Text(&text[start..at]));
            }
            pieces.push(Revealed::Hidden(c));
            start = at + c.len_utf8();
        }
    }
    if start < text.len() {
        pieces.push(Revealed::Text(&text[start..]));
    }
    pieces
}

/// `text` with every hidden character written out as its code point, as plain text.
pub fn reveal_plain(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c).is_some()) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for piece in reveal(text) {
        match piece {
            Revealed::Text(run) => out.push_str(run),
            Revealed::Hidden(c) => out.push_str(&code_point(c)),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;

    use super::*;

    /// `pieces` pushed one after the other, then finished.
    fn streamed(pieces: &[&str]) -> String {
        let mut sanitizer = Sanitizer::default();
        let mut out = String::new();
        for piece in pieces {
            out.push_str(&sanitizer.push(piece));
        }
        out + &sanitizer.finish()
    }

    fn no_controls(text: &str) -> bool {
        text.chars()
            .all(|c| !c.is_control() || c == '\n' || c == '\t')
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "Hello, wörld\n\tindented · 日本語 ⟨x⟩";
        assert!(matches!(sanitize(text), Cow::Borrowed(t) if t == text));
        let mut sanitizer = Sanitizer::default();
        assert!(matches!(sanitizer.push(text), Cow::Borrowed(_)));
    }

    #[test]
    fn every_kind_of_escape_sequence_becomes_one_placeholder() {
        let cases = [
            // OSC 52 (clipboard), with BEL and with ST.
            ("a\x1b]52;c;cm0gLXJmIH4=\x07b", "a␛b"),
            ("a\x1b]52;c;cm0gLXJmIH4=\x1b\\b", "a␛b"),
            // OSC 8 link around text: the text stays, the link goes.
            (
                "\x1b]8;;https://evil.test\x1b\\click\x1b]8;;\x1b\\",
                "␛click␛",
            ),
            // OSC 0 and 2: the window title.
            ("\x1b]0;pwned\x07x", "␛x"),
            ("\x1b]2;pwned\x1b\\x", "␛x"),
            // Cursor up and erase line, to write over an approval line.
            ("ok\x1b[1A\x1b[2Kapproved", "ok␛␛approved"),
            ("\x1b[H\x1b[2J\x1b[?1049h", "␛␛␛"),
            // DCS, SOS, PM, APC.
            ("\x1bPq#0;2;0;0;0\x1b\\x", "␛x"),
            ("\x1bXsos\x1b\\\x1b^pm\x1b\\\x1b_apc\x1b\\x", "␛␛␛x"),
            // Two-character escapes: reset, save cursor, reverse index, charset.
            ("\x1bc\x1b7\x1bM\x1b(Bx", "␛␛␛␛x"),
            // 8-bit forms.
            ("a\u{9b}2Kb", "a␛b"),
            ("a\u{9d}52;c;eA==\u{9c}b", "a␛b"),
            (
                "a\u{90}q\u{9c}\u{98}s\u{9c}\u{9e}p\u{9c}\u{9f}x\u{9c}b",
                "a␛␛␛␛b",
            ),
            // A lone ESC, at the end and before a line break.
            ("end\x1b", "end␛"),
            ("x\x1b\ny", "x␛\ny"),
            ("\x1b\x1b[Ax", "␛␛x"),
        ];
        for (input, shown) in cases {
            assert_eq!(sanitize(input), shown, "{input:?}");
        }
    }

    #[test]
    fn colour_is_dropped_as_noise() {
        assert_eq!(
            sanitize("\x1b[1;31mred\x1b[0m \x1b[38:5:208mx\x1b[m"),
            "red x"
        );
        // A private or intermediate marker is not colour.
        assert_eq!(sanitize("\x1b[?25lx\x1b[>4;1m"), "␛x␛");
    }

    #[test]
    fn lone_controls_are_shown_as_pictures() {
        assert_eq!(
            sanitize("bell\x07 bs\x08 nul\0 del\x7f"),
            "bell␇ bs␈ nul␀ del␡"
        );
        assert_eq!(sanitize("a\r\nb\rc\r"), "a\nb␍c␍");
        assert_eq!(sanitize("keep\ttabs\n"), "keep\ttabs\n");
        assert_eq!(sanitize("nel\u{85}ri\u{8d}"), "nel⟨U+0085⟩ri⟨U+008D⟩");
    }

    #[test]
    fn an_open_string_ends_at_the_line_break() {
        assert_eq!(
            sanitize("\x1b]0;title never ends\nnext line"),
            "␛\nnext line"
        );
        assert_eq!(sanitize("\x1b]0;cut off"), "␛");
        // CAN aborts; ESC and another character ends the string and starts anew.
        assert_eq!(sanitize("\x1b]0;t\x18x"), "␛x");
        assert_eq!(sanitize("\x1b]0;t\x1b[2Kx"), "␛␛x");
        // Controls inside a CSI end it, and still show.
        assert_eq!(sanitize("\x1b[1\x07x"), "␛␇x");
    }

    #[test]
    fn a_sequence_split_across_pieces_is_still_caught() {
        let whole = "say \x1b]52;c;cm0gLXJmIH4=\x07 and \x1b[1A\x1b[2K done\r\n";
        let expected = "say ␛ and ␛␛ done\n";
        assert_eq!(sanitize(whole), expected);
        // ESC at the end of one delta, `]52;…` at the start of the next.
        assert_eq!(
            streamed(&[
                "say \x1b",
                "]52;c;cm0gLXJmIH4=",
                "\x07 and \x1b[",
                "1A\x1b",
                "[2K done\r",
                "\n"
            ]),
            expected
        );
        assert_eq!(streamed(&["a\u{9d}", "52;c;x", "\u{9c}b"]), "a␛b");
        assert_eq!(streamed(&["cut \x1b"]), "cut ␛");
        assert_eq!(streamed(&["cr\r", "x"]), "cr␍x");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever the text and however it is cut, nothing that controls a terminal
        /// comes out, and the pieces give what the whole gives.
        #[test]
        fn no_control_survives_and_cuts_change_nothing(
            text in "([\\x00-\\x1f\\x7f\\u{80}-\\u{9f}\\[\\]\\\\;0-9A-Za-z\\PC])*",
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let whole = sanitize(&text).into_owned();
            prop_assert!(no_controls(&whole), "{:?} -> {:?}", text, whole);
            let mut bounds: Vec<usize> = cuts
                .iter()
                .map(|cut| cut.index(text.len() + 1))
                .filter(|&at| text.is_char_boundary(at))
                .collect();
            bounds.extend([0, text.len()]);
            bounds.sort_unstable();
            bounds.dedup();
            let pieces: Vec<&str> = bounds.windows(2).map(|w| &text[w[0]..w[1]]).collect();
            prop_assert_eq!(streamed(&pieces), whole);
        }
    }

    #[test]
    fn hidden_characters_are_classified() {
        for c in [
            '\u{202e}', '\u{202a}', '\u{2066}', '\u{2069}', '\u{200f}', '\u{61c}',
        ] {
            assert_eq!(hidden(c), Some(Hidden::Bidi), "{}", code_point(c));
        }
        for c in [
            '\u{200b}',
            '\u{200c}',
            '\u{200d}',
            '\u{2060}',
            '\u{2064}',
            '\u{feff}',
            '\u{ad}',
            '\u{e0001}',
            '\u{e0041}',
            '\u{e007f}',
            '\u{fe0f}',
            '\u{3164}',
            '\u{180e}',
        ] {
            assert_eq!(hidden(c), Some(Hidden::Invisible), "{}", code_point(c));
        }
        for c in [
            '\u{a0}', '\u{2003}', '\u{3000}', '\u{2028}', '\u{2029}', '\u{202f}',
        ] {
            assert_eq!(hidden(c), Some(Hidden::Space), "{}", code_point(c));
        }
        for c in ['\x1b', '\r', '\x7f', '\u{85}', '\u{9b}'] {
            assert_eq!(hidden(c), Some(Hidden::Control), "{}", code_point(c));
        }
        for c in ['a', ' ', '\n', '\t', 'é', '日', '🙂', '→'] {
            assert_eq!(hidden(c), None, "{c}");
        }
    }

    #[test]
    fn lookalikes_name_the_ascii_they_pass_for() {
        assert_eq!(lookalike('а').as_deref(), Some("a"), "Cyrillic a");
        assert_eq!(lookalike('ｓ').as_deref(), Some("s"), "fullwidth s");
        assert_eq!(lookalike('𝐚').as_deref(), Some("a"), "mathematical bold a");
        assert_eq!(lookalike('ﬁ').as_deref(), Some("fi"));
        assert_eq!(lookalike('∕').as_deref(), Some("/"));
        assert_eq!(lookalike('−').as_deref(), Some("-"));
        for c in ['a', 'é', 'п', '日', '\u{a0}', '→'] {
            assert_eq!(lookalike(c), None, "{c}");
        }
    }

    #[test]
    fn findings_say_what_is_hidden_and_what_looks_alike() {
        let command = "rm -rf ./\u{202e}txt.sh\u{200b} /tmp/ѕеcret";
        let findings = Findings::of(command);
        assert_eq!(
            findings.hidden,
            BTreeSet::from([Hidden::Bidi, Hidden::Invisible])
        );
        assert_eq!(
            findings.lookalikes,
            [('ѕ', "s".to_string()), ('е', "e".to_string())]
        );
        assert_eq!(
            findings.warnings("the command"),
            [
                "the command hides characters: direction-changing, invisible (shown as ⟨U+…⟩)",
                "the command has look-alike characters: ѕ ⟨U+0455⟩ (not s), е ⟨U+0435⟩ (not e)",
            ]
        );
        assert!(Findings::of("cargo test -- --nocapture 'héllo'").is_empty());
        let many = Findings::of("аеорсух");
        assert!(many.warnings("the path")[0].ends_with("and 3 more"));
    }

    #[test]
    fn reveal_writes_hidden_characters_out() {
        let text = "ab\u{202e}cd\u{200b}";
        assert_eq!(
            reveal(text),
            [
                Revealed::Text("ab"),
                Revealed::Hidden('\u{202e}'),
                Revealed::Text("cd"),
                Revealed::Hidden('\u{200b}'),
            ]
        );
        assert_eq!(reveal_plain(text), "ab⟨U+202E⟩cd⟨U+200B⟩");
        assert_eq!(reveal_plain("\x1b[2K"), "⟨U+001B⟩[2K");
        assert!(matches!(reveal_plain("plain"), Cow::Borrowed("plain")));
    }
}

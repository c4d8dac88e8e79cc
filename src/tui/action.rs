//! Everything a key can do, by name.
//!
//! `keymap.toml` binds keys to these names per [`Context`]; views receive [`Action`]s,
//! never raw key codes (except text typed into an input field), so hints and help are
//! generated from the same table that handles the keys.

/// Where a binding applies. A key is looked up in the focused context first, then in
/// [`Context::Global`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Context {
    Global,
    /// The message input at the bottom.
    Composer,
    /// The scrollback of the conversation.
    Transcript,
    /// Reviewing a proposed edit, hunk by hunk.
    DiffReview,
    /// Approving a shell command.
    Approval,
}

impl Context {
    pub const ALL: [Context; 5] = [
        Context::Global,
        Context::Composer,
        Context::Transcript,
        Context::DiffReview,
        Context::Approval,
    ];

    /// The table name in `keymap.toml`.
    pub fn name(self) -> &'static str {
        match self {
            Context::Global => "global",
            Context::Composer => "composer",
            Context::Transcript => "transcript",
            Context::DiffReview => "diff_review",
            Context::Approval => "approval",
        }
    }

    pub fn from_name(name: &str) -> Option<Context> {
        Context::ALL
            .into_iter()
            .find(|context| context.name() == name)
    }
}

macro_rules! actions {
    ($($variant:ident => $name:literal, $doc:literal;)*) => {
        /// A named command a key can trigger.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Action {
            $(#[doc = $doc] $variant,)*
        }

        impl Action {
            pub const ALL: &'static [Action] = &[$(Action::$variant,)*];

            /// The name `keymap.toml` uses in `run`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Action::$variant => $name,)*
                }
            }

            /// One line for the help overlay.
            pub fn describe(self) -> &'static str {
                match self {
                    $(Action::$variant => $doc,)*
                }
            }
        }
    };
}

actions! {
    Quit => "quit", "Quit (asks first while work is running)";
    Interrupt => "interrupt", "Interrupt the current step: stop the stream and running tools";
    CycleMode => "cycle_mode", "Cycle the approval mode: ask → auto-edit → auto → read-only";
    ToggleHelp => "toggle_help", "Show or hide the key help";
    ScrollUp => "scroll_up", "Scroll the transcript up a line";
    ScrollDown => "scroll_down", "Scroll the transcript down a line";
    PageUp => "page_up", "Scroll the transcript up a page";
    PageDown => "page_down", "Scroll the transcript down a page";
    ScrollTop => "scroll_top", "Jump to the start of the transcript";
    ScrollBottom => "scroll_bottom", "Jump to the end and follow new output";
    ToggleThinking => "toggle_thinking", "Show or hide the model's thinking";
    ToggleCards => "toggle_cards", "Expand or collapse tool cards";
    Submit => "submit", "Send the message (while the agent works: steer it at its next step)";
    Queue => "queue", "Queue the message until the current turn ends";
    Newline => "newline", "Insert a line break";
    HistoryPrev => "history_prev", "Previous message from history (or move up a line)";
    HistoryNext => "history_next", "Next message from history (or move down a line)";
    CursorLeft => "cursor_left", "Move the cursor left";
    CursorRight => "cursor_right", "Move the cursor right";
    WordLeft => "word_left", "Move the cursor a word left";
    WordRight => "word_right", "Move the cursor a word right";
    LineStart => "line_start", "Move to the start of the line";
    LineEnd => "line_end", "Move to the end of the line";
    DeleteBack => "delete_back", "Delete the character before the cursor";
    DeleteForward => "delete_forward", "Delete the character under the cursor";
    DeleteWordBack => "delete_word_back", "Delete the word before the cursor";
    ClearInput => "clear_input", "Clear the input";
    WithdrawPending => "withdraw_pending", "Take back the last message that is still waiting to be delivered";
    NextHunk => "next_hunk", "Go to the next hunk";
    PrevHunk => "prev_hunk", "Go to the previous hunk";
    ToggleHunk => "toggle_hunk", "Accept or reject the selected hunk";
    Apply => "apply", "Apply the accepted hunks (approve)";
    RejectAll => "reject_all", "Reject the whole proposal";
    RejectWithReason => "reject_with_reason", "Reject and tell the model why";
    WholeFile => "whole_file", "Show the whole proposed file";
    SideBySide => "side_by_side", "Toggle side-by-side diff (wide terminals)";
    OpenEditor => "open_editor", "Open the proposed file in $EDITOR; what you save becomes the change";
    AllowForSession => "allow_for_session", "Allow this exact command for the rest of the session";
}

impl Action {
    pub fn from_name(name: &str) -> Option<Action> {
        Action::ALL
            .iter()
            .copied()
            .find(|action| action.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut names: Vec<_> = Action::ALL.iter().map(|a| a.name()).collect();
        for action in Action::ALL {
            assert_eq!(Action::from_name(action.name()), Some(*action));
        }
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        for context in Context::ALL {
            assert_eq!(Context::from_name(context.name()), Some(context));
        }
    }
}

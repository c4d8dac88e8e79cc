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
    /// The list of files offered while an `@` mention is typed; keys it does not bind
    /// go on to [`Context::Composer`].
    Completion,
    /// The scrollback of the conversation.
    Transcript,
    /// Reviewing a proposed edit, hunk by hunk.
    DiffReview,
    /// Approving a shell command.
    Approval,
    /// Typing into a running command: keys it does not bind go to the command, and
    /// [`Context::Global`] is not consulted (Ctrl-C is the command's).
    CommandInput,
}

impl Context {
    pub const ALL: [Context; 7] = [
        Context::Global,
        Context::Composer,
        Context::Completion,
        Context::Transcript,
        Context::DiffReview,
        Context::Approval,
        Context::CommandInput,
    ];

    /// The table name in `keymap.toml`.
    pub fn name(self) -> &'static str {
        match self {
            Context::Global => "global",
            Context::Composer => "composer",
            Context::Completion => "completion",
            Context::Transcript => "transcript",
            Context::DiffReview => "diff_review",
            Context::Approval => "approval",
            Context::CommandInput => "command_input",
        }
    }

    pub fn from_name(name: &str) -> Option<Context> {
        Context::ALL
            .into_iter()
            .find(|context| context.name() == name)
    }
}

macro_rules! actions {
    ($($variant:ident => $name:literal, $short:literal, $doc:literal;)*) => {
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

            /// A word or two for key hints under a panel.
            pub fn short(self) -> &'static str {
                match self {
                    $(Action::$variant => $short,)*
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
    Quit => "quit", "quit", "Quit (asks first while work is running)";
    Interrupt => "interrupt", "interrupt", "Interrupt the current step: stop the stream and running tools";
    CycleMode => "cycle_mode", "mode", "Cycle the approval mode: ask → auto-edit → auto → read-only";
    ToggleHelp => "toggle_help", "help", "Show or hide the key help";
    Redraw => "redraw", "redraw", "Clear and redraw the screen (when other output garbled it)";
    ScrollUp => "scroll_up", "scroll up", "Scroll the transcript up a line";
    ScrollDown => "scroll_down", "scroll down", "Scroll the transcript down a line";
    PageUp => "page_up", "page up", "Scroll the transcript up a page";
    PageDown => "page_down", "page down", "Scroll the transcript down a page";
    ScrollTop => "scroll_top", "top", "Jump to the start of the transcript";
    ScrollBottom => "scroll_bottom", "bottom", "Jump to the end and follow new output";
    ToggleThinking => "toggle_thinking", "thinking", "Show or hide the model's thinking";
    ToggleCards => "toggle_cards", "cards", "Expand or collapse tool cards";
    Submit => "submit", "send", "Send the message (while the agent works: steer it at its next step)";
    Queue => "queue", "queue", "Queue the message until the current turn ends";
    Newline => "newline", "newline", "Insert a line break";
    HistoryPrev => "history_prev", "history up", "Previous message from history (or move up a line)";
    HistoryNext => "history_next", "history down", "Next message from history (or move down a line)";
    CursorLeft => "cursor_left", "left", "Move the cursor left";
    CursorRight => "cursor_right", "right", "Move the cursor right";
    WordLeft => "word_left", "word left", "Move the cursor a word left";
    WordRight => "word_right", "word right", "Move the cursor a word right";
    LineStart => "line_start", "line start", "Move to the start of the line";
    LineEnd => "line_end", "line end", "Move to the end of the line";
    DeleteBack => "delete_back", "delete", "Delete the character before the cursor";
    DeleteForward => "delete_forward", "delete forward", "Delete the character under the cursor";
    DeleteWordBack => "delete_word_back", "delete word", "Delete the word before the cursor";
    ClearInput => "clear_input", "clear", "Clear the input";
    TypeIntoCommand => "type_into_command", "type into command", "Type into a command waiting for input (a y/n, a passphrase)";
    ReleaseCommand => "release_command", "stop typing", "Stop typing into the command: keys go to duet again";
    EditMessage => "edit_message", "edit in $EDITOR", "Write the message in $EDITOR; what you save comes back here, not sent";
    WithdrawPending => "withdraw_pending", "take back", "Take back the last message that is still waiting to be delivered";
    CompletionPrev => "completion_prev", "previous", "Choose the previous entry in the @ or / list";
    CompletionNext => "completion_next", "next", "Choose the next entry in the @ or / list";
    CompletionAccept => "completion_accept", "insert", "Put the chosen file's path or command in the message";
    CompletionClose => "completion_close", "close", "Close the list (the agent is not interrupted)";
    NextHunk => "next_hunk", "next hunk", "Go to the next hunk";
    PrevHunk => "prev_hunk", "previous hunk", "Go to the previous hunk";
    ToggleHunk => "toggle_hunk", "accept/reject hunk", "Accept or reject the selected hunk";
    Apply => "apply", "apply", "Apply the accepted hunks (approve)";
    RejectAll => "reject_all", "reject", "Reject the whole proposal";
    RejectWithReason => "reject_with_reason", "reject with reason", "Reject and tell the model why";
    WholeFile => "whole_file", "whole file", "Show the whole proposed file";
    SideBySide => "side_by_side", "side by side", "Toggle side-by-side diff (wide terminals)";
    OpenEditor => "open_editor", "edit in $EDITOR", "Open the proposed file in $EDITOR; what you save becomes the change";
    AllowForSession => "allow_for_session", "allow for session", "Allow this exact command for the rest of the session";
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

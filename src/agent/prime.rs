//! Parsing a file ahead while the model still streams its edit of it.
//!
//! The syntax check after a write parses the file's new text. With a kept parse of the
//! old text it parses only what the edit changed (about a millisecond); without one it
//! parses the whole file (ten milliseconds or more for 5,000 lines). A file the model
//! read is parsed ahead when it is read. A file it edits without reading it first is
//! parsed ahead from here: as soon as the call's `path` has streamed in, while the rest
//! of its arguments (the text to replace and its replacement) is still on its way.

use std::collections::HashMap;

use crate::json_string::leading_string;

/// How much of a call's arguments is searched for its path: the path comes first in
/// the tools' schemas, so a longer search would mean the model put it last.
const MAX_WATCHED_BYTES: usize = 4096;

/// The calls being watched for their `path`, by call id.
#[derive(Debug, Default)]
pub(super) struct StreamedPaths {
    watched: HashMap<String, String>,
}

impl StreamedPaths {
    /// Watches the streamed arguments of call `id` for its path.
    pub(super) fn watch(&mut self, id: &str) {
        self.watched.insert(id.to_string(), String::new());
    }

    /// Adds a fragment of call `id`'s arguments. Returns the path the first time it is
    /// complete; the call is not watched after that, nor once too much streamed in
    /// without one.
    pub(super) fn push(&mut self, id: &str, fragment: &str) -> Option<String> {
        let streamed = self.watched.get_mut(id)?;
        streamed.push_str(fragment);
        let path = leading_string_field(streamed, "path");
        if path.is_some() || streamed.len() > MAX_WATCHED_BYTES {
            self.watched.remove(id);
        }
        path
    }
}

/// The value of the string field `name` of the JSON object that `partial` begins, once
/// it has arrived whole. Fields before it are skipped when they are strings; any other
/// value before it ends the search (`None`), as does text that is not JSON.
fn leading_string_field(partial: &str, name: &str) -> Option<String> {
    let mut rest = partial.trim_start().strip_prefix('{')?;
    loop {
        rest = rest.trim_start();
        let (key, after_key) = leading_string(rest)?;
        let (value, after_value) =
            leading_string(after_key.trim_start().strip_prefix(':')?.trim_start())?;
        if key == name {
            return Some(value);
        }
        rest = after_value.trim_start().strip_prefix(',')?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `arguments` in fragments of `size` bytes (at char boundaries) and returns
    /// the paths announced, with the fragment count when each came.
    fn stream(arguments: &str, size: usize) -> Vec<(usize, String)> {
        let mut paths = StreamedPaths::default();
        paths.watch("call_1");
        let mut announced = Vec::new();
        let chars: Vec<char> = arguments.chars().collect();
        for (count, chunk) in chars.chunks(size).enumerate() {
            let fragment: String = chunk.iter().collect();
            if let Some(path) = paths.push("call_1", &fragment) {
                announced.push((count + 1, path));
            }
        }
        announced
    }

    #[test]
    fn the_path_is_announced_once_as_soon_as_it_is_complete() {
        let arguments = r#"{"path": "src/lib.rs", "old_string": "a", "new_string": "b"}"#;
        let announced = stream(arguments, 3);
        assert_eq!(announced, [(7, "src/lib.rs".to_string())]);
        assert_eq!(stream(arguments, 1000), [(1, "src/lib.rs".to_string())]);
    }

    #[test]
    fn escapes_are_decoded_and_string_fields_before_the_path_are_skipped() {
        let arguments = r#"{ "old_string" : "say \"hi\", {x}" , "path":"dir/a \"b\"\u00e9.py"}"#;
        assert_eq!(
            stream(arguments, 5)
                .into_iter()
                .map(|(_, path)| path)
                .collect::<Vec<_>>(),
            ["dir/a \"b\"é.py"]
        );
    }

    #[test]
    fn no_path_is_announced_from_other_shapes_or_unwatched_calls() {
        assert!(stream(r#"{"replace_all": true, "path": "a.rs"}"#, 4).is_empty());
        assert!(stream(r#"["path", "a.rs"]"#, 4).is_empty());
        assert!(stream(r#"{"path": 7}"#, 4).is_empty());
        assert!(stream(r#"{"path": "unfinished"#, 4).is_empty());
        let mut paths = StreamedPaths::default();
        assert_eq!(paths.push("call_9", r#"{"path": "a.rs"}"#), None);
    }

    #[test]
    fn a_call_is_no_longer_watched_once_too_much_came_without_a_path() {
        let long = "x".repeat(MAX_WATCHED_BYTES + 100);
        let arguments = format!(r#"{{"old_string": "{long}", "path": "a.rs"}}"#);
        assert!(stream(&arguments, 64).is_empty());
    }
}

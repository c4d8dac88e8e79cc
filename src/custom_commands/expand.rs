//! Filling a prompt file's placeholders with the arguments typed after its name.
//!
//! Owns: the placeholder rules. `$ARGUMENTS` is the whole argument string as typed;
//! `$1` … `$9` are its words split as a shell would (quotes group words, a missing word
//! is empty); `$NAME` (upper case, Codex's named placeholders) is the value of a
//! `NAME=value` word; `$$` is one `$`. Any other `$`, and a `$NAME` no word gives a
//! value, is left as written. Does not own: where the template came from or sending
//! the result.
//! Invariant: pure and linear in the template; the arguments are never scanned for
//! placeholders themselves (a `$1` typed as an argument stays `$1`). Arguments given
//! to a template that has no placeholder for them are not dropped: they follow the
//! text after a blank line, as `ARGUMENTS: …`.

use std::collections::HashMap;

/// The template with its placeholders filled from `arguments`.
pub fn expand(template: &str, arguments: &str) -> String {
    let arguments = arguments.trim();
    let words = split_words(arguments);
    let named: HashMap<&str, &str> = words
        .iter()
        .filter_map(|word| word.split_once('='))
        .filter(|(name, _)| is_placeholder_name(name))
        .collect();
    let mut out = String::with_capacity(template.len() + arguments.len());
    let mut used = false;
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let next = after.chars().next();
        match next {
            Some('$') => {
                out.push('$');
                rest = &after[1..];
            }
            Some(digit @ '1'..='9') => {
                let index = digit as usize - '1' as usize;
                out.push_str(words.get(index).map_or("", String::as_str));
                used = true;
                rest = &after[1..];
            }
            Some('A'..='Z') => {
                let len = after
                    .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(after.len());
                let name = &after[..len];
                if name == "ARGUMENTS" {
                    out.push_str(arguments);
                    used = true;
                } else if let Some(value) = named.get(name) {
                    out.push_str(value);
                    used = true;
                } else {
                    out.push('$');
                    out.push_str(name);
                }
                rest = &after[len..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if !used && !arguments.is_empty() {
        out = format!("{}\n\nARGUMENTS: {arguments}", out.trim_end());
    }
    out
}

/// The words of `arguments` as a shell splits them; with an unclosed quote, at
/// whitespace (what was typed is still used rather than refused).
fn split_words(arguments: &str) -> Vec<String> {
    shlex::split(arguments)
        .unwrap_or_else(|| arguments.split_whitespace().map(str::to_string).collect())
}

/// `NAME` of a `$NAME` placeholder: an upper-case letter, then upper-case letters,
/// digits and underscores.
fn is_placeholder_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn arguments_is_the_whole_string_as_typed() {
        assert_eq!(
            expand("Review $ARGUMENTS carefully", "src/lib.rs  \"a b\""),
            "Review src/lib.rs  \"a b\" carefully"
        );
        assert_eq!(expand("Twice: $ARGUMENTS, $ARGUMENTS", "x"), "Twice: x, x");
        assert_eq!(expand("Review $ARGUMENTS.", ""), "Review .");
    }

    #[test]
    fn positional_words_are_split_like_a_shell_and_missing_ones_are_empty() {
        let template = "fix #$1 with priority $2 [$3]";
        assert_eq!(
            expand(template, "123 'very high'"),
            "fix #123 with priority very high []"
        );
        assert_eq!(expand("$1|$9", "a"), "a|");
        // `$10` is `$1` then a zero, as in a shell.
        assert_eq!(expand("$10", "a"), "a0");
        // An unclosed quote still gives words.
        assert_eq!(expand("$1 $2", "\"a b"), "\"a b");
    }

    #[test]
    fn named_placeholders_take_name_equals_value_words() {
        let template = "Migrate $FILE to $TARGET_VERSION ($FILE)";
        assert_eq!(
            expand(template, "FILE=\"src/old api.rs\" TARGET_VERSION=2"),
            "Migrate src/old api.rs to 2 (src/old api.rs)"
        );
        // Lower-case names are not placeholders; unknown ones stay as written.
        assert_eq!(
            expand("$file $HOME $TARGET", "file=a"),
            "$file $HOME $TARGET\n\nARGUMENTS: file=a"
        );
        assert_eq!(expand("cd $HOME", ""), "cd $HOME");
    }

    #[test]
    fn a_double_dollar_is_a_dollar_and_other_dollars_stay() {
        assert_eq!(expand("costs $$5, not $1", "x"), "costs $5, not x");
        assert_eq!(expand("$$ARGUMENTS", "x"), "$ARGUMENTS\n\nARGUMENTS: x");
        assert_eq!(expand("$ $0 $a end$", ""), "$ $0 $a end$");
        assert_eq!(
            expand("$ARGUMENTS_LIST", "x"),
            "$ARGUMENTS_LIST\n\nARGUMENTS: x"
        );
    }

    #[test]
    fn arguments_are_not_expanded_again() {
        assert_eq!(
            expand("say $ARGUMENTS", "$1 $$ $ARGUMENTS"),
            "say $1 $$ $ARGUMENTS"
        );
        assert_eq!(expand("say $1", "'$2'"), "say $2");
    }

    #[test]
    fn arguments_without_a_placeholder_follow_the_text() {
        assert_eq!(
            expand("Write the release notes.\n", "for 2.0"),
            "Write the release notes.\n\nARGUMENTS: for 2.0"
        );
        assert_eq!(
            expand("Write the release notes.\n", "  "),
            "Write the release notes.\n"
        );
    }

    #[test]
    fn text_is_kept_byte_for_byte_around_placeholders() {
        assert_eq!(expand("é$1ü\n\t$", "ß"), "éßü\n\t$");
    }
}

//! The front matter of a prompt file: the `---` block at its top that Claude Code and
//! Codex both use for `description` and `argument-hint`.
//!
//! Owns: splitting a file into its front matter and its body, and reading the two keys
//! duet uses from simple `key: value` lines. Does not own: finding files, validating
//! names, or expanding the body.
//! Invariant: never fails. A file whose first line is not `---`, or whose block is
//! never closed, has no front matter and is all body; unknown keys, lines that are not
//! `key: value`, and YAML beyond quoted scalars and `|`/`>` blocks are ignored, not
//! errors (duet has no YAML parser, and a prompt file is worth using even when its
//! header uses syntax duet does not read).

/// What the front matter says, as far as duet reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrontMatter {
    pub description: Option<String>,
    pub argument_hint: Option<String>,
}

/// The front matter of `text` and the body after it.
pub fn split(text: &str) -> (FrontMatter, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return (FrontMatter::default(), text);
    };
    if first.trim_end() != "---" {
        return (FrontMatter::default(), text);
    }
    let mut block = Vec::new();
    let mut offset = first.len();
    for line in lines {
        offset += line.len();
        if line.trim_end() == "---" {
            return (read_block(&block), &text[offset..]);
        }
        block.push(line.trim_end_matches(['\n', '\r']));
    }
    // Never closed: the dashes were the body's own (a horizontal rule).
    (FrontMatter::default(), text)
}

fn read_block(lines: &[&str]) -> FrontMatter {
    let mut front = FrontMatter::default();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        index += 1;
        // Only top-level keys: an indented line belongs to a value duet does not read.
        if line.starts_with([' ', '\t']) || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, raw)) = line.split_once(':') else {
            continue;
        };
        let raw = raw.trim();
        let value = if let Some(folded) = block_style(raw) {
            let continuation = lines[index..]
                .iter()
                .take_while(|line| line.trim().is_empty() || line.starts_with([' ', '\t']))
                .count();
            let body = &lines[index..index + continuation];
            index += continuation;
            block_scalar(body, folded)
        } else {
            scalar(raw)
        };
        let value = Some(value).filter(|value| !value.is_empty());
        match key.trim() {
            "description" => front.description = value,
            "argument-hint" | "argument_hint" => front.argument_hint = value,
            _ => {}
        }
    }
    front
}

/// `Some(folded)` when `raw` opens a block scalar: `>` folds its lines into one, `|`
/// keeps them (chomping and indentation indicators are accepted and not needed).
fn block_style(raw: &str) -> Option<bool> {
    let indicators = |rest: &str| rest.chars().all(|c| matches!(c, '+' | '-' | '1'..='9'));
    if let Some(rest) = raw.strip_prefix('>') {
        indicators(rest).then_some(true)
    } else if let Some(rest) = raw.strip_prefix('|') {
        indicators(rest).then_some(false)
    } else {
        None
    }
}

fn block_scalar(lines: &[&str], folded: bool) -> String {
    let trimmed: Vec<&str> = lines.iter().map(|line| line.trim()).collect();
    let joined = if folded {
        trimmed
            .iter()
            .filter(|line| !line.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        trimmed.join("\n")
    };
    joined.trim().to_string()
}

/// A one-line value: double-quoted (with the common escapes), single-quoted (`''` is a
/// quote), or plain (a ` #` starts a comment).
fn scalar(raw: &str) -> String {
    if let Some(inner) = raw.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return out,
                '\\' => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => out.push(other),
                    None => break,
                },
                other => out.push(other),
            }
        }
        // No closing quote: the value as written.
        return raw.to_string();
    }
    if let Some(inner) = raw.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\'' {
                out.push(c);
            } else if chars.next_if_eq(&'\'').is_some() {
                out.push('\'');
            } else {
                return out;
            }
        }
        return raw.to_string();
    }
    let plain = match raw.find(" #") {
        Some(comment) => &raw[..comment],
        None => raw,
    };
    plain.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn front(description: Option<&str>, hint: Option<&str>) -> FrontMatter {
        FrontMatter {
            description: description.map(str::to_string),
            argument_hint: hint.map(str::to_string),
        }
    }

    #[test]
    fn the_two_keys_are_read_and_the_body_follows() {
        let text = "---\ndescription: Review a change\nargument-hint: [file]\n\
                    allowed-tools: Bash(git diff:*)\nmodel: opus\n---\nReview $ARGUMENTS\n";
        let (found, body) = split(text);
        assert_eq!(found, front(Some("Review a change"), Some("[file]")));
        assert_eq!(body, "Review $ARGUMENTS\n");
    }

    #[test]
    fn quoted_values_lose_their_quotes_and_keep_what_is_inside() {
        let text = "---\r\ndescription: \"Fix: the \\\"parser\\\" # not a comment\"\r\n\
                    argument-hint: 'it''s [n]'\r\n---\r\nbody";
        let (found, body) = split(text);
        assert_eq!(
            found,
            front(
                Some("Fix: the \"parser\" # not a comment"),
                Some("it's [n]")
            )
        );
        assert_eq!(body, "body");
        let (found, _) = split("---\ndescription: plain value # a comment\n---\n");
        assert_eq!(found.description.as_deref(), Some("plain value"));
        let (found, _) = split("---\ndescription: \"never closed\n---\n");
        assert_eq!(found.description.as_deref(), Some("\"never closed"));
    }

    #[test]
    fn block_scalars_are_folded_or_kept() {
        let text = "---\ndescription: >-\n  Review the\n  staged change\nargument-hint: |\n  \
                    [a]\n  [b]\n---\nbody";
        let (found, body) = split(text);
        assert_eq!(
            found,
            front(Some("Review the staged change"), Some("[a]\n[b]"))
        );
        assert_eq!(body, "body");
    }

    #[test]
    fn unknown_keys_odd_lines_and_nested_values_are_ignored() {
        let text = "---\n# a comment\nnot a pair\nmetadata:\n  description: nested\n\
                    description:\n---\nbody";
        let (found, body) = split(text);
        assert_eq!(found, FrontMatter::default());
        assert_eq!(body, "body");
    }

    #[test]
    fn without_a_closed_block_the_whole_file_is_body() {
        for text in [
            "Review it\n---\n",
            "---\ndescription: x\nno end",
            "",
            "\u{feff}plain",
        ] {
            let (found, body) = split(text);
            assert_eq!(found, FrontMatter::default(), "{text:?}");
            assert_eq!(body, text.trim_start_matches('\u{feff}'), "{text:?}");
        }
        let (found, body) = split("\u{feff}---\ndescription: d\n---\nb");
        assert_eq!(found.description.as_deref(), Some("d"));
        assert_eq!(body, "b");
    }
}

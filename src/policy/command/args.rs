//! Reading a program's arguments the way getopt does: short option clusters (`-rf`,
//! `-ofile`), long options (`--output=file`, `--output file`), `--`, and operands.
//!
//! Owns: splitting arguments by an [`OptionSpec`] that says which options take values.
//! Does not own: what any option means.
//! Invariant: every argument ends up as exactly one option, option value or operand.

use super::syntax::Word;

/// Which options of a program take a value.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct OptionSpec {
    /// Short options followed by a value (`-o file` or `-ofile`).
    pub short_values: &'static str,
    /// Long options followed by a value (`--output file` or `--output=file`).
    pub long_values: &'static [&'static str],
    /// Options end at the first operand (programs that run a command: `sudo`, `xargs`).
    pub stop_at_operand: bool,
}

/// One option as given: `name` is the letter of a short option or the name of a long
/// one (without dashes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Opt {
    pub name: String,
    pub value: Option<Word>,
}

/// A program's arguments, read by an [`OptionSpec`].
#[derive(Clone, Debug, Default)]
pub(super) struct Parsed<'w> {
    pub options: Vec<Opt>,
    pub operands: Vec<&'w Word>,
    /// With `stop_at_operand`: the arguments from the first operand on.
    pub rest: &'w [Word],
    /// An explicit `--` ended the options.
    pub saw_double_dash: bool,
}

impl Parsed<'_> {
    /// Some option in `names` was given (letters for short, names for long options).
    pub(super) fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|option| names.contains(&option.name.as_str()))
    }

    /// The values of the options in `names`, in order.
    pub(super) fn values<'p>(&'p self, names: &'p [&str]) -> impl Iterator<Item = &'p Word> {
        self.options
            .iter()
            .filter(|option| names.contains(&option.name.as_str()))
            .filter_map(|option| option.value.as_ref())
    }

    pub(super) fn value(&self, names: &[&str]) -> Option<&Word> {
        self.options
            .iter()
            .filter(|option| names.contains(&option.name.as_str()))
            .find_map(|option| option.value.as_ref())
    }
}

/// Splits `args` by `spec`.
pub(super) fn parse<'w>(args: &'w [Word], spec: &OptionSpec) -> Parsed<'w> {
    let mut parsed = Parsed::default();
    let mut index = 0;
    while let Some(word) = args.get(index) {
        index += 1;
        let spelling = word.spelling();
        if spelling == "--" {
            parsed.saw_double_dash = true;
            if spec.stop_at_operand {
                parsed.rest = args.get(index..).unwrap_or_default();
            } else {
                parsed
                    .operands
                    .extend(args.get(index..).unwrap_or_default());
            }
            break;
        }
        if let Some(long) = spelling.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value_word(word, value))),
                None => (long, None),
            };
            let value = match inline {
                Some(value) => Some(value),
                None if spec.long_values.contains(&name) => take(args, &mut index),
                None => None,
            };
            parsed.options.push(Opt {
                name: name.to_string(),
                value,
            });
        } else if let Some(cluster) = spelling.strip_prefix('-').filter(|c| !c.is_empty()) {
            short_cluster(cluster, word, spec, args, &mut index, &mut parsed.options);
        } else if spec.stop_at_operand {
            parsed.rest = args.get(index - 1..).unwrap_or_default();
            break;
        } else {
            parsed.operands.push(word);
        }
    }
    parsed
}

/// `-rf` is `-r -f`; in `-ofile` (with `o` taking a value) the rest is the value.
fn short_cluster(
    cluster: &str,
    word: &Word,
    spec: &OptionSpec,
    args: &[Word],
    index: &mut usize,
    options: &mut Vec<Opt>,
) {
    for (at, letter) in cluster.char_indices() {
        let name = letter.to_string();
        if !spec.short_values.contains(letter) {
            options.push(Opt { name, value: None });
            continue;
        }
        let attached = &cluster[at + letter.len_utf8()..];
        let value = if attached.is_empty() {
            take(args, index)
        } else {
            Some(value_word(word, attached))
        };
        options.push(Opt { name, value });
        return;
    }
}

fn take(args: &[Word], index: &mut usize) -> Option<Word> {
    let value = args.get(*index).cloned();
    if value.is_some() {
        *index += 1;
    }
    value
}

/// The value part of an option word: known when the whole word was.
fn value_word(word: &Word, value: &str) -> Word {
    if word.value().is_some() {
        Word::literal(value)
    } else {
        Word::dynamic(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<Word> {
        args.iter().map(|arg| Word::literal(arg)).collect()
    }

    fn values(words: &[&Word]) -> Vec<String> {
        words.iter().map(|word| word.text.clone()).collect()
    }

    #[test]
    fn clusters_values_and_operands() {
        let args = words(&[
            "-sSLo",
            "out.html",
            "--header=x",
            "--retry",
            "3",
            "http://x",
            "-v",
        ]);
        let spec = OptionSpec {
            short_values: "o",
            long_values: &["retry"],
            stop_at_operand: false,
        };
        let parsed = parse(&args, &spec);
        assert!(parsed.has(&["S", "L", "v"]));
        assert_eq!(
            parsed.value(&["o"]).map(|w| w.text.as_str()),
            Some("out.html")
        );
        assert_eq!(
            parsed.value(&["header"]).map(|w| w.text.as_str()),
            Some("x")
        );
        assert_eq!(parsed.value(&["retry"]).map(|w| w.text.as_str()), Some("3"));
        assert_eq!(values(&parsed.operands), ["http://x"]);
    }

    #[test]
    fn options_stop_at_the_first_operand_for_wrappers() {
        let args = words(&["-u", "root", "rm", "-rf", "/"]);
        let spec = OptionSpec {
            short_values: "u",
            stop_at_operand: true,
            ..OptionSpec::default()
        };
        let parsed = parse(&args, &spec);
        assert_eq!(parsed.rest, &args[2..]);
        let args = words(&["-n", "5", "--", "-x"]);
        let parsed = parse(
            &args,
            &OptionSpec {
                short_values: "n",
                stop_at_operand: true,
                ..OptionSpec::default()
            },
        );
        assert_eq!(parsed.rest, &args[3..]);
    }

    #[test]
    fn double_dash_makes_the_rest_operands() {
        let args = words(&["-f", "--", "-rf", "x"]);
        let parsed = parse(&args, &OptionSpec::default());
        assert!(parsed.saw_double_dash);
        assert_eq!(values(&parsed.operands), ["-rf", "x"]);
    }
}

//! The names of an enum's values on the command line, for enums that are also config
//! values and messages.
//!
//! Owns: reading and writing a value by the name `clap::ValueEnum` gives it, and the
//! list of all the names, so an enum's `Display`, `FromStr` and error messages use the
//! names clap lists in `--help` and completions instead of a table of their own.
//! Does not own: the names themselves (each enum's `#[value(...)]` and `#[serde(...)]`
//! attributes, kept equal by its tests) or the wording of its errors.

use std::fmt;

use clap::ValueEnum;

/// Writes `value`'s name: an enum's `Display`.
pub fn write<T: ValueEnum>(value: &T, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match value.to_possible_value() {
        Some(possible) => f.write_str(possible.get_name()),
        None => Ok(()),
    }
}

/// The value named exactly `name` (case matters; aliases count).
pub fn parse<T: ValueEnum>(name: &str) -> Option<T> {
    T::from_str(name, false).ok()
}

/// Every value's name in order, joined by ", ".
pub fn all<T: ValueEnum>() -> String {
    let names: Vec<String> = T::value_variants()
        .iter()
        .filter_map(ValueEnum::to_possible_value)
        .map(|possible| possible.get_name().to_owned())
        .collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
    enum Shade {
        Light,
        #[value(name = "very-dark")]
        Dark,
        #[value(skip)]
        _Hidden,
    }

    impl fmt::Display for Shade {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write(self, f)
        }
    }

    #[test]
    fn names_read_and_write_as_clap_gives_them() {
        assert_eq!(Shade::Dark.to_string(), "very-dark");
        assert_eq!(Shade::_Hidden.to_string(), "");
        assert_eq!(parse::<Shade>("light"), Some(Shade::Light));
        assert_eq!(parse::<Shade>("very-dark"), Some(Shade::Dark));
        assert_eq!(parse::<Shade>("Light"), None, "case matters");
        assert_eq!(parse::<Shade>("dark"), None);
        assert_eq!(all::<Shade>(), "light, very-dark");
    }
}

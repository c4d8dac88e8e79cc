//! The scripts the scripted model server plays: the format and its types are the
//! crate's ([`duet::provider::replay::script`]); this adds loading a test's script by
//! name from `tests/scripts/`.

use std::path::PathBuf;

pub use duet::provider::replay::script::*;

/// Loading `tests/scripts/{name}.toml`.
pub trait LoadScript {
    /// Loads `tests/scripts/{name}.toml`, panicking with the reason if it is missing or
    /// invalid (a broken script is a broken test).
    fn load(name: &str) -> Script;
}

impl LoadScript for Script {
    fn load(name: &str) -> Script {
        let path = script_path(name);
        match Script::from_file(&path) {
            Ok(script) => script,
            Err(err) => panic!("{err}"),
        }
    }
}

/// Where the test script `name` lives.
pub fn script_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scripts")
        .join(format!("{name}.toml"))
}

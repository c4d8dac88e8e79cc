//! The quirks of real servers as data (`tests/fixtures/provider-captures/quirks.toml`):
//! each a capture changed only as a report describes. Shared by the decoders' replay
//! (`src/provider/captures.rs`, which includes this file) and the replay through
//! `duet exec` (`tests/suite/real_servers.rs`).

use std::path::Path;

use serde::Deserialize;

/// One reported behaviour, as edits of one capture's body.
#[derive(Debug, Deserialize)]
pub struct Quirk {
    pub name: String,
    /// Who does it, and where it was reported.
    pub report: String,
    /// The capture it is built from.
    pub capture: String,
    edits: Vec<Edit>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Edit {
    Replace {
        replace: String,
        with: String,
        #[serde(default)]
        first: bool,
    },
    Prepend {
        prepend: String,
    },
}

#[derive(Deserialize)]
struct File {
    quirk: Vec<Quirk>,
}

/// Every quirk in the file, in its order.
pub fn all(captures_dir: &Path) -> Vec<Quirk> {
    let text = std::fs::read_to_string(captures_dir.join("quirks.toml")).expect("quirks.toml");
    toml::from_str::<File>(&text)
        .expect("quirks.toml parses")
        .quirk
}

impl Quirk {
    /// `body` changed as the report describes; every edit must change something.
    pub fn apply(&self, body: &str) -> String {
        let mut text = body.to_string();
        for edit in &self.edits {
            let changed = match edit {
                Edit::Replace {
                    replace,
                    with,
                    first: true,
                } => text.replacen(replace.as_str(), with, 1),
                Edit::Replace { replace, with, .. } => text.replace(replace.as_str(), with),
                Edit::Prepend { prepend } => format!("{prepend}{text}"),
            };
            assert_ne!(changed, text, "{}: an edit changed nothing", self.name);
            text = changed;
        }
        text
    }
}

//! What the sandbox achieved, layer by layer: the launcher's report ([`Confinement`],
//! [`Report`]) and what duet tells the user ([`Protections`]).
//!
//! Owns: the layer types, comparing a launcher's report with the probe's, deciding
//! which missing layers stop programs, and the wording of protections in one line,
//! as a badge and as gaps. Does not own: applying anything.
//! Invariant: every layer is either applied, with what was applied, or missing, with
//! why; nothing here turns a missing layer into an applied one.

use serde::{Deserialize, Serialize};

/// The name of the launcher's report in the directory given to it.
pub(crate) const REPORT_FILE: &str = "sandbox-report.json";

/// One layer of the sandbox as a launcher found it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Layer {
    Applied { detail: String },
    Missing { why: String },
}

impl Layer {
    pub fn applied(detail: impl Into<String>) -> Self {
        Layer::Applied {
            detail: detail.into(),
        }
    }

    pub fn missing(why: impl Into<String>) -> Self {
        Layer::Missing { why: why.into() }
    }

    pub fn is_applied(&self) -> bool {
        matches!(self, Layer::Applied { .. })
    }

    fn from_result(result: Result<String, String>) -> Self {
        match result {
            Ok(detail) => Layer::applied(detail),
            Err(why) => Layer::missing(why),
        }
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layer::Applied { detail } => f.write_str(detail),
            Layer::Missing { why } => write!(f, "missing: {why}"),
        }
    }
}

/// The layers by name, as `[sandbox] accept_missing` lists them (serde) and the
/// launcher's `--accept-missing` and `--require` take them (clap): what
/// [`Display`](std::fmt::Display) prints and [`FromStr`](std::str::FromStr) reads.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum LayerName {
    /// Own user, mount, process, IPC and host-name namespaces; fresh `/proc`, minimal
    /// `/dev`, empty `/run`, private `/tmp`.
    Namespaces,
    Network,
    Writes,
    Capabilities,
    Syscalls,
    Protected,
    Credentials,
}

impl LayerName {
    pub const ALL: [LayerName; 7] = [
        LayerName::Namespaces,
        LayerName::Network,
        LayerName::Writes,
        LayerName::Capabilities,
        LayerName::Syscalls,
        LayerName::Protected,
        LayerName::Credentials,
    ];
}

impl std::fmt::Display for LayerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::value_name::write(self, f)
    }
}

impl std::str::FromStr for LayerName {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        crate::value_name::parse(text).ok_or_else(|| {
            let names = crate::value_name::all::<LayerName>();
            format!("`{text}` is not a layer; the layers are {names}")
        })
    }
}

/// Whether commands can reach the network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NetworkIsolation {
    /// A network namespace of its own: no interfaces but loopback.
    Isolated {
        /// The namespace's own loopback is up, so local servers started inside work.
        loopback_up: bool,
    },
    /// The user's config lets commands use the network.
    Allowed,
    /// Commands reach whatever the host reaches, though nobody asked for it.
    Open { why: String },
}

/// Whether commands can write outside the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum WriteLimits {
    /// Landlock limits writes to the workspace, the private temp dir, configured paths
    /// and the device files.
    Landlock {
        abi: u8,
    },
    Unlimited {
        why: String,
    },
}

/// What a launcher achieved before starting its program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Confinement {
    pub namespaces: Layer,
    pub network: NetworkIsolation,
    pub writes: WriteLimits,
    pub capabilities: Layer,
    pub syscalls: Layer,
    pub protected: Layer,
    pub credentials: Layer,
}

impl Confinement {
    /// No protection, for one reason.
    pub fn none(why: &str) -> Self {
        Self {
            namespaces: Layer::missing(why),
            network: NetworkIsolation::Open { why: why.into() },
            writes: WriteLimits::Unlimited { why: why.into() },
            capabilities: Layer::missing(why),
            syscalls: Layer::missing(why),
            protected: Layer::missing(why),
            credentials: Layer::missing(why),
        }
    }

    /// Builds one from each part's outcome.
    pub(crate) fn from_parts(parts: Parts) -> Self {
        Self {
            namespaces: Layer::from_result(parts.namespaces),
            network: parts.network,
            writes: parts.writes,
            capabilities: Layer::from_result(parts.capabilities),
            syscalls: Layer::from_result(parts.syscalls),
            protected: Layer::from_result(parts.protected),
            credentials: Layer::from_result(parts.credentials),
        }
    }

    pub fn network_isolated(&self) -> bool {
        matches!(self.network, NetworkIsolation::Isolated { .. })
    }

    pub fn writes_limited(&self) -> bool {
        matches!(self.writes, WriteLimits::Landlock { .. })
    }

    /// Each layer by name, with why it is missing, if it is.
    pub fn layers(&self) -> [(LayerName, Option<String>); 7] {
        let gap = |layer: &Layer| match layer {
            Layer::Applied { .. } => None,
            Layer::Missing { why } => Some(why.clone()),
        };
        [
            (LayerName::Namespaces, gap(&self.namespaces)),
            (
                LayerName::Network,
                match &self.network {
                    NetworkIsolation::Open { why } => Some(why.clone()),
                    _ => None,
                },
            ),
            (
                LayerName::Writes,
                match &self.writes {
                    WriteLimits::Unlimited { why } => Some(why.clone()),
                    WriteLimits::Landlock { .. } => None,
                },
            ),
            (LayerName::Capabilities, gap(&self.capabilities)),
            (LayerName::Syscalls, gap(&self.syscalls)),
            (LayerName::Protected, gap(&self.protected)),
            (LayerName::Credentials, gap(&self.credentials)),
        ]
    }

    /// The missing layers the user did not accept, one line each.
    pub fn unaccepted_gaps(&self, accepted: &[LayerName]) -> Vec<String> {
        self.layers()
            .into_iter()
            .filter(|(name, _)| !accepted.contains(name))
            .filter_map(|(name, why)| why.map(|why| format!("{name}: {why}")))
            .collect()
    }

    /// Whether `self` protects at least as much as `promised`.
    pub(crate) fn keeps(&self, promised: &Confinement) -> Result<(), String> {
        for ((name, lost), (_, had)) in self.layers().into_iter().zip(promised.layers()) {
            if let (Some(why), None) = (lost, had) {
                return Err(format!("{name} failed: {why}"));
            }
        }
        match (&promised.writes, &self.writes) {
            (WriteLimits::Landlock { abi: promised }, WriteLimits::Landlock { abi })
                if abi < promised =>
            {
                Err(format!(
                    "write limits weakened from Landlock ABI {promised} to {abi}"
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Each part's outcome, as the launcher collects them.
pub(crate) struct Parts {
    pub namespaces: Result<String, String>,
    pub network: NetworkIsolation,
    pub writes: WriteLimits,
    pub capabilities: Result<String, String>,
    pub syscalls: Result<String, String>,
    pub protected: Result<String, String>,
    pub credentials: Result<String, String>,
}

/// What the launcher writes to its report file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Report {
    /// Confined like this; the program starts next.
    Applied(Confinement),
    /// Confined like this, which misses layers nobody accepted: the program was not
    /// started.
    Refused(Confinement),
    /// The launcher stopped before it could confine anything, for this reason.
    Failed(String),
}

/// Everything that protects the user from the programs duet runs, as actually applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Protections {
    #[serde(flatten)]
    pub confinement: Confinement,
    /// Why no program may start: the sandbox misses layers the config does not
    /// accept. `None` when programs run.
    pub refused: Option<String>,
    /// Inherited variables passed on by the allow-list and withheld.
    pub environment_passed: usize,
    pub environment_withheld: usize,
}

impl Protections {
    pub fn network_isolated(&self) -> bool {
        self.confinement.network_isolated()
    }

    pub fn writes_limited(&self) -> bool {
        self.confinement.writes_limited()
    }

    /// Every layer applied (the network counts when the user opened it).
    pub fn complete(&self) -> bool {
        self.refused.is_none()
            && self
                .confinement
                .layers()
                .iter()
                .all(|(_, gap)| gap.is_none())
    }

    /// A few characters for a status bar: `on`, `partial`, `off` or `blocked`.
    pub fn badge(&self) -> &'static str {
        let applied = self
            .confinement
            .layers()
            .iter()
            .filter(|(_, gap)| gap.is_none())
            .count();
        match (&self.refused, applied) {
            (Some(_), _) => "blocked",
            (None, 7) => "on",
            (None, 0) => "off",
            (None, _) => "partial",
        }
    }

    /// Why each missing layer is missing, one line each (one in all when they share
    /// the reason); empty when every layer holds.
    pub fn gaps(&self) -> Vec<String> {
        let gaps: Vec<(LayerName, String)> = self
            .confinement
            .layers()
            .into_iter()
            .filter_map(|(name, why)| why.map(|why| (name, why)))
            .collect();
        let shared = gaps.len() == LayerName::ALL.len()
            && gaps.windows(2).all(|pair| pair[0].1 == pair[1].1);
        let mut lines: Vec<String> = match gaps.first() {
            Some((_, why)) if shared => vec![format!("no sandbox: {why}")],
            _ => gaps
                .into_iter()
                .map(|(name, why)| format!("{name}: {why}"))
                .collect(),
        };
        if let Some(refused) = &self.refused {
            lines.insert(0, format!("commands cannot run: {refused}"));
        }
        lines
    }

    /// One line: `on · own namespaces · no network · writes limited (Landlock ABI 5) · …`.
    pub fn summary(&self) -> String {
        let c = &self.confinement;
        let mark = |layer: &Layer, on: &str, off: &str| {
            if layer.is_applied() { on } else { off }.to_string()
        };
        let network = match c.network {
            NetworkIsolation::Isolated { .. } => "no network".to_string(),
            NetworkIsolation::Allowed => "network allowed".to_string(),
            NetworkIsolation::Open { .. } => "network open".to_string(),
        };
        let writes = match c.writes {
            WriteLimits::Landlock { abi } => format!("writes limited (Landlock ABI {abi})"),
            WriteLimits::Unlimited { .. } => "writes unlimited".to_string(),
        };
        let parts = [
            mark(&c.namespaces, "own namespaces", "no namespaces"),
            network,
            writes,
            mark(
                &c.protected,
                "protected paths read-only",
                "protected paths writable",
            ),
            mark(&c.credentials, "credentials hidden", "credentials visible"),
            mark(&c.capabilities, "no capabilities", "capabilities kept"),
            mark(&c.syscalls, "syscall filter", "no syscall filter"),
            format!(
                "environment {} passed, {} withheld",
                self.environment_passed, self.environment_withheld
            ),
        ];
        format!("{} · {}", self.badge(), parts.join(" · "))
    }
}

impl std::fmt::Display for NetworkIsolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NetworkIsolation::Isolated { loopback_up } => {
                f.write_str("isolated: a network namespace of its own")?;
                f.write_str(if *loopback_up {
                    ", loopback only"
                } else {
                    ", no interface up"
                })
            }
            NetworkIsolation::Allowed => {
                f.write_str("open: allowed by the configuration ([sandbox] network = true)")
            }
            NetworkIsolation::Open { why } => write!(f, "open: {why}"),
        }
    }
}

impl std::fmt::Display for WriteLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteLimits::Landlock { abi } => {
                write!(
                    f,
                    "limited to the workspace, the private temp dir and device files \
                     (Landlock ABI {abi})"
                )?;
                if *abi < 3 {
                    f.write_str(
                        "; truncating existing files elsewhere is not covered before ABI 3",
                    )?;
                }
                Ok(())
            }
            WriteLimits::Unlimited { why } => write!(f, "unlimited: {why}"),
        }
    }
}

#[cfg(test)]
impl Protections {
    /// Protections with every layer applied, or with the network and writes layers
    /// missing, for tests of what front ends show.
    pub(crate) fn example(network: bool, writes: bool) -> Self {
        let mut confinement = Confinement::none("not in this example");
        confinement.namespaces = Layer::applied("user, mount, process namespaces");
        confinement.capabilities = Layer::applied("none left in any set");
        confinement.syscalls = Layer::applied("no_new_privs; 47 system calls refused");
        confinement.protected = Layer::applied("2 paths read-only");
        confinement.credentials = Layer::applied("3 credential paths hidden");
        if network {
            confinement.network = NetworkIsolation::Isolated { loopback_up: true };
        }
        if writes {
            confinement.writes = WriteLimits::Landlock { abi: 5 };
        }
        Protections {
            confinement,
            refused: None,
            environment_passed: 12,
            environment_withheld: 3,
        }
    }
}

//! Permission modes and the approval hook that sits before every side effect.
//!
//! Owns: the [`ApprovalMode`]s; the [`Policy`] that assesses an action (the class of a
//! shell command, the protected paths it or a file write touches, the user's
//! [`ToolRule`] for a tool of an MCP server) and what each mode lets through without
//! asking ([`Policy::judge`]); the [`Approver`] trait tools call before they touch the
//! disk, run a command or call an external tool; and [`ModeApprover`], which decides
//! without a person.
//! Does not own: asking a human (the agent implements [`Approver`] over its channels),
//! computing diffs, or applying a decision.
//! Invariant: no tool writes, edits, runs a command or calls an external tool without
//! an [`Approver`] decision;
//! a mode never allows more than its [`Policy::judge`] verdict says; and a change to a
//! protected path is never allowed without a person, in any mode.

mod command;
mod external;
mod protected;
mod tracked;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::diff::HunkId;

pub use command::{
    Classification, CommandClass, CommandContext, Reason, TrackedFiles, classify, simple_commands,
};
pub use external::{ExternalCall, ToolRule};
pub use protected::{
    ExistingProtected, MAX_WALKED_DEPTH, MAX_WALKED_ENTRIES, PatternError, ProtectedPaths,
    Protection,
};
pub use tracked::GitIndex;

/// How much duet may do without asking.
// Its name, kebab-case in config files (serde) and on the command line (clap, which
// lists the names in `--help` and completions), is what `Display` prints and `FromStr`
// reads. (A comment, not doc: the doc is the JSON Schema's description.)
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Every edit and every shell command that is more than a read waits for a decision.
    #[default]
    Ask,
    /// Edits apply; shell commands that are more than a read wait for a decision.
    AutoEdit,
    /// Edits, reads and ordinary workspace writes apply; destructive, network and
    /// unknown commands wait unless `[policy] auto_allow` lists their class.
    Auto,
    /// Edits and commands that are more than a read are refused; the model is told why.
    ReadOnly,
}

impl ApprovalMode {
    /// In the order a front end cycles through them (and their names are listed).
    pub const ALL: [ApprovalMode; 4] = [
        ApprovalMode::Ask,
        ApprovalMode::AutoEdit,
        ApprovalMode::Auto,
        ApprovalMode::ReadOnly,
    ];
}

impl std::fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::value_name::write(self, f)
    }
}

impl std::str::FromStr for ApprovalMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::value_name::parse(s).ok_or_else(|| {
            let valid = crate::value_name::all::<ApprovalMode>();
            format!("unknown approval mode `{s}` (valid: {valid})")
        })
    }
}

/// A side effect a tool wants to perform.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Create or replace a file. `before` is `None` for a new file.
    WriteFile {
        path: PathBuf,
        /// The path as the user and model see it (relative to the workspace): where the
        /// file really is.
        display: String,
        /// The path as the model gave it, when it goes through a symbolic link and so
        /// differs from `display`: whoever decides sees both.
        requested: Option<String>,
        before: Option<String>,
        after: String,
    },
    /// Run a shell command.
    RunCommand {
        command: String,
        /// The directory it runs in, as the user sees it.
        cwd: String,
        /// The same directory, absolute.
        dir: PathBuf,
    },
    /// Call a tool an MCP server provides.
    CallExternalTool {
        call: ExternalCall,
        /// The arguments as the model wrote them (JSON), shown to whoever decides.
        arguments: String,
    },
}

/// What a tool asks permission for.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub action: Action,
}

/// The answer to an [`ApprovalRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    Approve,
    /// Apply only these hunks of a proposed edit; the rest are rejected.
    ApproveHunks {
        hunks: Vec<HunkId>,
        /// Why the other hunks were rejected, for the model.
        reason: Option<String>,
    },
    Reject {
        /// Written for the model: why, and what to do instead.
        reason: Option<String>,
    },
    /// The user rewrote the proposed file (in their editor); `content` is what lands.
    Edited {
        content: String,
    },
}

/// What a mode says about an action before anyone is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Refused outright; `reason` is written for the model.
    Deny {
        reason: String,
    },
    /// A person must decide; `why` says which rule asks (shown to them).
    Ask {
        why: String,
    },
}

/// The user's `[policy]` settings. Read from the user's config file only: a project
/// cannot loosen its own policy.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Globs added to the default protected paths; `!glob` unprotects what it matches.
    #[serde(default)]
    pub protected: ProtectedPaths,
    /// Command classes `auto` mode runs without asking, besides read-only commands and
    /// ordinary workspace writes (e.g. `["network"]`).
    #[serde(default)]
    pub auto_allow: Vec<CommandClass>,
}

/// What the policy found out about an action before any mode is applied.
#[derive(Clone, Debug, PartialEq)]
pub enum Assessment {
    Write {
        /// The path as the user sees it.
        display: String,
        protection: Option<Protection>,
    },
    Command(Classification),
    /// duet cannot see what an external tool changes; the rule is all it knows.
    External(ExternalCall),
}

impl Assessment {
    /// The protected paths the action would change.
    pub fn protected_paths(&self) -> &[Protection] {
        match self {
            Assessment::Write { protection, .. } => protection.as_slice(),
            Assessment::Command(classification) => &classification.protected,
            Assessment::External(_) => &[],
        }
    }
}

/// The rules for one workspace: protected paths and what `auto` mode may run.
#[derive(Clone, Debug)]
pub struct Policy {
    root: PathBuf,
    protected: ProtectedPaths,
    auto_allow: Vec<CommandClass>,
}

impl Policy {
    /// The policy for the workspace at `root` (absolute, canonical). The repository's
    /// active hooks directory (`core.hooksPath`, read from its configuration now,
    /// without running anything) is protected too when it lies in the workspace.
    pub fn new(root: &Path, config: PolicyConfig) -> Self {
        let mut protected = config.protected;
        if let Some(hooks) = hooks_dir(root) {
            protected.protect_hooks_dir(&hooks);
        }
        Self {
            root: root.to_path_buf(),
            protected,
            auto_allow: config.auto_allow,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The protected paths, the hooks directory included.
    pub fn protected(&self) -> &ProtectedPaths {
        &self.protected
    }

    /// The protected paths that exist in the workspace now, relative to its root (a
    /// bounded walk: see [`ProtectedPaths::existing_in`]).
    pub fn existing_protected(&self) -> ExistingProtected {
        self.protected.existing_in(&self.root)
    }

    /// Classifies `action`; `tracked` says which files git tracks.
    pub fn assess(&self, action: &Action, tracked: &dyn TrackedFiles) -> Assessment {
        match action {
            Action::WriteFile { path, display, .. } => Assessment::Write {
                display: display.clone(),
                protection: path
                    .strip_prefix(&self.root)
                    .ok()
                    .and_then(|relative| self.protected.check(relative)),
            },
            Action::RunCommand { command, dir, .. } => {
                let context = CommandContext {
                    root: &self.root,
                    cwd: dir,
                    tracked,
                    protected: &self.protected,
                };
                Assessment::Command(classify(command, &context))
            }
            Action::CallExternalTool { call, .. } => Assessment::External(call.clone()),
        }
    }

    /// What `mode` says about an assessed action before anyone is asked.
    pub fn judge(&self, mode: ApprovalMode, assessment: &Assessment) -> Verdict {
        match assessment {
            Assessment::Write {
                display,
                protection,
            } => judge_write(mode, display, protection.as_ref()),
            Assessment::Command(classification) => self.judge_command(mode, classification),
            Assessment::External(call) => external::judge(mode, call),
        }
    }

    fn judge_command(&self, mode: ApprovalMode, classification: &Classification) -> Verdict {
        if mode == ApprovalMode::ReadOnly {
            return if classification.class == CommandClass::ReadOnly {
                Verdict::Allow
            } else {
                Verdict::Deny {
                    reason: format!(
                        "duet is in read-only mode and this is {} ({}), so it was not run. \
                         Only read-only commands (ls, cat, rg, git status/log/diff, ...) run \
                         in this mode; builds and tests run the project's code and do not.",
                        classification.class.described(),
                        classification.summary()
                    ),
                }
            };
        }
        if !classification.protected.is_empty() {
            return Verdict::Ask {
                why: protected_why(&classification.protected),
            };
        }
        let allowed = |class: CommandClass| match mode {
            ApprovalMode::Auto => {
                class <= CommandClass::WritesWorkspace || self.auto_allow.contains(&class)
            }
            _ => class == CommandClass::ReadOnly,
        };
        let blocking: Vec<&Reason> = classification
            .reasons
            .iter()
            .filter(|reason| !allowed(reason.class))
            .collect();
        let Some(top) = blocking.iter().map(|reason| reason.class).max() else {
            return Verdict::Allow;
        };
        let reasons: Vec<String> = blocking
            .iter()
            .filter(|reason| reason.class == top)
            .map(ToString::to_string)
            .collect();
        Verdict::Ask {
            why: format!(
                "{mode} mode asks before {}: {}",
                top.described(),
                reasons.join("; ")
            ),
        }
    }
}

fn judge_write(mode: ApprovalMode, display: &str, protection: Option<&Protection>) -> Verdict {
    match (mode, protection) {
        (ApprovalMode::ReadOnly, _) => Verdict::Deny {
            reason: format!(
                "duet is in read-only mode, so {display} was not written. Do not retry writes \
                 or edits; describe the change you would make instead."
            ),
        },
        (_, Some(protection)) => Verdict::Ask {
            why: protected_why(std::slice::from_ref(protection)),
        },
        (ApprovalMode::Ask, None) => Verdict::Ask {
            why: "ask mode: every edit needs approval".into(),
        },
        (ApprovalMode::AutoEdit | ApprovalMode::Auto, None) => Verdict::Allow,
    }
}

/// The repository's `core.hooksPath` relative to `root`, when it is set and lies in the
/// workspace. Read with libgit2, which runs nothing.
fn hooks_dir(root: &Path) -> Option<PathBuf> {
    let repo = git2::Repository::discover(root).ok()?;
    let configured = repo.config().ok()?.get_path("core.hooksPath").ok()?;
    // A relative hooks path is relative to where hooks run: the top of the work tree.
    let absolute = match repo.workdir() {
        Some(workdir) => workdir.join(configured),
        None => repo.path().join(configured),
    };
    let absolute = absolute.canonicalize().unwrap_or(absolute);
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let relative = absolute.strip_prefix(&root).ok()?;
    let plain = relative.components().next().is_some()
        && relative
            .components()
            .all(|component| matches!(component, std::path::Component::Normal(_)));
    plain.then(|| relative.to_path_buf())
}

fn protected_why(protections: &[Protection]) -> String {
    let named: Vec<String> = protections.iter().map(ToString::to_string).collect();
    format!(
        "{}; changes to protected paths always need approval",
        named.join(", ")
    )
}

/// Decides whether a side effect may happen. Called by tools right before they act.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, request: ApprovalRequest) -> Decision;
}

/// Decides from the mode alone. Where the mode would ask, nobody is there to answer,
/// so it refuses and says so.
pub struct ModeApprover {
    mode: ApprovalMode,
    policy: Policy,
    tracked: Box<dyn TrackedFiles>,
}

impl ModeApprover {
    /// Judges by `policy`, looking tracked files up in the workspace's git index.
    pub fn new(mode: ApprovalMode, policy: Policy) -> Self {
        let tracked = Box::new(GitIndex::new(policy.root()));
        Self {
            mode,
            policy,
            tracked,
        }
    }
}

/// The reason given when a decision needs a person and none is present.
pub const NO_ONE_TO_APPROVE: &str = "no one to approve in headless mode; the user can re-run \
     with --yes or a more permissive --approval mode";

#[async_trait::async_trait]
impl Approver for ModeApprover {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        let assessment = self.policy.assess(&request.action, self.tracked.as_ref());
        match self.policy.judge(self.mode, &assessment) {
            Verdict::Allow => Decision::Approve,
            Verdict::Deny { reason } => Decision::Reject {
                reason: Some(reason),
            },
            Verdict::Ask { why } => Decision::Reject {
                reason: Some(format!("{why}; {NO_ONE_TO_APPROVE}")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const ROOT: &str = "/repo";

    /// Tracked files for tests: exactly these root-relative paths.
    struct Tracked(&'static [&'static str]);

    impl TrackedFiles for Tracked {
        fn is_tracked(&self, path: &Path) -> bool {
            self.0.iter().any(|tracked| Path::new(tracked) == path)
        }
    }

    fn policy(config: PolicyConfig) -> Policy {
        Policy::new(Path::new(ROOT), config)
    }

    fn write(path: &str) -> Action {
        Action::WriteFile {
            path: Path::new(ROOT).join(path),
            display: path.into(),
            requested: None,
            before: None,
            after: "x".into(),
        }
    }

    fn run(command: &str) -> Action {
        Action::RunCommand {
            command: command.into(),
            cwd: "./".into(),
            dir: PathBuf::from(ROOT),
        }
    }

    fn verdict(policy: &Policy, mode: ApprovalMode, action: &Action) -> Verdict {
        let assessment = policy.assess(action, &Tracked(&["src/lib.rs", "Cargo.toml"]));
        policy.judge(mode, &assessment)
    }

    fn kind(verdict: Verdict) -> &'static str {
        match verdict {
            Verdict::Allow => "allow",
            Verdict::Deny { .. } => "deny",
            Verdict::Ask { .. } => "ask",
        }
    }

    /// One command of each class, in the order of [`CommandClass`].
    const ONE_OF_EACH_CLASS: [&str; 5] = [
        "git status",
        "touch notes.txt",
        "curl https://example.com",
        "./run-me.sh",
        "rm -rf build",
    ];

    #[test]
    fn each_command_stands_for_its_class() {
        let policy = policy(PolicyConfig::default());
        let classes = [
            CommandClass::ReadOnly,
            CommandClass::WritesWorkspace,
            CommandClass::Network,
            CommandClass::Unknown,
            CommandClass::Destructive,
        ];
        for (command, class) in ONE_OF_EACH_CLASS.into_iter().zip(classes) {
            let Assessment::Command(classification) = policy.assess(&run(command), &Tracked(&[]))
            else {
                panic!("a command is assessed as a command");
            };
            assert_eq!(classification.class, class, "{command}");
        }
    }

    #[test]
    fn each_mode_lets_through_what_it_promises() {
        // Columns: an edit, then read-only, writes-workspace, network, unknown, destructive.
        let table = [
            (
                ApprovalMode::Ask,
                ["ask", "allow", "ask", "ask", "ask", "ask"],
            ),
            (
                ApprovalMode::AutoEdit,
                ["allow", "allow", "ask", "ask", "ask", "ask"],
            ),
            (
                ApprovalMode::Auto,
                ["allow", "allow", "allow", "ask", "ask", "ask"],
            ),
            (
                ApprovalMode::ReadOnly,
                ["deny", "allow", "deny", "deny", "deny", "deny"],
            ),
        ];
        let policy = policy(PolicyConfig::default());
        for (mode, expected) in table {
            let mut got = vec![kind(verdict(&policy, mode, &write("a.txt")))];
            got.extend(
                ONE_OF_EACH_CLASS
                    .iter()
                    .map(|command| kind(verdict(&policy, mode, &run(command)))),
            );
            assert_eq!(got, expected, "{mode}");
        }
    }

    #[test]
    fn auto_allow_lets_auto_mode_run_the_listed_classes_only() {
        let policy = policy(PolicyConfig {
            auto_allow: vec![CommandClass::Network],
            ..PolicyConfig::default()
        });
        let auto = |command: &str| kind(verdict(&policy, ApprovalMode::Auto, &run(command)));
        assert_eq!(auto("curl https://example.com"), "allow");
        assert_eq!(auto("./run-me.sh"), "ask");
        assert_eq!(auto("rm -rf build"), "ask");
        assert_eq!(
            kind(verdict(
                &policy,
                ApprovalMode::Ask,
                &run("curl https://example.com")
            )),
            "ask",
            "auto_allow is for auto mode only"
        );
    }

    #[test]
    fn the_question_names_the_class_that_is_not_allowed_and_why() {
        let policy = policy(PolicyConfig {
            auto_allow: vec![CommandClass::Unknown],
            ..PolicyConfig::default()
        });
        let Verdict::Ask { why } = verdict(
            &policy,
            ApprovalMode::Auto,
            &run("./run-me.sh && git push origin main"),
        ) else {
            panic!("a push asks in auto mode without network in auto_allow");
        };
        assert_eq!(
            why,
            "auto mode asks before a command that uses the network: `git push origin main` \
             pushes to a git remote"
        );
    }

    #[test]
    fn read_only_refusals_say_what_the_command_does() {
        let policy = policy(PolicyConfig::default());
        let Verdict::Deny { reason } =
            verdict(&policy, ApprovalMode::ReadOnly, &run("rm -rf build"))
        else {
            panic!("read-only mode ran rm -rf");
        };
        assert!(reason.contains("read-only mode"), "{reason}");
        assert!(reason.contains("a destructive command"), "{reason}");
        assert!(
            reason.contains("deletes build and everything in it"),
            "{reason}"
        );
    }

    #[test]
    fn protected_paths_ask_in_every_mode_that_writes() {
        let policy = policy(PolicyConfig {
            auto_allow: vec![
                CommandClass::Network,
                CommandClass::Unknown,
                CommandClass::Destructive,
            ],
            ..PolicyConfig::default()
        });
        for mode in [
            ApprovalMode::Ask,
            ApprovalMode::AutoEdit,
            ApprovalMode::Auto,
        ] {
            for action in [write("Cargo.lock"), run("echo ok > Cargo.lock")] {
                let Verdict::Ask { why } = verdict(&policy, mode, &action) else {
                    panic!("{mode}: a protected change was decided without a person: {action:?}");
                };
                assert!(why.contains("Cargo.lock is protected (lockfile)"), "{why}");
            }
        }
        assert_eq!(
            kind(verdict(&policy, ApprovalMode::ReadOnly, &write(".env"))),
            "deny"
        );
        assert_eq!(
            kind(verdict(
                &policy,
                ApprovalMode::ReadOnly,
                &run("cat Cargo.lock")
            )),
            "allow",
            "reading a protected file is fine"
        );
    }

    #[test]
    fn configured_patterns_protect_and_unprotect() {
        let policy = policy(PolicyConfig {
            protected: ProtectedPaths::with_patterns(&["secrets/**".into(), "!Cargo.lock".into()])
                .unwrap(),
            ..PolicyConfig::default()
        });
        assert_eq!(
            kind(verdict(&policy, ApprovalMode::Auto, &write("Cargo.lock"))),
            "allow"
        );
        assert_eq!(
            kind(verdict(&policy, ApprovalMode::Auto, &write("secrets/a"))),
            "ask"
        );
    }

    /// A new repository whose `core.hooksPath` is `hooks`.
    fn repository_with_hooks_in(hooks: &str) -> (tempfile::TempDir, PathBuf, git2::Repository) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let repo = git2::Repository::init(&root).unwrap();
        repo.config()
            .unwrap()
            .set_str("core.hooksPath", hooks)
            .unwrap();
        (dir, root, repo)
    }

    #[test]
    fn the_repositorys_hooks_directory_is_protected_from_its_config() {
        let (_dir, root, repo) = repository_with_hooks_in("tools/hooks");
        let policy = Policy::new(&root, PolicyConfig::default());
        let write = Action::WriteFile {
            path: root.join("tools/hooks/pre-commit"),
            display: "tools/hooks/pre-commit".into(),
            requested: None,
            before: None,
            after: "x".into(),
        };
        let Verdict::Ask { why } =
            policy.judge(ApprovalMode::Auto, &policy.assess(&write, &Tracked(&[])))
        else {
            panic!("auto mode wrote the active hooks directory unasked");
        };
        assert!(
            why.contains("tools/hooks/pre-commit is protected (git hooks)"),
            "{why}"
        );
        let command = Action::RunCommand {
            command: "echo x > tools/hooks/pre-push".into(),
            cwd: "./".into(),
            dir: root.clone(),
        };
        assert!(matches!(
            policy.judge(ApprovalMode::Auto, &policy.assess(&command, &Tracked(&[]))),
            Verdict::Ask { .. }
        ));

        // Outside the workspace, or not set: nothing more is protected.
        repo.config()
            .unwrap()
            .set_str("core.hooksPath", "/elsewhere/hooks")
            .unwrap();
        let policy = Policy::new(&root, PolicyConfig::default());
        assert!(
            policy
                .protected()
                .check(Path::new("tools/hooks/x"))
                .is_none()
        );
    }

    #[test]
    fn existing_protected_paths_include_the_hooks_directory() {
        let (_dir, root, _repo) = repository_with_hooks_in("tools/hooks");
        std::fs::create_dir_all(root.join("tools/hooks")).unwrap();
        std::fs::write(root.join("tools/hooks/pre-commit"), "x").unwrap();
        std::fs::write(root.join("tools/build.sh"), "x").unwrap();
        let existing = Policy::new(&root, PolicyConfig::default()).existing_protected();
        assert_eq!(
            existing.paths,
            [PathBuf::from(".git"), PathBuf::from("tools/hooks")]
        );
        assert!(existing.complete);
    }

    #[test]
    fn overwriting_a_tracked_file_is_destructive() {
        let policy = policy(PolicyConfig::default());
        let class = |command: &str| match policy.assess(&run(command), &Tracked(&["src/lib.rs"])) {
            Assessment::Command(classification) => classification.class,
            Assessment::Write { .. } | Assessment::External(_) => unreachable!(),
        };
        assert_eq!(class("echo x > src/lib.rs"), CommandClass::Destructive);
        assert_eq!(class("echo x >> src/lib.rs"), CommandClass::WritesWorkspace);
        assert_eq!(class("echo x > src/new.rs"), CommandClass::WritesWorkspace);
    }

    #[tokio::test]
    async fn asking_without_a_person_refuses_with_the_rule_and_the_headless_reason() {
        let dir = tempfile::tempdir().unwrap();
        let approver = ModeApprover::new(
            ApprovalMode::Auto,
            Policy::new(dir.path(), PolicyConfig::default()),
        );
        let request = ApprovalRequest {
            call_id: "c1".into(),
            action: Action::RunCommand {
                command: "rm -rf build".into(),
                cwd: "./".into(),
                dir: dir.path().to_path_buf(),
            },
        };
        let Decision::Reject {
            reason: Some(reason),
        } = approver.decide(request).await
        else {
            panic!("auto mode ran rm -rf without a person");
        };
        assert!(
            reason.contains("auto mode asks before a destructive command"),
            "{reason}"
        );
        assert!(reason.contains(NO_ONE_TO_APPROVE), "{reason}");
    }

    #[test]
    fn policy_config_reads_protected_and_auto_allow() {
        let config: PolicyConfig =
            toml::from_str("protected = [\"secrets/**\"]\nauto_allow = [\"network\", \"unknown\"]")
                .unwrap();
        assert_eq!(
            config.auto_allow,
            [CommandClass::Network, CommandClass::Unknown]
        );
        assert!(config.protected.check(Path::new("secrets/x")).is_some());
        assert!(toml::from_str::<PolicyConfig>("auto_allow = [\"everything\"]").is_err());
    }

    #[test]
    fn modes_round_trip_through_their_names() {
        for mode in ApprovalMode::ALL {
            assert_eq!(mode.to_string().parse::<ApprovalMode>(), Ok(mode));
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{mode}\""));
        }
        assert_eq!(
            ApprovalMode::ALL.map(|mode| mode.to_string()),
            ["ask", "auto-edit", "auto", "read-only"]
        );
        assert_eq!(
            <ApprovalMode as clap::ValueEnum>::value_variants(),
            ApprovalMode::ALL
        );
        assert_eq!(
            "yolo".parse::<ApprovalMode>(),
            Err("unknown approval mode `yolo` (valid: ask, auto-edit, auto, read-only)".into())
        );
    }

    #[test]
    fn decisions_serialize_as_tagged_objects() {
        let decision = Decision::ApproveHunks {
            hunks: vec![HunkId("h1".into())],
            reason: Some("not that one".into()),
        };
        assert_eq!(
            serde_json::to_value(&decision).unwrap(),
            serde_json::json!({"kind": "approve_hunks", "hunks": ["h1"], "reason": "not that one"})
        );
    }
}

//! The sandbox's reports, checks and settings; the launcher itself is exercised
//! through the real binary in `tests/suite/sandbox.rs` and `tests/suite/containment.rs`.

use std::path::PathBuf;

use pretty_assertions::assert_eq;

use super::host::{Plan, protected_paths, read_report};
use super::report::{
    Confinement, Layer, LayerName, NetworkIsolation, Protections, REPORT_FILE, Report, WriteLimits,
};
use super::*;
use crate::policy::ProtectedPaths;

fn confinement(network: bool, abi: Option<u8>) -> Confinement {
    let mut confinement = Protections::example(network, abi.is_some()).confinement;
    if let Some(abi) = abi {
        confinement.writes = WriteLimits::Landlock { abi };
    }
    confinement
}

#[test]
fn a_program_must_keep_every_layer_the_probe_found() {
    let promised = confinement(true, Some(5));
    assert_eq!(confinement(true, Some(5)).keeps(&promised), Ok(()));
    let lost_network = confinement(false, Some(5)).keeps(&promised).unwrap_err();
    assert!(lost_network.contains("network"), "{lost_network}");
    let lost_writes = confinement(true, None).keeps(&promised).unwrap_err();
    assert!(lost_writes.contains("writes"), "{lost_writes}");
    let weaker = confinement(true, Some(3)).keeps(&promised).unwrap_err();
    assert!(weaker.contains("ABI 5 to 3"), "{weaker}");
    let mut no_filter = confinement(true, Some(5));
    no_filter.syscalls = Layer::missing("kernel said no");
    let lost = no_filter.keeps(&promised).unwrap_err();
    assert_eq!(lost, "syscalls failed: kernel said no");
}

#[test]
fn more_than_promised_is_fine() {
    let promised = confinement(false, None);
    assert_eq!(confinement(true, Some(5)).keeps(&promised), Ok(()));
}

#[test]
fn the_badge_names_how_much_holds() {
    assert_eq!(Protections::example(true, true).badge(), "on");
    assert_eq!(Protections::example(true, false).badge(), "partial");
    let off = Protections {
        confinement: Confinement::none("off"),
        refused: None,
        environment_passed: 0,
        environment_withheld: 0,
    };
    assert_eq!(off.badge(), "off");
    let refused = Protections {
        refused: Some("syscalls: no filter".into()),
        ..Protections::example(true, true)
    };
    assert_eq!(refused.badge(), "blocked");
}

#[test]
fn a_network_the_user_opened_is_not_a_gap() {
    let mut protections = Protections::example(true, true);
    protections.confinement.network = NetworkIsolation::Allowed;
    assert!(protections.gaps().is_empty());
    assert!(protections.summary().contains("network allowed"));
}

#[test]
fn the_summary_names_every_layer() {
    let protections = Protections::example(false, true);
    assert_eq!(
        protections.summary(),
        "partial · own namespaces · network open · writes limited (Landlock ABI 5) · \
         protected paths read-only · credentials hidden · no capabilities · syscall filter · \
         environment 12 passed, 3 withheld"
    );
    let old = WriteLimits::Landlock { abi: 2 }.to_string();
    assert!(old.contains("truncating"), "{old}");
}

#[test]
fn gaps_say_why_each_missing_layer_is_missing() {
    assert!(Protections::example(true, true).gaps().is_empty());
    assert_eq!(
        Protections::example(true, false).gaps(),
        ["writes: not in this example"]
    );
    let off = Protections {
        confinement: Confinement::none("turned off"),
        refused: None,
        environment_passed: 0,
        environment_withheld: 0,
    };
    assert_eq!(off.gaps(), ["no sandbox: turned off"]);
    let refused = Protections {
        refused: Some("writes: no Landlock".into()),
        ..Protections::example(true, false)
    };
    assert_eq!(
        refused.gaps(),
        [
            "commands cannot run: writes: no Landlock",
            "writes: not in this example"
        ]
    );
}

#[test]
fn unaccepted_gaps_leave_out_accepted_layers() {
    let mut confinement = confinement(true, Some(5));
    confinement.syscalls = Layer::missing("no filter");
    confinement.credentials = Layer::missing("no mount");
    assert_eq!(
        confinement.unaccepted_gaps(&[LayerName::Syscalls]),
        ["credentials: no mount"]
    );
}

#[test]
fn reports_round_trip_through_json() {
    for original in [
        Report::Applied(confinement(true, Some(5))),
        Report::Refused(confinement(false, None)),
        Report::Failed("cannot run zsh".into()),
    ] {
        let text = serde_json::to_string(&original).unwrap();
        assert_eq!(serde_json::from_str::<Report>(&text).unwrap(), original);
    }
}

#[test]
fn a_failed_or_refused_launch_is_an_error_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let failed = serde_json::to_string(&Report::Failed("cannot run zsh".into())).unwrap();
    std::fs::write(dir.path().join(REPORT_FILE), failed).unwrap();
    let error = read_report(dir.path()).unwrap_err();
    assert!(error.contains("cannot run zsh"), "{error}");
    let mut lacking = confinement(true, Some(5));
    lacking.protected = Layer::missing("mount refused");
    let refused = serde_json::to_string(&Report::Refused(lacking)).unwrap();
    std::fs::write(dir.path().join(REPORT_FILE), refused).unwrap();
    let error = read_report(dir.path()).unwrap_err();
    assert!(error.contains("protected: mount refused"), "{error}");
}

#[test]
fn a_missing_or_garbled_report_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = read_report(dir.path()).unwrap_err();
    assert!(missing.contains(REPORT_FILE), "{missing}");
    std::fs::write(dir.path().join(REPORT_FILE), "{").unwrap();
    let garbled = read_report(dir.path()).unwrap_err();
    assert!(garbled.contains("unreadable"), "{garbled}");
}

#[tokio::test]
async fn a_launcher_that_cannot_run_refuses_and_says_why() {
    let config = SandboxConfig {
        launcher: Some(PathBuf::from("/nonexistent/duet")),
        ..SandboxConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let Err(refusal) = Plan::probe(
        &config,
        dir.path(),
        dir.path(),
        dir.path(),
        &ProtectedPaths::default(),
    )
    .await
    else {
        panic!("a missing launcher cannot be probed");
    };
    assert!(!refusal.confinement.network_isolated());
    assert!(refusal.why.contains("/nonexistent/duet"), "{}", refusal.why);
}

#[tokio::test]
async fn a_sandbox_that_refuses_stops_every_program_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(
        dir.path(),
        Some(SandboxConfig {
            launcher: Some(PathBuf::from("/nonexistent/duet")),
            ..SandboxConfig::default()
        }),
        ProtectedPaths::default(),
        &crate::shell::environment::EnvironmentPolicy::default(),
    );
    let error = sandbox
        .command("true", &[], dir.path(), &[])
        .await
        .err()
        .unwrap();
    assert!(error.0.contains("/nonexistent/duet"), "{error}");
    assert_eq!(sandbox.protections().await.badge(), "blocked");
}

#[test]
fn protected_paths_are_git_duet_and_what_the_patterns_cover_near_the_top() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for dir in [
        ".git/hooks",
        ".duet",
        ".github/workflows",
        ".github/ISSUE_TEMPLATE",
        "src",
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for file in [
        ".env",
        "Cargo.lock",
        "src/main.rs",
        "README.md",
        "env.example",
    ] {
        std::fs::write(root.join(file), "x").unwrap();
    }
    // Protected names that are links: protected where they lead when that is inside.
    std::os::unix::fs::symlink("env.example", root.join(".env.local")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", root.join(".env.host")).unwrap();
    let protected = ProtectedPaths::with_patterns(&["!Cargo.lock".into()]).unwrap();
    assert_eq!(
        protected_paths(&root, &protected),
        [".duet", ".env", ".git", ".github/workflows", "env.example"].map(|path| root.join(path))
    );
}

#[test]
fn a_hooks_directory_inside_the_workspace_is_protected() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repository = git2::Repository::init(&root).unwrap();
    repository
        .config()
        .unwrap()
        .set_str("core.hooksPath", "tools/hooks")
        .unwrap();
    std::fs::create_dir_all(root.join("tools/hooks")).unwrap();
    let paths = protected_paths(&root, &ProtectedPaths::default());
    assert!(paths.contains(&root.join("tools/hooks")), "{paths:?}");
}

#[test]
fn created_entries_are_judged_only_between_two_whole_listings() {
    let listed = |names: &[&str]| Some(names.iter().map(PathBuf::from).collect::<Vec<_>>());
    let before = listed(&[".git"]);
    let after = listed(&[".env", ".git"]);
    assert_eq!(
        Sandbox::created_between(before.as_deref(), after.as_deref()),
        [PathBuf::from(".env")]
    );
    // A listing missing (not settled, or unreadable) never makes what exists look new.
    assert!(Sandbox::created_between(None, after.as_deref()).is_empty());
    assert!(Sandbox::created_between(before.as_deref(), None).is_empty());
}

#[test]
fn layers_are_named_alike_in_config_files_for_the_launcher_and_in_messages() {
    let names = [
        "namespaces",
        "network",
        "writes",
        "capabilities",
        "syscalls",
        "protected",
        "credentials",
    ];
    assert_eq!(LayerName::ALL.map(|layer| layer.to_string()), names);
    assert_eq!(
        <LayerName as clap::ValueEnum>::value_variants(),
        LayerName::ALL
    );
    for (layer, name) in LayerName::ALL.into_iter().zip(names) {
        assert_eq!(name.parse::<LayerName>(), Ok(layer));
        assert_eq!(
            serde_json::to_string(&layer).unwrap(),
            format!("\"{name}\"")
        );
    }
    assert_eq!(
        "seccomp".parse::<LayerName>(),
        Err(
            "`seccomp` is not a layer; the layers are namespaces, network, writes, \
             capabilities, syscalls, protected, credentials"
                .into()
        )
    );
}

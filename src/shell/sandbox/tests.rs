//! The sandbox's reports, checks and settings; the launcher itself is exercised
//! through the real binary in `tests/suite/sandbox.rs`.

use pretty_assertions::assert_eq;

use super::*;

fn confinement(network: bool, abi: Option<u8>) -> Confinement {
    Confinement {
        network: if network {
            NetworkIsolation::Isolated {
                loopback_up: true,
                locked: true,
            }
        } else {
            NetworkIsolation::Open {
                why: "no namespaces".into(),
            }
        },
        writes: match abi {
            Some(abi) => WriteLimits::Landlock { abi },
            None => WriteLimits::Unlimited {
                why: "no Landlock".into(),
            },
        },
    }
}

#[test]
fn a_shell_must_keep_every_protection_the_probe_found() {
    let promised = confinement(true, Some(5));
    assert_eq!(confinement(true, Some(5)).keeps(&promised), Ok(()));
    let lost_network = confinement(false, Some(5)).keeps(&promised).unwrap_err();
    assert!(lost_network.contains("network"), "{lost_network}");
    let lost_writes = confinement(true, None).keeps(&promised).unwrap_err();
    assert!(lost_writes.contains("no Landlock"), "{lost_writes}");
    let weaker = confinement(true, Some(3)).keeps(&promised).unwrap_err();
    assert!(weaker.contains("ABI 5 to 3"), "{weaker}");
}

#[test]
fn more_than_promised_is_fine() {
    let promised = confinement(false, None);
    assert_eq!(confinement(true, Some(5)).keeps(&promised), Ok(()));
}

#[test]
fn the_badge_names_what_is_active() {
    let badge = |network, abi| Protections::new(confinement(network, abi), 0).badge();
    assert_eq!(badge(true, Some(5)), "net+fs");
    assert_eq!(badge(true, None), "net");
    assert_eq!(badge(false, Some(1)), "fs");
    assert_eq!(badge(false, None), "off");
}

#[test]
fn the_summary_and_details_say_why() {
    let protections = Protections::new(confinement(false, Some(5)), 1);
    assert_eq!(
        protections.summary(),
        "network open · writes limited (Landlock ABI 5) · 1 secret scrubbed"
    );
    assert_eq!(protections.network.to_string(), "open: no namespaces");
    let root_only = NetworkIsolation::Isolated {
        loopback_up: false,
        locked: false,
    };
    let text = root_only.to_string();
    assert!(text.contains("no interface up"), "{text}");
    assert!(text.contains("root shell could rejoin"), "{text}");
    let old = WriteLimits::Landlock { abi: 2 }.to_string();
    assert!(old.contains("truncating"), "{old}");
}

#[test]
fn reports_round_trip_through_json() {
    for original in [
        Report::Applied(confinement(true, Some(5))),
        Report::Failed("cannot run zsh".into()),
    ] {
        let text = serde_json::to_string(&original).unwrap();
        assert_eq!(serde_json::from_str::<Report>(&text).unwrap(), original);
    }
}

#[test]
fn a_failed_launch_is_an_error_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let failed = serde_json::to_string(&Report::Failed("cannot run zsh".into())).unwrap();
    std::fs::write(dir.path().join(REPORT_FILE), failed).unwrap();
    let error = read_report(dir.path()).unwrap_err();
    assert!(error.contains("cannot run zsh"), "{error}");
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
async fn a_launcher_that_cannot_run_leaves_the_shell_unconfined_and_says_why() {
    let config = SandboxConfig {
        launcher: Some(PathBuf::from("/nonexistent/duet")),
        ..SandboxConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let Err(confinement) = Plan::probe(&config, dir.path(), dir.path()).await else {
        panic!("a missing launcher cannot be probed");
    };
    assert!(!confinement.network_isolated());
    assert!(!confinement.writes_limited());
    let text = confinement.network.to_string();
    assert!(text.contains("/nonexistent/duet"), "{text}");
}

#[test]
fn a_workspace_inside_a_repository_may_write_its_git_dir() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let sub = repo.join("crates/core");
    std::fs::create_dir_all(&sub).unwrap();
    assert_eq!(repository_dirs(&sub), [repo.join(".git")]);
    // At the root, the git dir is inside the workspace already.
    assert_eq!(repository_dirs(&repo), Vec::<PathBuf>::new());
}

#[test]
fn a_worktree_may_write_its_own_and_the_shared_git_dir() {
    let main = tempfile::tempdir().unwrap();
    let main = main.path().canonicalize().unwrap();
    let worktree_git = main.join(".git/worktrees/feature");
    std::fs::create_dir_all(&worktree_git).unwrap();
    std::fs::write(worktree_git.join("commondir"), "../..\n").unwrap();
    let worktree = tempfile::tempdir().unwrap();
    std::fs::write(
        worktree.path().join(".git"),
        format!("gitdir: {}\n", worktree_git.display()),
    )
    .unwrap();
    assert_eq!(
        repository_dirs(worktree.path()),
        [main.join(".git"), worktree_git]
    );
}

#[test]
fn gaps_say_why_each_missing_protection_is_missing() {
    assert!(
        Protections::new(confinement(true, Some(5)), 0)
            .gaps()
            .is_empty()
    );
    assert_eq!(
        Protections::new(confinement(true, None), 0).gaps(),
        ["writes unlimited: no Landlock"]
    );
    assert_eq!(
        Protections::new(confinement(false, None), 0).gaps(),
        [
            "network open: no namespaces",
            "writes unlimited: no Landlock"
        ]
    );
    assert_eq!(
        Protections::new(Confinement::none("turned off"), 0).gaps(),
        ["no sandbox: turned off"]
    );
}

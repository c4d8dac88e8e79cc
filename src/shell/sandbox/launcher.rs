//! The launcher side of the sandbox: `duet __sandbox [options] -- PROGRAM ARGS...`.
//!
//! It runs in two stages, both this binary. The outer stage creates the namespaces
//! (a new process namespace only takes effect for children) and starts the inner
//! stage, which is the first process of the new process namespace. The inner stage
//! builds the filesystem view, gives up every capability, limits writes and system
//! calls, writes the report, and only then starts the program. It stays as the
//! namespace's init: it reaps orphans and ends with the program's status. When it
//! ends, the kernel ends every process left in the namespace.
//!
//! Owns: the launcher's command line and the order of the steps. Does not own: the
//! mechanisms (the platform module) or whether a probe's report is good enough (the
//! host side's `Plan`, which started the launcher).
//! Invariant: the report says exactly what was applied and is written before the
//! program starts; a layer missing that the command line requires, or that the
//! user's config does not accept, means the program never starts.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Seek as _, Write as _};
use std::path::{Path, PathBuf};

use super::report::{Confinement, LayerName, NetworkIsolation, REPORT_FILE, Report};

/// The hidden subcommand of the `duet` binary that runs the launcher.
pub const SUBCOMMAND: &str = "__sandbox";

/// Arguments of `duet __sandbox`, built by the sandbox's `Plan`; not meant for people.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct LauncherArgs {
    /// The workspace, writable unless `--workspace-read-only`.
    #[arg(long, value_name = "DIR")]
    workspace: PathBuf,
    /// The directory shown as `/tmp`, writable.
    #[arg(long, value_name = "DIR")]
    tmp: PathBuf,
    /// More writable paths.
    #[arg(long, value_name = "PATH")]
    writable: Vec<PathBuf>,
    /// Paths inside the workspace made read-only.
    #[arg(long, value_name = "PATH")]
    read_only: Vec<PathBuf>,
    /// Paths hidden behind an empty directory or file.
    #[arg(long, value_name = "PATH")]
    hide: Vec<PathBuf>,
    /// Keep the host's network.
    #[arg(long)]
    allow_network: bool,
    /// Share the network namespace (its loopback) of this sandboxed process, a launcher
    /// of this session, instead of making a new one: a background server is then
    /// reachable from the shell's later commands. Never the host's own network: the
    /// launcher refuses a process outside any network namespace of its own.
    #[arg(long, value_name = "PID", conflicts_with = "allow_network")]
    join_network: Option<i32>,
    /// The workspace is read-only too.
    #[arg(long)]
    workspace_read_only: bool,
    /// Layers the user accepts missing.
    #[arg(long, value_name = "LAYER", value_enum)]
    accept_missing: Vec<LayerName>,
    /// Layers that must hold whatever the user accepts: what the probe achieved.
    #[arg(long, value_name = "LAYER", value_enum)]
    require: Vec<LayerName>,
    /// The lowest Landlock ABI that will do.
    #[arg(long, value_name = "ABI")]
    min_landlock_abi: Option<u8>,
    /// Where to write the report of what was applied.
    #[arg(long, value_name = "DIR")]
    report_dir: PathBuf,
    /// Apply, report and exit instead of running a program.
    #[arg(long, conflicts_with = "command")]
    probe: bool,
    /// The inner stage, with what the outer stage achieved (JSON); set by the outer
    /// stage only.
    #[arg(long, value_name = "JSON", hide = true)]
    inner: Option<String>,
    /// The program to run confined, and its arguments.
    #[arg(last = true, required_unless_present = "probe")]
    command: Vec<OsString>,
}

/// What the host side decided, for building the command line.
pub(crate) struct Settings<'a> {
    pub workspace: &'a Path,
    pub private_tmp: &'a Path,
    pub writable: &'a [PathBuf],
    pub hidden: &'a [PathBuf],
    pub network: bool,
    pub accept_missing: &'a [LayerName],
}

/// What the outer stage hands the inner one.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct OuterResult {
    /// The namespaces created, or why not.
    pub namespaces: Result<String, String>,
    pub network: NetworkIsolation,
}

/// Why the launcher stopped before running the program.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot write the sandbox report in {dir}: {source}")]
    Report {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// A step that cannot be undone went wrong; running the program now would give it
    /// an environment nobody asked for.
    #[error("cannot set up the sandbox: {0}")]
    Setup(String),
    #[error("the sandbox lacks layers this program requires: {0}")]
    Refused(String),
    #[error("cannot run {program}: {source}")]
    Exec {
        program: String,
        source: std::io::Error,
    },
}

/// The launcher options for the settings (everything but the report and program).
pub(crate) fn options(settings: &Settings<'_>) -> Vec<OsString> {
    let mut options: Vec<OsString> = vec![
        "--workspace".into(),
        settings.workspace.into(),
        "--tmp".into(),
        settings.private_tmp.into(),
    ];
    let mut paths = |flag: &str, paths: &[PathBuf]| {
        for path in paths {
            options.push(flag.into());
            options.push(path.into());
        }
    };
    paths("--writable", settings.writable);
    paths("--hide", settings.hidden);
    if settings.network {
        options.push("--allow-network".into());
    }
    for layer in settings.accept_missing {
        options.push("--accept-missing".into());
        options.push(layer.to_string().into());
    }
    options
}

/// The options that make a launcher hold at least what `promised` holds.
pub(crate) fn requirements(promised: &Confinement) -> Vec<OsString> {
    let mut options = Vec::new();
    for (layer, gap) in promised.layers() {
        if gap.is_none() {
            options.push("--require".into());
            options.push(layer.to_string().into());
        }
    }
    if let super::WriteLimits::Landlock { abi } = promised.writes {
        options.push("--min-landlock-abi".into());
        options.push(abi.to_string().into());
    }
    options
}

/// Runs the stage the arguments name. Returns the exit status to end with: the
/// program's (or 0 after a probe); an error when the program did not start.
pub fn run(args: &LauncherArgs) -> Result<u8, LaunchError> {
    match &args.inner {
        None => outer(args),
        Some(outer) => inner(args, outer),
    }
}

/// Creates the namespaces and runs the inner stage in them, passing on its status.
fn outer(args: &LauncherArgs) -> Result<u8, LaunchError> {
    // Opened first: anything failing later is reported in it.
    let mut report = ReportFile::create(&args.report_dir)?;
    let outcome = platform::enter(args.allow_network, args.join_network).and_then(|entered| {
        let encoded = serde_json::to_string(&entered)
            .map_err(|error| LaunchError::Setup(format!("cannot encode a result: {error}")))?;
        platform::run_inner(&encoded)
    });
    match outcome {
        Ok(status) => {
            // The inner stage reports; an empty report means it died before it could.
            if report.is_empty() {
                let _ = report.write(&Report::Failed(
                    "the inner launcher ended without a report".into(),
                ));
            }
            Ok(status)
        }
        Err(error) => {
            let _ = report.write(&Report::Failed(error.to_string()));
            Err(error)
        }
    }
}

/// Builds the rest of the sandbox, reports, and runs the program as the namespace's
/// first process.
fn inner(args: &LauncherArgs, outer: &str) -> Result<u8, LaunchError> {
    let mut report = ReportFile::open(&args.report_dir)?;
    let outer: OuterResult = serde_json::from_str(outer)
        .map_err(|error| LaunchError::Setup(format!("unreadable outer result: {error}")))?;
    let confinement = platform::confine(args, outer);
    let refused = refusals(args, &confinement);
    if !refused.is_empty() {
        report.write(&Report::Refused(confinement))?;
        return Err(LaunchError::Refused(refused.join("; ")));
    }
    report.write(&Report::Applied(confinement))?;
    if args.probe {
        return Ok(0);
    }
    platform::run_as_init(&args.command).inspect_err(|error| {
        // The program never started: that, not the layers, is what to report.
        let _ = report.write(&Report::Failed(error.to_string()));
    })
}

/// The missing layers that stop the program: required by the command line, or not
/// accepted by the user's config; and a Landlock ABI below the minimum.
fn refusals(args: &LauncherArgs, confinement: &Confinement) -> Vec<String> {
    let mut refused: Vec<String> = confinement
        .layers()
        .into_iter()
        .filter(|(name, _)| args.require.contains(name) || !args.accept_missing.contains(name))
        .filter_map(|(name, gap)| gap.map(|why| format!("{name}: {why}")))
        .collect();
    if let (Some(minimum), super::WriteLimits::Landlock { abi }) =
        (args.min_landlock_abi, &confinement.writes)
        && *abi < minimum
    {
        refused.push(format!("writes: Landlock ABI {abi}, below {minimum}"));
    }
    refused
}

/// The report, rewritten in place when a later step fails.
struct ReportFile {
    file: File,
    dir: PathBuf,
}

impl ReportFile {
    fn create(dir: &Path) -> Result<Self, LaunchError> {
        Self::from_open(dir, File::create(dir.join(REPORT_FILE)))
    }

    fn open(dir: &Path) -> Result<Self, LaunchError> {
        Self::from_open(
            dir,
            std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(REPORT_FILE)),
        )
    }

    fn from_open(dir: &Path, file: std::io::Result<File>) -> Result<Self, LaunchError> {
        let file = file.map_err(|source| LaunchError::Report {
            dir: dir.to_path_buf(),
            source,
        })?;
        Ok(Self {
            file,
            dir: dir.to_path_buf(),
        })
    }

    fn is_empty(&self) -> bool {
        self.file
            .metadata()
            .map_or(true, |metadata| metadata.len() == 0)
    }

    fn write(&mut self, report: &Report) -> Result<(), LaunchError> {
        let text = serde_json::to_string(report)
            .map_err(|error| LaunchError::Setup(format!("cannot encode the report: {error}")))?;
        self.file
            .set_len(0)
            .and_then(|()| self.file.rewind())
            // Read back on this machine only: the page cache is enough, no fsync.
            .and_then(|()| self.file.write_all(text.as_bytes()))
            .map_err(|source| LaunchError::Report {
                dir: self.dir.clone(),
                source,
            })
    }
}

/// The paths a program may write to, as the inner stage sees them.
fn writable_paths(args: &LauncherArgs) -> Vec<PathBuf> {
    let mut paths = vec![PathBuf::from("/tmp")];
    if !args.workspace_read_only {
        paths.push(args.workspace.clone());
    }
    paths.extend(args.writable.iter().cloned());
    paths
}

#[cfg(target_os = "linux")]
mod platform {
    use super::*;
    use crate::shell::sandbox::linux;

    pub(super) fn enter(
        allow_network: bool,
        join_network: Option<i32>,
    ) -> Result<OuterResult, LaunchError> {
        match join_network {
            Some(pid) => linux::join_namespaces(pid).map_err(LaunchError::Setup),
            None => linux::enter_namespaces(allow_network).map_err(LaunchError::Setup),
        }
    }

    /// Runs this binary again as the inner stage: the same arguments, with the outer
    /// stage's result before the `--`.
    pub(super) fn run_inner(outer: &str) -> Result<u8, LaunchError> {
        let mut argv: Vec<OsString> = std::env::args_os().skip(1).collect();
        let split = argv
            .iter()
            .position(|arg| arg == "--")
            .unwrap_or(argv.len());
        argv.splice(split..split, [OsString::from("--inner"), outer.into()]);
        linux::run_stage(Path::new("/proc/self/exe"), &argv).map_err(|source| LaunchError::Exec {
            program: "the inner launcher".into(),
            source,
        })
    }

    pub(super) fn confine(args: &LauncherArgs, outer: OuterResult) -> Confinement {
        linux::confine_inside(&linux::Inside {
            workspace: &args.workspace,
            workspace_read_only: args.workspace_read_only,
            private_tmp: &args.tmp,
            writable: &args.writable,
            read_only: &args.read_only,
            hidden: &args.hide,
            network: args.allow_network,
            writable_inside: writable_paths(args),
            outer,
        })
    }

    pub(super) fn run_as_init(command: &[OsString]) -> Result<u8, LaunchError> {
        let Some((program, args)) = command.split_first() else {
            return Err(LaunchError::Setup("no program to run".into()));
        };
        linux::run_as_init(program, args).map_err(|source| LaunchError::Exec {
            program: program.to_string_lossy().into_owned(),
            source,
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use super::*;

    const WHY: &str = "the sandbox needs Linux (namespaces, Landlock, seccomp)";

    pub(super) fn enter(
        _allow_network: bool,
        _join_network: Option<i32>,
    ) -> Result<OuterResult, LaunchError> {
        Ok(OuterResult {
            namespaces: Err(WHY.into()),
            network: NetworkIsolation::Open { why: WHY.into() },
        })
    }

    pub(super) fn run_inner(_outer: &str) -> Result<u8, LaunchError> {
        Err(LaunchError::Setup(WHY.into()))
    }

    pub(super) fn confine(args: &LauncherArgs, _outer: OuterResult) -> Confinement {
        let _ = writable_paths(args);
        Confinement::none(WHY)
    }

    pub(super) fn run_as_init(command: &[OsString]) -> Result<u8, LaunchError> {
        let Some((program, args)) = command.split_first() else {
            return Err(LaunchError::Setup("no program to run".into()));
        };
        let status = std::process::Command::new(program)
            .args(args)
            .status()
            .map_err(|source| LaunchError::Exec {
                program: program.to_string_lossy().into_owned(),
                source,
            })?;
        Ok(status
            .code()
            .and_then(|code| u8::try_from(code).ok())
            .unwrap_or(1))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use pretty_assertions::assert_eq;

    use super::*;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        command: Sub,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Sub {
        #[command(name = "__sandbox")]
        Sandbox(LauncherArgs),
    }

    fn parse(args: Vec<OsString>) -> Result<LauncherArgs, clap::Error> {
        let argv = std::iter::once(OsString::from("duet")).chain(args);
        Cli::try_parse_from(argv).map(|cli| match cli.command {
            Sub::Sandbox(args) => args,
        })
    }

    #[test]
    fn the_options_built_for_settings_parse_back() {
        let writable = [PathBuf::from("/home/u/.cache")];
        let hidden = [PathBuf::from("/home/u/.ssh")];
        let mut argv = vec![OsString::from(SUBCOMMAND)];
        argv.extend(options(&Settings {
            workspace: Path::new("/w"),
            private_tmp: Path::new("/t"),
            writable: &writable,
            hidden: &hidden,
            network: true,
            accept_missing: &[LayerName::Syscalls],
        }));
        argv.extend(
            [
                "--require",
                "writes",
                "--min-landlock-abi",
                "4",
                "--workspace-read-only",
                "--read-only",
                "/w/.git",
            ]
            .map(OsString::from),
        );
        argv.extend(["--report-dir", "/t/r", "--", "bash", "-i"].map(OsString::from));
        assert_eq!(
            parse(argv).unwrap(),
            LauncherArgs {
                workspace: "/w".into(),
                tmp: "/t".into(),
                writable: vec!["/home/u/.cache".into()],
                read_only: vec!["/w/.git".into()],
                hide: vec!["/home/u/.ssh".into()],
                allow_network: true,
                join_network: None,
                workspace_read_only: true,
                accept_missing: vec![LayerName::Syscalls],
                require: vec![LayerName::Writes],
                min_landlock_abi: Some(4),
                report_dir: "/t/r".into(),
                probe: false,
                inner: None,
                command: vec!["bash".into(), "-i".into()],
            }
        );
    }

    #[test]
    fn a_program_or_probe_is_required_but_not_both() {
        let base = [
            "__sandbox",
            "--workspace",
            "/w",
            "--tmp",
            "/t",
            "--report-dir",
            "/r",
        ];
        let with = |extra: &[&str]| {
            base.iter()
                .chain(extra)
                .map(OsString::from)
                .collect::<Vec<_>>()
        };
        assert!(parse(with(&[])).is_err());
        assert!(parse(with(&["--probe", "--", "bash"])).is_err());
        assert!(parse(with(&["--probe"])).unwrap().probe);
    }

    fn args_with(accept: &[LayerName], require: &[LayerName]) -> LauncherArgs {
        let mut args = parse(
            [
                "__sandbox",
                "--workspace",
                "/w",
                "--tmp",
                "/t",
                "--report-dir",
                "/r",
                "--probe",
            ]
            .map(OsString::from)
            .to_vec(),
        )
        .unwrap();
        args.accept_missing = accept.to_vec();
        args.require = require.to_vec();
        args
    }

    fn without_seccomp() -> Confinement {
        let mut confinement = Confinement::none("x");
        confinement.namespaces = super::super::Layer::applied("ns");
        confinement.network = NetworkIsolation::Isolated { loopback_up: true };
        confinement.writes = super::super::WriteLimits::Landlock { abi: 3 };
        confinement.capabilities = super::super::Layer::applied("none");
        confinement.protected = super::super::Layer::applied("1");
        confinement.credentials = super::super::Layer::applied("0");
        confinement.syscalls = super::super::Layer::missing("no seccomp here");
        confinement
    }

    #[test]
    fn a_missing_layer_refuses_unless_accepted_and_not_required() {
        let confinement = without_seccomp();
        let refused = refusals(&args_with(&[], &[]), &confinement);
        assert_eq!(refused, ["syscalls: no seccomp here"]);
        assert!(refusals(&args_with(&[LayerName::Syscalls], &[]), &confinement).is_empty());
        let required = refusals(
            &args_with(&[LayerName::Syscalls], &[LayerName::Syscalls]),
            &confinement,
        );
        assert_eq!(required, ["syscalls: no seccomp here"]);
    }

    #[test]
    fn a_lower_landlock_abi_than_required_refuses() {
        let mut args = args_with(&[], &[]);
        args.min_landlock_abi = Some(5);
        let mut confinement = without_seccomp();
        confinement.syscalls = super::super::Layer::applied("filter");
        assert_eq!(
            refusals(&args, &confinement),
            ["writes: Landlock ABI 3, below 5"]
        );
    }
}

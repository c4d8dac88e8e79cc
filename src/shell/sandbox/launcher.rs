//! The launcher side of the sandbox: `duet __sandbox [options] -- PROGRAM ARGS...`
//! confines its own process, reports what it achieved, then `exec`s the program, which
//! inherits the confinement.
//!
//! Owns: the launcher's command line and the order of the steps (report file opened,
//! network isolated, writes limited, report written, exec). Does not own: the
//! confinement mechanisms (the platform module) or deciding whether a report is good
//! enough (the sandbox's `Plan`, which started the launcher).
//! Invariant: the report says exactly what was applied, and is complete before the
//! program starts; a failure half way leaves the launcher exiting, never the program
//! running with less than the report says.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Seek as _, Write as _};
use std::path::{Path, PathBuf};

use super::{Confinement, REPORT_FILE, Report};

/// The hidden subcommand of the `duet` binary that runs the launcher.
pub const SUBCOMMAND: &str = "__sandbox";

/// Arguments of `duet __sandbox`, built by the sandbox's `Plan`; not meant for people.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct LauncherArgs {
    /// The workspace, writable.
    #[arg(long, value_name = "DIR")]
    workspace: PathBuf,
    /// The temporary directory, writable.
    #[arg(long, value_name = "DIR")]
    tmp: PathBuf,
    /// More writable paths.
    #[arg(long, value_name = "PATH")]
    writable: Vec<PathBuf>,
    /// Keep the host's network.
    #[arg(long)]
    allow_network: bool,
    /// Where to write the report of what was applied.
    #[arg(long, value_name = "DIR")]
    report_dir: PathBuf,
    /// Apply, report and exit instead of running a program.
    #[arg(long, conflicts_with = "command")]
    probe: bool,
    /// The program to run confined, and its arguments.
    #[arg(last = true, required_unless_present = "probe")]
    command: Vec<OsString>,
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
    #[error("cannot run {program}: {source}")]
    Exec {
        program: String,
        source: std::io::Error,
    },
}

/// The launcher options for the settings (everything but the report and program).
pub(crate) fn options(
    workspace: &Path,
    temp_dir: &Path,
    writable: &[PathBuf],
    network: bool,
) -> Vec<OsString> {
    let mut options: Vec<OsString> = vec![
        "--workspace".into(),
        workspace.into(),
        "--tmp".into(),
        temp_dir.into(),
    ];
    for path in writable {
        options.push("--writable".into());
        options.push(path.into());
    }
    if network {
        options.push("--allow-network".into());
    }
    options
}

/// Confines this process, reports, and runs the program in its place. Returns `Ok`
/// only for `--probe`; otherwise it returns only on failure, which it reports too.
pub fn run(args: &LauncherArgs) -> Result<(), LaunchError> {
    // Opened before the confinement, which may forbid creating it.
    let mut report = ReportFile::create(&args.report_dir)?;
    let outcome = confine(args).and_then(|confinement| {
        report.write(&Report::Applied(confinement))?;
        if args.probe {
            return Ok(());
        }
        // On success the report is closed by the exec (it is close-on-exec).
        Err(exec(&args.command))
    });
    if let Err(error) = &outcome {
        // Best effort: the error goes to stderr as well.
        let _ = report.write(&Report::Failed(error.to_string()));
    }
    outcome
}

/// The open report, rewritten in place when a later step fails.
struct ReportFile {
    file: File,
    dir: PathBuf,
}

impl ReportFile {
    fn create(dir: &Path) -> Result<Self, LaunchError> {
        let file = File::create(dir.join(REPORT_FILE)).map_err(|source| LaunchError::Report {
            dir: dir.to_path_buf(),
            source,
        })?;
        Ok(Self {
            file,
            dir: dir.to_path_buf(),
        })
    }

    fn write(&mut self, report: &Report) -> Result<(), LaunchError> {
        let text = serde_json::to_string(report)
            .map_err(|error| LaunchError::Setup(format!("cannot encode the report: {error}")))?;
        self.file
            .set_len(0)
            .and_then(|()| self.file.rewind())
            .and_then(|()| self.file.write_all(text.as_bytes()))
            .and_then(|()| self.file.sync_data())
            .map_err(|source| LaunchError::Report {
                dir: self.dir.clone(),
                source,
            })
    }
}

/// Every path the program may write to.
fn writable_paths(args: &LauncherArgs) -> Vec<PathBuf> {
    let mut paths = vec![args.workspace.clone(), args.tmp.clone()];
    paths.extend(args.writable.iter().cloned());
    paths
}

#[cfg(target_os = "linux")]
fn confine(args: &LauncherArgs) -> Result<Confinement, LaunchError> {
    let network = if args.allow_network {
        super::NetworkIsolation::Open {
            why: "allowed by the configuration ([sandbox] network = true)".into(),
        }
    } else {
        super::linux::isolate_network().map_err(LaunchError::Setup)?
    };
    let writes = super::linux::limit_writes(&writable_paths(args));
    Ok(Confinement { network, writes })
}

#[cfg(not(target_os = "linux"))]
fn confine(args: &LauncherArgs) -> Result<Confinement, LaunchError> {
    let _ = writable_paths(args);
    Ok(Confinement::none(
        "the sandbox needs Linux (network namespaces and Landlock)",
    ))
}

#[cfg(unix)]
fn exec(command: &[OsString]) -> LaunchError {
    use std::os::unix::process::CommandExt as _;
    let Some((program, args)) = command.split_first() else {
        return LaunchError::Setup("no program to run".into());
    };
    // `exec` also restores the default SIGPIPE that Rust's runtime ignores, so
    // pipelines like `yes | head` end as they do in any shell.
    let source = std::process::Command::new(program).args(args).exec();
    LaunchError::Exec {
        program: program.to_string_lossy().into_owned(),
        source,
    }
}

#[cfg(not(unix))]
fn exec(_command: &[OsString]) -> LaunchError {
    LaunchError::Setup("the shell needs a Unix system".into())
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
        let mut argv = vec![OsString::from(SUBCOMMAND)];
        argv.extend(options(Path::new("/w"), Path::new("/t"), &writable, true));
        argv.extend(["--report-dir", "/t/r", "--", "bash", "-i"].map(OsString::from));
        assert_eq!(
            parse(argv).unwrap(),
            LauncherArgs {
                workspace: "/w".into(),
                tmp: "/t".into(),
                writable: vec!["/home/u/.cache".into()],
                allow_network: true,
                report_dir: "/t/r".into(),
                probe: false,
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
}

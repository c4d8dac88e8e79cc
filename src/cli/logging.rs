//! Logging: duet's log file, and every panic in it.
//!
//! Owns: where the log goes (a file under the state directory, never the terminal,
//! which the front ends own), its level (`DUET_LOG`), and the panic hook that logs
//! panics. Does not own: what is logged (each module traces its own events), nor the
//! terminal UI's own panic hook, installed over this one.
//! Invariant: logging never stops duet: without a writable log file duet runs without
//! logs, and a panic still reaches the hook that was there before.

use duet::config::Paths;

/// Logs go to a file under the state directory, never to the terminal. Level from
/// `DUET_LOG` (e.g. `debug`, `duet=trace`), default `info`. Without a writable log file,
/// duet runs without logs rather than not at all.
pub fn init(paths: &Paths) -> Option<()> {
    let path = paths.log_file();
    std::fs::create_dir_all(path.parent()?).ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .ok()?;
    let filter = tracing_subscriber::EnvFilter::try_from_env("DUET_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .try_init()
        .ok()?;
    log_panics();
    Some(())
}

/// Every panic goes to the log as well (its message, where it happened and a
/// backtrace), then to the hook before this one, which prints it. A tool that crashes
/// is reported to the model as "a bug in duet, logged": this makes that true in every
/// front end. (The terminal UI installs its own hook over this one, which logs other
/// threads' panics itself.)
fn log_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        log_panic(info);
        previous(info);
    }));
}

fn log_panic(info: &std::panic::PanicHookInfo<'_>) {
    let location = info
        .location()
        .map_or_else(|| "an unknown place".to_string(), ToString::to_string);
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic without a message)");
    let thread = std::thread::current();
    tracing::error!(
        target: "duet::panic",
        thread = thread.name().unwrap_or("unnamed"),
        %location,
        "panicked at {location}: {message}\n{}",
        std::backtrace::Backtrace::force_capture()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a subscriber wrote, shared with the test.
    #[derive(Clone, Default)]
    struct CapturedLog(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for CapturedLog {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_panic_is_logged_with_its_message_and_place() {
        let log = CapturedLog::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer({
                let log = log.clone();
                move || log.clone()
            })
            .with_ansi(false)
            .finish();
        log_panics();
        let line = line!() + 2;
        tracing::subscriber::with_default(subscriber, || {
            let _ = std::panic::catch_unwind(|| panic!("deliberate test panic {}", 42));
        });
        let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
        for needle in [
            "ERROR".to_string(),
            "duet::panic".to_string(),
            "deliberate test panic 42".to_string(),
            format!("{}:{line}", file!()),
        ] {
            assert!(text.contains(&needle), "{needle:?} not in the log:\n{text}");
        }
    }
}

//! Progress of long headless work on stderr: drawn only when stderr is a terminal, so a
//! pipe, a log file or `--json` on stdout never sees a byte of it.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Messages processed out of the outbox a run drains.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar when stderr is a terminal; otherwise nothing is ever drawn.
    pub fn messages(total: u64) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} messages processed · {per_sec} · {eta} left",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress { bar: Some(bar) }
    }

    pub fn set(&self, processed: u64) {
        if let Some(b) = &self.bar {
            b.set_position(processed);
        }
    }
}

impl Drop for Progress {
    /// The last state stays on screen: how far the run got.
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.abandon();
        }
    }
}

/// The named steps of a bench: a spinner with the step and its elapsed time on a
/// terminal, the step's name on a line of its own otherwise.
pub struct Steps {
    spinner: Option<ProgressBar>,
    /// A step's line could not be written to stderr (a full disk, not a closed pipe).
    failed: std::sync::atomic::AtomicBool,
}

impl Steps {
    pub fn new() -> Steps {
        let spinner = std::io::stderr().is_terminal().then(|| {
            let s = ProgressBar::new_spinner();
            s.set_style(
                ProgressStyle::with_template("{spinner} bench: {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            s.enable_steady_tick(Duration::from_millis(200));
            s
        });
        Steps {
            spinner,
            failed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn step(&self, name: &str) {
        match &self.spinner {
            Some(s) => {
                s.println(format!("bench: {name}..."));
                s.set_message(name.to_string());
            }
            None => {
                use std::io::Write;
                let mut err = std::io::stderr().lock();
                let written = writeln!(err, "bench: {name}...").and_then(|()| err.flush());
                if written.is_err_and(|e| e.kind() != std::io::ErrorKind::BrokenPipe) {
                    self.failed
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    }

    /// Whether a step's line could not be written (for any reason but a closed pipe).
    pub fn write_failed(&self) -> bool {
        self.failed.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Default for Steps {
    fn default() -> Self {
        Steps::new()
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        if let Some(s) = &self.spinner {
            s.finish_and_clear();
        }
    }
}

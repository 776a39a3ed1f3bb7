//! Everything the command prints goes through here, so a write that fails never panics:
//! a reader that went away (`| head`) ends the output quietly, any other failure (a full
//! disk, `/dev/full`) ends the program with exit 3.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

/// Exit code of bad input (one line on stderr).
pub const USAGE: u8 = 2;
/// Exit code of a run that started and then failed (a database error, a stall, output
/// that could not be written).
pub const RUNTIME_FAILURE: u8 = 3;

/// Write `text` to stderr. False when it could not be written for any reason but a
/// closed pipe.
pub fn to_stderr(text: &str) -> bool {
    let mut err = std::io::stderr().lock();
    match err.write_all(text.as_bytes()).and_then(|()| err.flush()) {
        Ok(()) => true,
        Err(e) => e.kind() == ErrorKind::BrokenPipe,
    }
}

/// One line on stderr as it is, and `code`; exit 3 instead if stderr cannot take it.
pub fn line_and_exit(line: &str, code: u8) -> ExitCode {
    if to_stderr(&format!("{line}\n")) {
        ExitCode::from(code)
    } else {
        ExitCode::from(RUNTIME_FAILURE)
    }
}

/// `leaselab: MSG` on stderr, and the usage exit code.
pub fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    line_and_exit(&format!("leaselab: {msg}"), USAGE)
}

/// `leaselab: MSG` on stderr, and the runtime-failure exit code.
pub fn runtime_error(msg: impl std::fmt::Display) -> ExitCode {
    line_and_exit(&format!("leaselab: {msg}"), RUNTIME_FAILURE)
}

/// `leaselab: MSG` on stderr for something the run goes on after (a report not saved).
/// False when stderr could not take it.
pub fn warn(msg: impl std::fmt::Display) -> bool {
    to_stderr(&format!("leaselab: {msg}\n"))
}

/// Standard output for results. A reader that went away (`| head`) ends the output
/// quietly; any other write error is kept and reported once, in one line.
pub struct Out {
    stdout: std::io::Stdout,
    closed: bool,
    failed: Option<std::io::Error>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            stdout: std::io::stdout(),
            closed: false,
            failed: None,
        }
    }

    pub fn print(&mut self, text: &str) {
        if !self.open() {
            return;
        }
        let mut lock = self.stdout.lock();
        if let Err(e) = lock.write_all(text.as_bytes()).and_then(|()| lock.flush()) {
            if e.kind() == ErrorKind::BrokenPipe {
                self.closed = true;
            } else {
                self.failed = Some(e);
            }
        }
    }

    pub fn line(&mut self, text: &str) {
        self.print(&format!("{text}\n"));
    }

    /// Whether what is printed still goes somewhere.
    pub fn open(&self) -> bool {
        !self.closed && self.failed.is_none()
    }

    /// `code`, unless the output could not be written: then one line and exit 3.
    pub fn finish(self, code: ExitCode) -> ExitCode {
        match self.failed {
            Some(e) => runtime_error(format!("cannot write to standard output: {e}")),
            None => code,
        }
    }
}

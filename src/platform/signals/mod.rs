//! A stop asked from outside, and job control, as each system delivers them:
//!
//! - Unix (Linux and macOS alike): SIGTERM, SIGHUP (a closed terminal) and SIGINT stop
//!   leaselab; SIGTSTP (Ctrl-Z, `kill -TSTP`) suspends it to the shell and SIGCONT (`fg`)
//!   continues it. Signals are read on a thread of their own (`signal-hook`), never in a
//!   handler.
//! - Windows: the console's control events. Ctrl-C and Ctrl-Break stop leaselab (while the
//!   dashboard holds the keyboard, Ctrl-C is a key it reads), and so does a closed console
//!   window, which leaves a few seconds before Windows ends the process. Windows has no job
//!   control: nothing can suspend a program to a shell, and Ctrl-Z says so.
//!
//! A stop is given as a number in the shell's convention (2 for Ctrl-C or SIGINT, 15 for
//! SIGTERM), so the exit code is 128 plus it on every system.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as system;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as system;

/// Job control's two events, for the dashboard, which gives the terminal back while it is
/// suspended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// A suspend asked from outside (SIGTSTP).
    Suspend,
    /// Continued (SIGCONT), after a suspend or a SIGSTOP nobody could catch.
    Continue,
}

/// The number a stop from outside has when nothing more is known (SIGTERM's).
pub const TERMINATE: i32 = 15;

/// Whether this system can suspend a program to its shell (Ctrl-Z).
pub const CAN_SUSPEND: bool = system::CAN_SUSPEND;

/// Why Ctrl-Z does nothing here, on a system without job control.
pub const NO_SUSPEND: &str = system::NO_SUSPEND;

/// What Ctrl-Z does, for the help and the manual page.
pub const SUSPEND_HELP: &str = system::SUSPEND_HELP;

/// Call `each` with every stop from outside from now on, on a thread that is not a signal
/// handler, until it returns false.
pub fn on_stopping(each: impl FnMut(i32) -> bool + Send + 'static) -> std::io::Result<()> {
    system::on_stopping(each)
}

/// Job control's events from now on (none where the system has no job control). Once
/// watched, a suspend from outside no longer stops the process by itself: the watcher
/// does, with [`suspend_this_process`].
pub fn job_control() -> std::io::Result<crossbeam_channel::Receiver<Job>> {
    system::job_control()
}

/// Suspend this process to its shell until it is continued, where the system can.
pub fn suspend_this_process() {
    system::suspend_this_process();
}

/// The name of stop `signo` as this system says it (`SIGTERM`, `Ctrl-Break`).
pub fn name(signo: i32) -> Option<&'static str> {
    system::name(signo)
}

//! The worker processes a dashboard starts (`--processes`) and the programs a bench runs,
//! as each system lets a parent hold its children:
//!
//! - away from the terminal: on Unix a child leads a process group of its own, so the
//!   terminal's Ctrl-C and SIGHUP are the dashboard's to handle; on Windows it gets no
//!   console at all, so no console event reaches it.
//! - dead with the dashboard: on every system the child watches a pipe from its parent and
//!   stops when it closes (`processes::lifeline`), giving its lease back. A frozen child
//!   cannot read it. On Unix its process group is then orphaned, and the kernel sends it
//!   SIGHUP and SIGCONT (POSIX); on Linux the kernel also sends it SIGCONT when its parent
//!   dies (`PR_SET_PDEATHSIG`), which holds where a process of the same session adopts it
//!   (a container's init), so that no group is orphaned. On Windows a frozen child is put
//!   in a job object of its own that the system ends with the dashboard, and let go when it
//!   is woken.
//! - frozen and woken: SIGSTOP and SIGCONT on Unix; on Windows every thread of the process
//!   suspended (`SuspendThread`) and resumed.
//! - killed with what they started: SIGKILL to the child's process group on Unix; on
//!   Windows `TerminateProcess` of the child alone.
//!
//! The words a screen uses for these (`SIGSTOP sent to Worker-A`) are the macros below, so a
//! help text built at compile time says what this system does.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as system;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as system;

use std::process::{Child, Command, ExitStatus};

#[cfg(unix)]
pub use unix::{kill_word, stop_word, wake_word};
#[cfg(windows)]
pub use windows::{kill_word, stop_word, wake_word};

/// Set `cmd` up as a worker process of a dashboard: away from the terminal.
pub fn detach(cmd: &mut Command) {
    system::detach(cmd);
}

/// Freeze (true) or wake (false) a live child: frozen, it holds what it holds and does
/// nothing.
pub fn set_frozen(child: &Child, frozen: bool) -> std::io::Result<()> {
    system::set_frozen(child, frozen)
}

/// Set `cmd` up so that [`kill_group`] reaches whatever the program starts too.
pub fn own_group(cmd: &mut Command) {
    system::own_group(cmd);
}

/// Kill `child` and, where the system can, what it started.
pub fn kill_group(child: &mut Child) {
    system::kill_group(child);
}

/// How a child ended: `exited with status 3`, `killed by signal 9`.
pub fn ended_how(status: ExitStatus) -> String {
    system::ended_how(status)
}

//! Unix (Linux and macOS alike): process groups and signals.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};

/// The words a screen uses for a kill, a freeze and a wake.
#[macro_export]
#[doc(hidden)]
macro_rules! __kill_word {
    () => {
        "SIGKILL"
    };
}
#[macro_export]
#[doc(hidden)]
macro_rules! __stop_word {
    () => {
        "SIGSTOP"
    };
}
#[macro_export]
#[doc(hidden)]
macro_rules! __wake_word {
    () => {
        "SIGCONT"
    };
}
pub use crate::{__kill_word as kill_word, __stop_word as stop_word, __wake_word as wake_word};

pub(super) fn detach(cmd: &mut Command) {
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe, as pre_exec requires, and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            // Woken when the dashboard dies, so that a frozen child reads its lifeline's end.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGCONT, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn signal(child: &Child, signo: libc::c_int) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
    // SAFETY: a plain kill(2) on our own child's pid, which has not been reaped.
    if unsafe { libc::kill(pid, signo) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn set_frozen(child: &Child, frozen: bool) -> std::io::Result<()> {
    signal(child, if frozen { libc::SIGSTOP } else { libc::SIGCONT })
}

pub(super) fn own_group(cmd: &mut Command) {
    cmd.process_group(0);
}

pub(super) fn kill_group(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: a plain kill(2) of the group this child leads; no memory is shared.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
}

pub(super) fn ended_how(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signo)) => format!("killed by signal {signo}"),
        (None, None) => "ended".to_string(),
    }
}

//! Unix: signals, read by `signal-hook` on threads of their own.

use signal_hook::consts::{SIGCONT, SIGHUP, SIGINT, SIGTERM, SIGTSTP};
use signal_hook::iterator::Signals;

use super::Job;

pub(super) const CAN_SUSPEND: bool = true;
pub(super) const NO_SUSPEND: &str = "";
pub(super) const SUSPEND_HELP: &str = "suspend to the shell, the clock held (fg comes back)";

pub(super) fn on_stopping(
    mut each: impl FnMut(i32) -> bool + Send + 'static,
) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGHUP, SIGINT])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signo in signals.forever() {
                if !each(signo) {
                    break;
                }
            }
        })?;
    Ok(())
}

pub(super) fn job_control() -> std::io::Result<crossbeam_channel::Receiver<Job>> {
    let mut signals = Signals::new([SIGTSTP, SIGCONT])?;
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::Builder::new()
        .name("job-control".into())
        .spawn(move || {
            for signo in signals.forever() {
                let job = if signo == SIGTSTP {
                    Job::Suspend
                } else {
                    Job::Continue
                };
                if tx.send(job).is_err() {
                    break;
                }
            }
        })?;
    Ok(rx)
}

/// SIGSTOP, as SIGTSTP's default would stop it, because the kernel drops a SIGTSTP to a
/// process group no shell controls.
pub(super) fn suspend_this_process() {
    // SAFETY: raise(3) with a valid signal number; SIGSTOP cannot be caught.
    unsafe { libc::raise(libc::SIGSTOP) };
}

pub(super) fn name(signo: i32) -> Option<&'static str> {
    match signo {
        SIGTERM => Some("SIGTERM"),
        SIGHUP => Some("SIGHUP"),
        SIGINT => Some("SIGINT"),
        _ => None,
    }
}

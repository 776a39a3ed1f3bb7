//! SIGTERM, SIGHUP and SIGINT as a channel: the dashboard's loop and a headless run watch it,
//! so a signal ends them the same way a quit does (terminal restored, workers stopped,
//! temporary database removed) instead of killing the process where it stands. SIGTSTP and
//! SIGCONT as another, for the dashboard, which hands the terminal back while stopped.

use std::sync::atomic::{AtomicI32, Ordering};

use crossbeam_channel::Receiver;
use signal_hook::consts::{SIGCONT, SIGHUP, SIGINT, SIGTERM, SIGTSTP};
use signal_hook::iterator::Signals;

/// Signals could not be watched (their handler, or the thread that reads them).
#[derive(Debug, thiserror::Error)]
#[error("cannot watch for signals: {0}")]
pub struct WatchError(#[source] std::io::Error);

/// The signals that stop leaselab cleanly.
pub const STOPPING: [i32; 3] = [SIGTERM, SIGHUP, SIGINT];

/// The first stopping signal received, 0 before any.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The first stopping signal this process received, if any: a run or a dashboard that
/// failed while one was arriving (a wait for a locked database gives up at once) reports
/// the signal, not the failure it caused.
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::Relaxed)).filter(|s| *s != 0)
}

/// Catch the stopping signals from now on; each one arrives on the channel by number, and
/// every wait for a locked database in this process gives up at once.
pub fn watch() -> Result<Receiver<i32>, WatchError> {
    let mut signals = Signals::new(STOPPING).map_err(WatchError)?;
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signo in signals.forever() {
                let _ = RECEIVED.compare_exchange(0, signo, Ordering::Relaxed, Ordering::Relaxed);
                crate::engine::stop_waiting();
                if tx.send(signo).is_err() {
                    break;
                }
            }
        })
        .map_err(WatchError)?;
    Ok(rx)
}

/// SIGTSTP (a stop asked from outside: `kill -TSTP`) and SIGCONT as a channel, for the
/// dashboard, which must give the terminal back before it stops and take it again when it
/// is continued. Once watched, SIGTSTP no longer stops the process by itself: the watcher
/// stops it with [`stop_this_process`].
pub fn watch_job_control() -> Result<Receiver<i32>, WatchError> {
    let mut signals = Signals::new([SIGTSTP, SIGCONT]).map_err(WatchError)?;
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::Builder::new()
        .name("job-control".into())
        .spawn(move || {
            for signo in signals.forever() {
                if tx.send(signo).is_err() {
                    break;
                }
            }
        })
        .map_err(WatchError)?;
    Ok(rx)
}

/// Stop this process, as SIGTSTP's default would, until a SIGCONT (`fg`) continues it.
/// SIGSTOP, because the kernel drops a SIGTSTP to a process group no shell controls.
pub fn stop_this_process() {
    // SAFETY: raise(3) with a valid signal number; SIGSTOP cannot be caught.
    unsafe { libc::raise(libc::SIGSTOP) };
}

/// `SIGTERM` for 15.
pub fn name(signo: i32) -> String {
    match signo {
        SIGTERM => "SIGTERM".into(),
        SIGHUP => "SIGHUP".into(),
        SIGINT => "SIGINT".into(),
        n => format!("signal {n}"),
    }
}

/// The shell's convention for a process ended by a signal: 128 + its number (130 for SIGINT).
pub fn exit_code(signo: i32) -> u8 {
    u8::try_from(128 + signo).unwrap_or(128)
}

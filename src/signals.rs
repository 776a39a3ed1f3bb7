//! SIGTERM, SIGHUP and SIGINT as a channel: the dashboard's loop and a headless run watch it,
//! so a signal ends them the same way a quit does (terminal restored, workers stopped,
//! temporary database removed) instead of killing the process where it stands.

use std::sync::atomic::{AtomicI32, Ordering};

use crossbeam_channel::Receiver;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

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
pub fn watch() -> Result<Receiver<i32>, String> {
    let mut signals =
        Signals::new(STOPPING).map_err(|e| format!("cannot watch for signals: {e}"))?;
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
        .map_err(|e| format!("cannot watch for signals: {e}"))?;
    Ok(rx)
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

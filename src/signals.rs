//! A stop asked from outside (SIGTERM, SIGHUP, SIGINT; on Windows Ctrl-C, Ctrl-Break and a
//! closed console) as a channel: the dashboard's loop and a headless run watch it, so a stop
//! ends them the same way a quit does (terminal restored, workers stopped, temporary
//! database removed) instead of killing the process where it stands. Job control (SIGTSTP
//! and SIGCONT, where the system has them) as another, for the dashboard, which hands the
//! terminal back while suspended. How each system delivers them is `platform::signals`.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use crossbeam_channel::{Receiver, Sender};

use crate::platform::signals as system;
pub use system::{Job, CAN_SUSPEND, NO_SUSPEND, SUSPEND_HELP, TERMINATE};

/// Signals could not be watched (their handler, or the thread that reads them).
#[derive(Debug, thiserror::Error)]
#[error("cannot watch for signals: {0}")]
pub struct WatchError(#[source] std::io::Error);

/// The first stopping signal received, 0 before any.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Every channel [`watch`] handed out, for a stop from within.
static WATCHERS: Mutex<Vec<Sender<i32>>> = Mutex::new(Vec::new());

/// A stop from within, not a signal: the dashboard that started this worker process is gone
/// (the pipe it kept open closed, `processes::lifeline`). It ends the worker as a hang-up
/// does.
pub const DASHBOARD_GONE: i32 = -1;

/// The first stopping signal this process received, if any: a run or a dashboard that
/// failed while one was arriving (a wait for a locked database gives up at once) reports
/// the signal, not the failure it caused.
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::Relaxed)).filter(|s| *s != 0)
}

/// Catch the stopping signals from now on; each one arrives on the channel by number, and
/// every wait for a locked database in this process gives up at once.
pub fn watch() -> Result<Receiver<i32>, WatchError> {
    let (tx, rx) = crossbeam_channel::unbounded();
    if let Ok(mut watchers) = WATCHERS.lock() {
        watchers.push(tx.clone());
    }
    system::on_stopping(move |signo| {
        received_now(signo);
        tx.send(signo).is_ok()
    })
    .map_err(WatchError)?;
    Ok(rx)
}

fn received_now(signo: i32) {
    let _ = RECEIVED.compare_exchange(0, signo, Ordering::Relaxed, Ordering::Relaxed);
    crate::engine::stop_waiting();
}

/// Stop this process as a stopping signal would ([`DASHBOARD_GONE`]): every watcher hears
/// it, and every wait for a locked database gives up.
pub fn stop_from_within(signo: i32) {
    received_now(signo);
    if let Ok(mut watchers) = WATCHERS.lock() {
        watchers.retain(|tx| tx.send(signo).is_ok());
    }
}

/// Job control's events (a suspend from outside: `kill -TSTP`; a continue) as a channel,
/// for the dashboard, which must give the terminal back before it is suspended and take it
/// again when it is continued. Once watched, a suspend no longer stops the process by
/// itself: the watcher stops it with [`stop_this_process`]. Never an event where the system
/// has no job control.
pub fn watch_job_control() -> Result<Receiver<Job>, WatchError> {
    system::job_control().map_err(WatchError)
}

/// Suspend this process to its shell, as SIGTSTP's default would, until continued (`fg`);
/// nothing where the system cannot ([`CAN_SUSPEND`]).
pub fn stop_this_process() {
    system::suspend_this_process();
}

/// `SIGTERM` for 15 (`Ctrl-Break` on Windows for 21).
pub fn name(signo: i32) -> String {
    if signo == DASHBOARD_GONE {
        return "the end of its dashboard".to_string();
    }
    system::name(signo).map_or_else(|| format!("signal {signo}"), str::to_string)
}

/// The shell's convention for a process ended by a signal: 128 + its number (130 for SIGINT);
/// a worker whose dashboard is gone ends as a hang-up does (129).
pub fn exit_code(signo: i32) -> u8 {
    if signo == DASHBOARD_GONE {
        return 129;
    }
    u8::try_from(128 + signo).unwrap_or(128)
}

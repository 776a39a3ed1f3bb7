//! Windows: the console's control events, delivered by the system on a thread of its own to
//! the handler set with `SetConsoleCtrlHandler`.

use std::sync::Mutex;

use windows_sys::Win32::System::Console::{
    SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT, CTRL_LOGOFF_EVENT,
    CTRL_SHUTDOWN_EVENT,
};

use super::Job;

pub(super) const CAN_SUSPEND: bool = false;
pub(super) const NO_SUSPEND: &str =
    "Ctrl-Z does nothing: Windows has no job control to suspend a program to (q quits)";
pub(super) const SUSPEND_HELP: &str =
    "nothing on Windows, which has no job control to suspend a program to";

/// Ctrl-C and Ctrl-Break as the C runtime numbers them (SIGINT, SIGBREAK); a closed console,
/// a logoff or a shutdown as a hang-up.
const INTERRUPT: i32 = 2;
const BREAK: i32 = 21;
const HANG_UP: i32 = 1;

type Each = Box<dyn FnMut(i32) -> bool + Send>;

/// Whoever watches the stops, each until it returns false.
static WATCHERS: Mutex<Vec<Each>> = Mutex::new(Vec::new());

unsafe extern "system" fn handler(event: u32) -> i32 {
    let signo = match event {
        CTRL_C_EVENT => INTERRUPT,
        CTRL_BREAK_EVENT => BREAK,
        CTRL_CLOSE_EVENT | CTRL_LOGOFF_EVENT | CTRL_SHUTDOWN_EVENT => HANG_UP,
        _ => return 0,
    };
    if let Ok(mut watchers) = WATCHERS.lock() {
        watchers.retain_mut(|each| each(signo));
    }
    if signo == HANG_UP {
        // Windows ends the process once this returns: the stop has the few seconds it
        // allows to restore what it holds and end by itself.
        std::thread::sleep(std::time::Duration::from_secs(10));
    }
    1
}

pub(super) fn on_stopping(each: impl FnMut(i32) -> bool + Send + 'static) -> std::io::Result<()> {
    let mut watchers = WATCHERS
        .lock()
        .map_err(|_| std::io::Error::other("the stop watchers' lock is poisoned"))?;
    if watchers.is_empty() {
        // SAFETY: a handler of the right signature, for the life of the process.
        if unsafe { SetConsoleCtrlHandler(Some(handler), 1) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    watchers.push(Box::new(each));
    Ok(())
}

pub(super) fn job_control() -> std::io::Result<crossbeam_channel::Receiver<Job>> {
    Ok(crossbeam_channel::never())
}

pub(super) fn suspend_this_process() {}

pub(super) fn name(signo: i32) -> Option<&'static str> {
    match signo {
        INTERRUPT => Some("Ctrl-C"),
        BREAK => Some("Ctrl-Break"),
        HANG_UP => Some("its console closed"),
        _ => None,
    }
}

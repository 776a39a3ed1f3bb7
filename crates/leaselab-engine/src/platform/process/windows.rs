//! Windows: `GetProcessTimes` tells when a process was created (an absolute time), and
//! `GetExitCodeProcess` whether it still runs. The installation's `MachineGuid` names the
//! machine. There are no pid namespaces.

use windows_sys::Win32::Foundation::{
    CloseHandle, GetLastError, ERROR_INVALID_PARAMETER, FILETIME, HANDLE, STILL_ACTIVE,
};
use windows_sys::Win32::System::Registry::{RegGetValueW, HKEY_LOCAL_MACHINE, RRF_RT_REG_SZ};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, GetProcessTimes, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
};

use super::Found;

/// A process handle closed when dropped.
struct Process(HANDLE);

impl Drop for Process {
    fn drop(&mut self) {
        // SAFETY: a handle OpenProcess gave and nobody else closes.
        unsafe { CloseHandle(self.0) };
    }
}

/// The process of id `pid`, or why not: Ok(None) when no process has that id.
fn open(pid: u32) -> Result<Option<Process>, ()> {
    // SAFETY: OpenProcess with a plain id; the handle is owned by the returned value.
    let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if !handle.is_null() {
        return Ok(Some(Process(handle)));
    }
    // SAFETY: reads this thread's last error.
    match unsafe { GetLastError() } {
        ERROR_INVALID_PARAMETER => Ok(None),
        _ => Err(()),
    }
}

fn still_active(p: &Process) -> Option<bool> {
    let mut code = 0u32;
    // SAFETY: a live handle, and a place for the code.
    let ok = unsafe { GetExitCodeProcess(p.0, &mut code) };
    (ok != 0).then_some(code == STILL_ACTIVE as u32)
}

fn created(p: &Process) -> Option<u64> {
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut creation, mut exit, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: a live handle, and four places for the times.
    let ok = unsafe { GetProcessTimes(p.0, &mut creation, &mut exit, &mut kernel, &mut user) };
    (ok != 0)
        .then(|| (u64::from(creation.dwHighDateTime) << 32) | u64::from(creation.dwLowDateTime))
}

pub(super) fn look_up(pid: u32) -> Found {
    match open(pid) {
        Ok(None) => Found::Ended,
        Err(()) => Found::Unreadable,
        Ok(Some(p)) => match (still_active(&p), created(&p)) {
            (Some(false), _) => Found::Ended,
            (Some(true), Some(started)) => Found::Running { started },
            _ => Found::Unreadable,
        },
    }
}

pub(super) fn gone(pid: u32) -> bool {
    match open(pid) {
        Ok(None) => true,
        Ok(Some(p)) => still_active(&p) == Some(false),
        Err(()) => false,
    }
}

/// `HKLM\SOFTWARE\Microsoft\Cryptography\MachineGuid`, made when Windows is installed.
pub(super) fn boot() -> Option<String> {
    let wide = |s: &str| s.encode_utf16().chain([0]).collect::<Vec<u16>>();
    let (key, value) = (
        wide("SOFTWARE\\Microsoft\\Cryptography"),
        wide("MachineGuid"),
    );
    let mut buf = [0u16; 80];
    let mut bytes = (buf.len() * 2) as u32;
    // SAFETY: NUL-terminated names, and a buffer of `bytes` bytes that the call fills.
    let rc = unsafe {
        RegGetValueW(
            HKEY_LOCAL_MACHINE,
            key.as_ptr(),
            value.as_ptr(),
            RRF_RT_REG_SZ,
            std::ptr::null_mut(),
            buf.as_mut_ptr().cast(),
            &mut bytes,
        )
    };
    if rc != 0 {
        return None;
    }
    let units = (bytes as usize / 2).min(buf.len());
    let text = String::from_utf16(&buf[..units]).ok()?;
    let id = text.trim_end_matches('\0').trim().to_ascii_lowercase();
    super::is_boot_id(&id).then_some(id)
}

pub(super) fn pid_ns() -> Option<u64> {
    Some(0)
}

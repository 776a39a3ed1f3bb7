//! Windows: a process started without a standard output has no handle for it.

use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
use windows_sys::Win32::System::Console::{GetStdHandle, STD_OUTPUT_HANDLE};

pub(super) fn closed_at_start() -> bool {
    // SAFETY: reads this process's standard output handle; changes nothing.
    let handle = unsafe { GetStdHandle(STD_OUTPUT_HANDLE) };
    handle.is_null() || handle == INVALID_HANDLE_VALUE
}

pub(super) fn reader_gone(e: &std::io::Error) -> bool {
    use windows_sys::Win32::Foundation::{ERROR_NO_DATA, ERROR_PIPE_NOT_CONNECTED};
    matches!(e.raw_os_error(), Some(c) if c == ERROR_PIPE_NOT_CONNECTED as i32 || c == ERROR_NO_DATA as i32)
}

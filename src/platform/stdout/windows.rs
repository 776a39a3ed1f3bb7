//! Windows: a process started without a standard output has no handle for it.

use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
use windows_sys::Win32::System::Console::{GetStdHandle, STD_OUTPUT_HANDLE};

pub(super) fn closed_at_start() -> bool {
    // SAFETY: reads this process's standard output handle; changes nothing.
    let handle = unsafe { GetStdHandle(STD_OUTPUT_HANDLE) };
    handle.is_null() || handle == INVALID_HANDLE_VALUE
}

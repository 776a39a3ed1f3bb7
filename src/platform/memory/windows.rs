//! Windows: `GetProcessMemoryInfo` (the working set, now and at its peak).

use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::Threading::GetCurrentProcess;

fn counters() -> Option<PROCESS_MEMORY_COUNTERS> {
    // SAFETY: plain data; zeroed is a valid value for it.
    let mut c: PROCESS_MEMORY_COUNTERS = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
    // SAFETY: this process's pseudo handle, and counters of the size given.
    let ok = unsafe { K32GetProcessMemoryInfo(GetCurrentProcess(), &mut c, size) };
    (ok != 0).then_some(c)
}

pub(super) fn resident_bytes() -> Option<u64> {
    Some(counters()?.WorkingSetSize as u64)
}

pub(super) fn peak_bytes() -> Option<u64> {
    Some(counters()?.PeakWorkingSetSize as u64)
}

//! How much memory this process holds, as each system tells it:
//!
//! - Linux: `/proc/self/status` (`VmRSS` now, `VmHWM` at most);
//! - macOS: `proc_pidinfo`'s task information now, `getrusage`'s maximum at most;
//! - Windows: `GetProcessMemoryInfo`'s working set, now and at its peak.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as system;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as system;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as system;

/// The memory this process holds now (its resident set), in bytes, where the system says.
pub fn resident_bytes() -> Option<u64> {
    system::resident_bytes()
}

/// The most memory this process has held at once, in bytes, where the system says.
pub fn peak_bytes() -> Option<u64> {
    system::peak_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_held_is_counted_now_and_at_its_peak() {
        // Written whole, so every page of it is resident.
        let block = vec![1u8; 64 << 20];
        let during = resident_bytes().expect("every supported system says");
        assert!(
            during >= 64 << 20,
            "64 MiB held, yet {during} bytes resident"
        );
        let peak = peak_bytes().expect("every supported system says");
        drop(std::hint::black_box(block));
        // Other threads of this test process may free memory between the two readings.
        assert!(peak >= 64 << 20, "64 MiB held, yet a peak of {peak} bytes");
    }
}

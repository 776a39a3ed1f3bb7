//! Linux: `/proc/self/status`.

fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub(super) fn resident_bytes() -> Option<u64> {
    Some(status_kib("VmRSS:")? * 1024)
}

pub(super) fn peak_bytes() -> Option<u64> {
    Some(status_kib("VmHWM:")? * 1024)
}
